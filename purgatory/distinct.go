package purgatory

import "slices"

// scanMax is how many keys a watch call dedups by scanning those before each
// key; a call with more uses a map, so that a call with n keys costs O(n),
// not O(n²) (a Redis BLPOP may name 100,000 keys).
const scanMax = 16

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
