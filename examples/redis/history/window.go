package history

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// A value unread at the end was lost, unless a killed pop took it. Which
// killed pops may have: a list is taken from one end, so a pop takes a value
// only while it is at the head, after every value surely ahead of it (pushed
// and acknowledged before its push began, or before it in the same push) has
// begun to leave, and before any value surely behind it (pushed after its
// push was acknowledged, or after it in the same push) has left.
// windows keeps, per source list, what that takes: the values' pushes and
// the times they were seen to leave (values whose leaving nobody saw do not
// count).
type window struct {
	fates     map[string]*fate
	byPushed  map[string][]leaving       // by the push's return
	byCalled  map[string][]leaving       // by the push's call
	aheadLeft map[string][]time.Duration // prefix max of left.call, over byPushed
	behindOut map[string][]time.Duration // suffix min of left.ret, over byCalled
}

type leaving struct {
	push *Push
	left span
}

func windows(fates map[string]*fate) *window {
	w := &window{fates, map[string][]leaving{}, map[string][]leaving{}, map[string][]time.Duration{}, map[string][]time.Duration{}}
	for _, f := range fates {
		if f.push == nil || f.push.Status != OK {
			continue
		}
		if out, ok := f.leave[f.push.Key]; ok {
			w.byPushed[f.push.Key] = append(w.byPushed[f.push.Key], leaving{f.push, out})
		}
	}
	for k, ls := range w.byPushed {
		slices.SortFunc(ls, func(a, b leaving) int { return cmp.Compare(a.push.Return, b.push.Return) })
		w.aheadLeft[k] = scan(ls, func(l leaving) time.Duration { return l.left.call }, later)
		byCall := slices.Clone(ls)
		slices.SortFunc(byCall, func(a, b leaving) int { return cmp.Compare(b.push.Call, a.push.Call) }) // latest first
		w.byCalled[k] = byCall
		w.behindOut[k] = scan(byCall, func(l leaving) time.Duration { return l.left.ret }, sooner)
	}
	return w
}

func later(a, b time.Duration) time.Duration  { return max(a, b) }
func sooner(a, b time.Duration) time.Duration { return min(a, b) }

// scan folds f over ls, keeping each prefix's result.
func scan(ls []leaving, of func(leaving) time.Duration, f func(a, b time.Duration) time.Duration) []time.Duration {
	out := make([]time.Duration, len(ls))
	for i, l := range ls {
		out[i] = of(l)
		if i > 0 {
			out[i] = f(out[i], out[i-1])
		}
	}
	return out
}

// opens is when f's value may first be at its source's head: the latest
// call of a pop that took out a value surely ahead of it (-1: none).
func (w *window) opens(f *fate) time.Duration {
	at := time.Duration(-1)
	for _, v := range f.push.Values[:f.n-f.push.Seq] {
		if out, ok := w.fates[v].leave[f.push.Key]; ok {
			at = max(at, out.call)
		}
	}
	ls := w.byPushed[f.push.Key]
	if n := sort.Search(len(ls), func(i int) bool { return ls[i].push.Return >= f.push.Call }); n > 0 {
		at = max(at, w.aheadLeft[f.push.Key][n-1])
	}
	return at
}

// closes is when f's value must have left its source: the earliest return
// of a pop that took out a value surely behind it (never: none).
func (w *window) closes(f *fate) time.Duration {
	at := never
	for _, v := range f.push.Values[f.n-f.push.Seq+1:] {
		if out, ok := w.fates[v].leave[f.push.Key]; ok {
			at = min(at, out.ret)
		}
	}
	ls := w.byCalled[f.push.Key] // latest call first
	if n := sort.Search(len(ls), func(i int) bool { return ls[i].push.Call <= f.push.Return }); n > 0 {
		at = min(at, w.behindOut[f.push.Key][n-1])
	}
	return at
}

// A killed pop p is served, if at all, between its call and when the
// server let go of its client (gone, QueueHistory.Gone; never if unknown).

// fromSource reports whether p may have taken f's value from its source: it
// asked for it, and could be served while the value could be at the head.
func (w *window) fromSource(f *fate, p *Pop, gone time.Duration) bool {
	return slices.Contains(p.Keys, f.push.Key) && gone > f.push.Call &&
		gone >= w.opens(f) && p.Call < w.closes(f)
}

// mayTake reports whether p may have taken f's value: from its source, or
// from its family's destination, if a move put it there (one that answered)
// or may have (a killed one) before p was let go of.
func (w *window) mayTake(f *fate, p *Pop, moves []*Pop, gone func(*Pop) time.Duration) bool {
	dst, g := familyOf(f.push.Key).dst, gone(p)
	if _, moved := f.arrive[dst]; moved {
		return slices.Contains(p.Keys, dst) && g > f.leave[f.push.Key].call
	}
	if w.fromSource(f, p, g) {
		return true
	}
	if !slices.Contains(p.Keys, dst) {
		return false
	}
	return slices.ContainsFunc(moves, func(m *Pop) bool { return m.Call < g && w.fromSource(f, m, gone(m)) })
}
