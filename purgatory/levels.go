package purgatory

import "math"

// Progress watches. Kafka's busiest purgatories wait on numbers that only grow
// per key: a produce with acks=all until the partition's high watermark
// reaches its last offset, a fetch until enough bytes follow its position. An
// operation watched at a level under a key waits in the key's list in a
// min-heap by level, not among the plain watchers, so that a key's walk does
// not try it until Advance reports the key at or past its level; from then on
// it is a plain watcher of the key, tried at every later walk until
// TryComplete says yes. CheckAndComplete still tries everything under the key.
//
// All of this is under the shard's mutex and inside the key's list
// (watchlist.go): a heap entry is counted in the list's count like a plain
// one, an ended operation drops there whichever part holds it, and compaction
// filters both parts. The heap is never walked in place: a walk that must try
// its operations (CheckAndComplete) reads a copy, so pushes may reorder the
// heap during a walk.

// A Level is a key and the level it must reach before an operation watched
// with [Purgatory.TryCompleteElseWatchAt] is tried on its account. Make one
// with [At].
type Level[K comparable] struct {
	Key   K
	Level int64
}

// At returns the Level of key at level, for TryCompleteElseWatchAt.
func At[K comparable](key K, level int64) Level[K] { return Level[K]{key, level} }

// noLevel is a key's level before any Advance.
const noLevel = math.MinInt64

// levelEntry is an operation waiting in a key's heap for level.
type levelEntry struct {
	entry
	level int64
}

// levelHeap is a binary min-heap by level, written by hand rather than
// through container/heap so that an entry is a value, not an interface.
type levelHeap []levelEntry

func (h *levelHeap) push(e levelEntry) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if s[parent].level <= s[i].level {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

// pop removes and returns the entry of the lowest level.
func (h *levelHeap) pop() levelEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = levelEntry{}
	*h = s[:last]
	h.down(0)
	return top
}

func (h levelHeap) down(i int) {
	for {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].level < h[least].level {
			least = l
		}
		if r < len(h) && h[r].level < h[least].level {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

// filter keeps the entries of operations that have not ended, and restores
// the heap order; it returns how many it removed.
func (h *levelHeap) filter() int {
	s := *h
	live := s[:0]
	for _, e := range s {
		if !e.op.ended() {
			live = append(live, e)
		}
	}
	removed := len(s) - len(live)
	clear(s[len(live):])
	if c := cap(live); c > 64 && len(live) < c/4 {
		live = append(make(levelHeap, 0, max(2*len(live), 16)), live...)
	}
	for i := len(live)/2 - 1; i >= 0; i-- {
		live.down(i)
	}
	*h = live
	return removed
}

// TryCompleteElseWatchAt is TryCompleteElseWatch for an operation that waits
// until each of its keys reaches a level (a produce with acks=all, until each
// partition's high watermark reaches its offsets): it is watched under each
// key but tried on that key's account only once [Purgatory.Advance] reports
// the key at or past the level. After that it is tried at every later walk of
// the key (Advance or CheckAndComplete) until it ends: TryComplete stays the
// judge, and one that says "not yet" at its level is tried again. A key whose
// level has been reported at or past the level already watches it as a plain
// watcher. CheckAndComplete tries it whatever its level.
//
// Everything else is as for TryCompleteElseWatch: the tries before and after
// watching, Outcome Shed over WithMaxDelayed's bound, timeouts, contexts,
// ForceComplete, CancelForKey, ForceCompleteForKey, Close, the counts in
// Watched, Delayed, Stats and the metrics, and the misuses. A key given twice
// is watched once, at the lower level.
func (p *Purgatory[K]) TryCompleteElseWatchAt(op Operation, at ...Level[K]) bool {
	p.mustBeNew()
	o := opOf(op, "TryCompleteElseWatchAt")
	if len(at) == 0 {
		panic("purgatory: TryCompleteElseWatchAt called with no levels; an operation must be watched under at least one key")
	}
	if p.watchers.mayPanic {
		for _, a := range at {
			p.watchers.hashes(a.Key)
		}
	}
	return p.add(op, o, func() (distinct int) {
		for i, a := range at {
			level, first := a.Level, true
			for j, b := range at {
				if b.Key == a.Key {
					level = min(level, b.Level)
					first = first && j >= i
				}
			}
			if !first {
				continue // watched once, at its lowest level
			}
			if !p.watchers.watchAt(o, a.Key, level) {
				break // ended from outside meanwhile
			}
			distinct++
		}
		return distinct
	})
}
