package purgatory

import "slices"

// scanMax is how many keys a watch call dedups by scanning those before each
// key; a call with more uses a map, so that a call with n keys costs O(n),
// not O(n²) (a Redis BLPOP may name 100,000 keys).
const scanMax = 16

// watches is what an operation is watched under: keys, or with at, keys at
// levels.
type watches[K comparable] struct {
	keys []K
	at   []Level[K]
}

// link watches o under each distinct key, in order, until one finds o decided
// (ended from outside meanwhile), and returns how many keys it linked. One
// key, the commonest call, needs no dedup nor callback (through them, W8's
// reused loop took 1.05x the time in the in-process harness, which
// overstates: docs/benchmarks.md, Trials).
func (w *watches[K]) link(s *shards[K], o *Op) int {
	switch {
	case w.at != nil:
		return eachDistinctLevel(w.at, func(key K, level int64) bool { return s.watchAt(o, key, level) })
	case len(w.keys) == 1:
		if s.watch(o, w.keys[0]) {
			return 1
		}
		return 0
	}
	return eachDistinct(w.keys, func(key K) bool { return s.watch(o, key) })
}

// eachDistinct calls watch for each key of keys the first time it appears,
// in order, until watch returns false, and returns how many calls returned
// true.
func eachDistinct[K comparable](keys []K, watch func(K) bool) (n int) {
	var seen map[K]struct{}
	if len(keys) > scanMax {
		seen = make(map[K]struct{}, len(keys))
	}
	for i, key := range keys {
		if seen != nil {
			if _, dup := seen[key]; dup {
				continue
			}
			seen[key] = struct{}{}
		} else if slices.Contains(keys[:i], key) {
			continue
		}
		if !watch(key) {
			break
		}
		n++
	}
	return n
}

// eachDistinctLevel is eachDistinct for levels: a key given more than once
// is watched once, where it first appears, at the lowest of its levels.
func eachDistinctLevel[K comparable](at []Level[K], watch func(K, int64) bool) (n int) {
	var lowest map[K]int64
	if len(at) > scanMax {
		lowest = make(map[K]int64, len(at))
		for _, a := range at {
			if l, ok := lowest[a.Key]; !ok || a.Level < l {
				lowest[a.Key] = a.Level
			}
		}
	}
	for i, a := range at {
		level := a.Level
		if lowest != nil {
			l, first := lowest[a.Key]
			if !first {
				continue // watched already
			}
			delete(lowest, a.Key)
			level = l
		} else {
			first := true
			for j, b := range at {
				if b.Key == a.Key {
					level = min(level, b.Level)
					first = first && j >= i
				}
			}
			if !first {
				continue
			}
		}
		if !watch(a.Key, level) {
			break
		}
		n++
	}
	return n
}
