package history

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"
)

// checkOrder checks each producer's order through each list it pushed to:
// of two values it pushed there, the first acknowledged push's values
// before the second's (one command, a MULTI or a pipeline keep their order
// too), the later may not leave the list before the earlier began to leave
// it (a pop of the later that returned before the pop of the earlier was
// called), and may not leave it at all while the earlier is still there at
// the end. Values whose leaving nobody saw (taken by a killed pop) are
// passed over. Each group is swept once, keeping the latest call of a
// leaving so far.
func checkOrder(fates map[string]*fate) []string {
	type item struct {
		v string
		f *fate
	}
	groups := map[string][]item{}
	for v, f := range fates {
		if f.push == nil || f.push.Status != OK {
			continue
		}
		if _, ok := f.leave[f.push.Key]; ok {
			g := fmt.Sprintf("%d %s", f.push.Producer, f.push.Key)
			groups[g] = append(groups[g], item{v, f})
		}
	}
	var bad []string
	for _, g := range groups {
		slices.SortFunc(g, func(a, b item) int { return cmp.Compare(a.f.n, b.f.n) })
		latest, by := time.Duration(-1), ""
		for _, it := range g {
			out := it.f.leave[it.f.push.Key]
			if out.ret < latest {
				bad = append(bad, fmt.Sprintf("%s left %s at %v, before %s, pushed earlier, began to leave at %v",
					it.v, it.f.push.Key, out.ret, by, fmtTime(latest)))
			}
			if out.call > latest {
				latest, by = out.call, it.v
			}
		}
	}
	return bad
}

func fmtTime(t time.Duration) string {
	if t == never {
		return "never (it is still there)"
	}
	return t.String()
}

// stay is a value's time in one list: in it by arrive at the latest, still
// there when the operation that took it out was called, at leave.
type stay struct{ arrive, leave time.Duration }

// checkNil finds blocking pops that answered nil while one of their lists
// held a value for the whole wait: a value in it before the pop was called
// that nothing began to take out until after the pop returned. Values whose
// arrival or leaving nobody saw are passed over. For each list the stays are
// sorted by arrival, with the latest leaving among those that arrived so far.
func checkNil(h *QueueHistory, fates map[string]*fate) (bad []string, answers int) {
	stays := map[string][]stay{}
	for _, f := range fates {
		for k, in := range f.arrive {
			if out, ok := f.leave[k]; ok {
				stays[k] = append(stays[k], stay{in, out.call})
			}
		}
	}
	latest := map[string][]time.Duration{}
	for k, ss := range stays {
		slices.SortFunc(ss, func(a, b stay) int { return cmp.Compare(a.arrive, b.arrive) })
		l := make([]time.Duration, len(ss))
		for i, s := range ss {
			l[i] = s.leave
			if i > 0 {
				l[i] = max(l[i], l[i-1])
			}
		}
		latest[k] = l
	}
	for _, p := range h.Pops {
		if p.Status != Nil || !p.Blocking {
			continue
		}
		answers++
		for _, k := range p.Keys {
			ss := stays[k]
			n := sort.Search(len(ss), func(i int) bool { return ss[i].arrive >= p.Call })
			if n > 0 && latest[k][n-1] > p.Return {
				bad = append(bad, fmt.Sprintf("%s %v, called at %v, answered nil at %v while %s held a value from before its call to after its answer",
					p.Cmd, p.Keys, p.Call, p.Return, k))
			}
		}
	}
	return bad, answers
}
