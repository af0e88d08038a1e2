package history

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// QueueReport is what CheckQueue found in a queue workload's history.
type QueueReport struct {
	Seed                                uint64
	Pushed, Acknowledged, UnknownPushes int // values
	Read                                int // values taken by pops that answered, and left at the end
	Killed                              int // clients killed mid-command
	Recovered                           int // values whose push's outcome was unknown, read all the same
	Lost, Duplicated, Unexpected        []string
	Order, NilWhileHeld, Errors         []string // violations, each described
	LostToKilled                        int      // acknowledged values unread that a killed pop may have taken
	NilAnswers                          int      // blocking pops that answered nil, each checked
}

// OK reports whether the history shows no violation.
func (r *QueueReport) OK() bool {
	return len(r.Lost)+len(r.Duplicated)+len(r.Unexpected)+len(r.Order)+len(r.NilWhileHeld)+len(r.Errors) == 0
}

func (r *QueueReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d values pushed (%d acknowledged, %d of unknown outcome), %d read, %d clients killed "+
		"(%d unread values a killed pop may have taken), %d recovered, %d nil answers; lost %d, duplicated %d, unexpected %d, "+
		"order violations %d, nil while held %d, errors %d",
		r.Seed, r.Pushed, r.Acknowledged, r.UnknownPushes, r.Read, r.Killed, r.LostToKilled, r.Recovered, r.NilAnswers,
		len(r.Lost), len(r.Duplicated), len(r.Unexpected), len(r.Order), len(r.NilWhileHeld), len(r.Errors))
	for _, l := range []struct {
		name string
		s    []string
	}{{"lost", r.Lost}, {"duplicated", r.Duplicated}, {"unexpected", r.Unexpected}, {"order", r.Order},
		{"nil while held", r.NilWhileHeld}, {"errors", r.Errors}} {
		for _, s := range l.s[:min(len(l.s), 5)] {
			fmt.Fprintf(&b, "\n  %s: %s", l.name, s)
		}
	}
	return b.String()
}

// never is a time after every other: a value left at the end never left.
const never = time.Duration(math.MaxInt64)

// span is when an operation was called and when it returned.
type span struct{ call, ret time.Duration }

// fate is what happened to one value.
type fate struct {
	push   *Push
	n      int                      // its number in its producer's order
	reads  int                      // pops that answered with it, and the final read
	moves  int                      // moves that answered with it
	arrive map[string]time.Duration // when it was, at the latest, in each list it went to
	leave  map[string]span          // the operation that took it out of each list (never: it is still there)
}

// CheckQueue checks a queue workload's history (see the package doc).
func CheckQueue(h *QueueHistory) *QueueReport {
	r := &QueueReport{Seed: h.Seed, Killed: h.Killed, Errors: h.Errors}
	fates := fatesOf(h)
	for v, f := range fates {
		r.account(v, f)
	}
	r.matchLost(h, fates)
	r.Order = checkOrder(fates)
	r.NilWhileHeld, r.NilAnswers = checkNil(h, fates)
	for _, s := range [][]string{r.Lost, r.Duplicated, r.Unexpected, r.Order, r.NilWhileHeld} {
		slices.Sort(s)
	}
	return r
}

// fatesOf follows every value through the history.
func fatesOf(h *QueueHistory) map[string]*fate {
	fates := map[string]*fate{}
	get := func(v string) *fate {
		f := fates[v]
		if f == nil {
			f = &fate{arrive: map[string]time.Duration{}, leave: map[string]span{}}
			fates[v] = f
		}
		return f
	}
	for i := range h.Pushes {
		p := &h.Pushes[i]
		for j, v := range p.Values {
			f := get(v)
			f.push, f.n = p, p.Seq+j
			if p.Status == OK {
				f.arrive[p.Key] = p.Return
			}
		}
	}
	for _, p := range h.Pops {
		for _, v := range p.Values { // only a pop that answered has values
			f := get(v)
			f.leave[p.Key] = span{p.Call, p.Return}
			if p.Dst != "" {
				f.moves++
				f.arrive[p.Dst] = p.Return
			} else {
				f.reads++
			}
		}
	}
	for k, vs := range h.Final {
		for _, v := range vs {
			f := get(v)
			f.reads++
			f.leave[k] = span{never, never}
		}
	}
	return fates
}

// account counts v and files it under what went wrong with it, if anything.
func (r *QueueReport) account(v string, f *fate) {
	switch {
	case f.push == nil || f.push.Status == Nil:
		r.Unexpected = append(r.Unexpected, v)
		return
	case f.push.Status == OK:
		r.Acknowledged++
	default:
		r.UnknownPushes++
		if f.reads > 0 {
			r.Recovered++
		}
	}
	r.Pushed++
	r.Read += min(f.reads, 1)
	if f.reads > 1 || f.moves > 1 {
		r.Duplicated = append(r.Duplicated, fmt.Sprintf("%s read %d times, moved %d times", v, f.reads, f.moves))
	}
}

// matchLost files as lost every acknowledged value that nothing read,
// unless a killed pop may have taken it, each killed pop taking at most its
// count (a bipartite matching; which pops may: window.mayTake).
func (r *QueueReport) matchLost(h *QueueHistory, fates map[string]*fate) {
	var unread []string
	for v, f := range fates {
		if f.push != nil && f.push.Status == OK && f.reads == 0 {
			unread = append(unread, v)
		}
	}
	sort.Strings(unread)
	var killed, moves []*Pop
	for i := range h.Pops {
		switch p := &h.Pops[i]; {
		case p.Status != Unknown:
		case p.Dst == "":
			killed = append(killed, p)
		default:
			moves = append(moves, p)
		}
	}
	w := windows(fates)
	gone := func(p *Pop) time.Duration {
		if g, ok := h.Gone[p.Client]; ok && p.Client != 0 {
			return g
		}
		return never
	}
	taken := matching(unread, killed, func(v string, p *Pop) bool { return w.mayTake(fates[v], p, moves, gone) })
	for _, v := range unread {
		if _, ok := taken[v]; ok {
			r.LostToKilled++
		} else {
			r.Lost = append(r.Lost, v)
		}
	}
}

func familyOf(key string) *family {
	if strings.HasPrefix(key, "r") || key == "dr" {
		return &families[0]
	}
	return &families[1]
}

// matching matches values to pops, each pop taking at most its Count, by
// augmenting paths (Kuhn's algorithm), and returns the pop each matched
// value went to.
func matching(vals []string, pops []*Pop, can func(string, *Pop) bool) map[string]int {
	holders := make([][]string, len(pops))
	got := map[string]int{}
	var try func(v string, seen []bool) bool
	try = func(v string, seen []bool) bool {
		for i, p := range pops {
			if seen[i] || !can(v, p) {
				continue
			}
			seen[i] = true
			if len(holders[i]) < p.Count {
				holders[i] = append(holders[i], v)
				got[v] = i
				return true
			}
			for j, w := range holders[i] {
				if try(w, seen) {
					holders[i][j] = v
					got[v] = i
					return true
				}
			}
		}
		return false
	}
	for _, v := range vals {
		try(v, make([]bool, len(pops)))
	}
	return got
}
