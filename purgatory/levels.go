package purgatory

import (
	"math"

	"github.com/purgatory-go/purgatory/internal/minheap"
)

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

// levelState is a key's level, and what waits for a higher one: a min-heap
// of entries by the level each waits for, ties in the order they were watched
// (the one heap type the wheel's current tick uses too). It also holds the
// solo uses relayed to the key's walk (relay.go), a rare path that needs a place
// off the list's first cache line.
type levelState struct {
	levels  minheap.Heap[entry]
	high    int64   // the highest level Advance reported; noLevel before
	seq     uint64  // watches at a level so far: the order of ties
	relayed []entry // solo uses whose outcome was left for the walk (relay)
	bell    *bell   // made at the key's first parked use (heard); nil before
}

// filter keeps the entries of operations that have not ended, and restores
// the heap order; it returns how many it removed.
func (lv *levelState) filter() int {
	s := lv.levels
	live := s[:0]
	for _, e := range s {
		if e.Value.live() {
			live = append(live, e)
		}
	}
	removed := len(s) - len(live)
	clear(s[len(live):])
	live = shrunk(live)
	live.Init()
	lv.levels = live
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
	p.watchers.mustHashLevels(at)
	return p.add(op, o, &watches[K]{at: at}, nil)
}

// mustHashLevels is mustHashKeys for the keys of at.
func (s *shards[K]) mustHashLevels(at []Level[K]) {
	if s.mayPanic {
		for _, a := range at {
			s.hashes(a.Key)
		}
	}
}
