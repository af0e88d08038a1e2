package purgatory

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
)

// An operation holds a node for each key it is watched under, and completing
// it removes those nodes from their lists at once, in O(1) each. Watch-list
// memory therefore always follows what live operations need, with no purge pass
// to schedule or to pay for. (Kafka keeps completed operations in its lists
// until a key is checked or a purge sweeps every list; its first design ran out
// of memory here, KAFKA-664, and the sweep costs its reaper several times the
// timer work at high request rates.)
//
// A list is a slice rather than a linked list: CheckAndComplete copies it in
// one pass, and the CPU can fetch the operations it points to in parallel,
// where a linked list is a chain of dependent cache misses. A node knows its
// index, so removal swaps the last entry into its place; the order of a list is
// therefore not the order of watching.

// node is an operation's place in one key's watch list.
type node struct {
	owner  remover // the list the node was created for; immutable
	index  int     // position in the owner's entries; guarded by its shard lock
	linked bool    // guarded by the owner's shard lock
}

// remover unlinks a node from its list if it is still there. It hides the key
// type, so that Op need not be generic.
type remover interface{ remove(n *node) }

// shard is a part of the key space with its own lock, so that callers working
// on keys in different shards never contend.
//
// A list that becomes empty stays in the map, so that a busy key does not
// allocate a new list for every operation; once empty lists outnumber both
// minEmpty and the shard's lists in use, one sweep drops them all. Each sweep
// visits at most twice as many lists as it drops, so keys nobody watches any
// more cost O(1) each to forget and never accumulate.
type shard[K comparable] struct {
	mu    sync.Mutex
	lists map[K]*watchList[K]
	empty int      // lists in the map with no operations
	_     [40]byte // pad to 64 bytes: neighbouring shards' locks never share a cache line
}

const minEmpty = 64

// watchList holds the operations watched under one key. Its invariants, all
// under its shard's mutex:
//
//   - entries[i].n.index == i, and a node is linked exactly while it is in
//     entries; an operation is in a key's list at most once.
//   - Who may unlink: the operation's own end (detach, through remove, on
//     whichever goroutine won the claim), CancelForKey (take, which drops the
//     whole list), and nobody else; so an operation leaves every list as it
//     ends, and the lists hold live operations only.
//   - What a reader sees: CheckAndComplete copies the entries under the
//     mutex (enter) and walks the copy without it. An operation in the copy
//     may have ended since; its state then refuses it, so it is completed at
//     most once.
//   - One walk at a time, by the word walk: walking is set by enter (under
//     the mutex) and cleared by leave (by compare-and-swap, without the
//     mutex when it has nothing to unlink), and a CheckAndComplete that
//     finds it set sets again instead and returns; leave then clears again
//     and hands the walk a fresh copy rather than clearing walking. So no
//     request for a walk is lost, and an operation watched under this key
//     alone (soloBit, try.go) is tried by nobody but this list's walk.
//   - The walk may leave the operations it completed linked until it leaves
//     (completeLeaving): they have ended, so every reader skips them, and
//     leave unlinks them in one critical section.
//   - An empty list stays in the map for reuse until the shard's sweep. A
//     list dropped from the map (sweep, or take) may still be walked; its
//     operations are in no other list of the key.
type watchList[K comparable] struct {
	entries []watchEntry
	key     K
	shard   *shard[K]
	stats   *counters
	walk    atomic.Int32 // walking, and again; see above
}

// The bits of watchList.walk.
const (
	walking int32 = 1 // a CheckAndComplete walks the list (enter to leave)
	again   int32 = 2 // another asked for one more pass meanwhile
)

type watchEntry struct {
	op *Op
	n  *node
}

type shards[K comparable] struct {
	seed     maphash.Seed
	all      []shard[K]
	stats    *counters
	mayPanic bool // hashing a K can panic: K holds an interface
}

func newShards[K comparable](n int, stats *counters, mayPanic bool) shards[K] {
	s := shards[K]{seed: maphash.MakeSeed(), all: make([]shard[K], n), stats: stats, mayPanic: mayPanic}
	for i := range s.all {
		s.all[i].lists = make(map[K]*watchList[K])
	}
	return s
}

func (s *shards[K]) of(key K) *shard[K] {
	return &s.all[maphash.Comparable(s.seed, key)%uint64(len(s.all))]
}

// mayPanicToHash reports whether hashing a value of type t can panic: whether
// t holds an interface, whose dynamic value may be a slice, map or func.
func mayPanicToHash(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Array:
		return mayPanicToHash(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if mayPanicToHash(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// checkKeys panics with a message that names the key if one cannot be hashed,
// before anything changes; every method that takes keys calls it, so the
// mistake reads the same everywhere. It costs nothing for key types that
// cannot hold an interface.
func (s *shards[K]) checkKeys(keys []K) {
	if !s.mayPanic {
		return
	}
	for _, key := range keys {
		s.hashes(key)
	}
}

// checkKey is checkKeys for one key.
func (s *shards[K]) checkKey(key K) {
	if s.mayPanic {
		s.hashes(key)
	}
}

func (s *shards[K]) hashes(key K) {
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("purgatory: key %#v cannot be used: %v; use keys whose dynamic types are comparable (not slices, maps or funcs)", key, r))
		}
	}()
	maphash.Comparable(s.seed, key)
}

// watch links o under key and records the node on o, atomically with respect
// to o's completion. It returns false if o has already completed.
func (s *shards[K]) watch(o *Op, key K) bool {
	sh := s.of(key)
	o.book.Lock()
	defer o.book.Unlock()
	if o.done {
		return false
	}
	sh.mu.Lock()
	l := sh.lists[key]
	switch {
	case l == nil:
		l = &watchList[K]{key: key, shard: sh, stats: s.stats}
		sh.lists[key] = l
	case len(l.entries) == 0:
		sh.empty--
	}
	var n *node
	if o.first.owner == nil {
		n = &o.first
	} else {
		n = new(node)
		o.nodes = append(o.nodes, n)
	}
	n.owner = l
	l.link(o, n)
	sh.mu.Unlock()
	return true
}

// enter begins a walk of key's list: it returns the list, which the walk
// holds until it leaves it, and the list's operations, appended to buf. It
// returns a nil list if no operation is watched under key, or if another walk
// of the key is under way: that walk is then asked to go over the list once
// more before it leaves.
func (s *shards[K]) enter(key K, buf []*Op) (*watchList[K], []*Op) {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lists[key]
	if l == nil || len(l.entries) == 0 {
		return nil, buf
	}
	for {
		switch w := l.walk.Load(); {
		case w&walking == 0:
			if l.walk.CompareAndSwap(w, walking) {
				return l, l.appendOps(buf)
			}
		case w&again != 0:
			return nil, buf // asked already
		default:
			if l.walk.CompareAndSwap(w, w|again) {
				return nil, buf
			}
		}
	}
}

// leave implements walkList.
func (l *watchList[K]) leave(ended []*node, buf []*Op) ([]*Op, bool) {
	if len(ended) == 0 && l.walk.CompareAndSwap(walking, 0) {
		return buf, false // the common case: no lock
	}
	sh := l.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, n := range ended {
		l.removeLocked(n)
	}
	for {
		if l.walk.CompareAndSwap(walking, 0) {
			return buf, false
		}
		if l.walk.CompareAndSwap(walking|again, walking) {
			return l.appendOps(buf), true
		}
	}
}

func (l *watchList[K]) appendOps(buf []*Op) []*Op {
	for _, e := range l.entries {
		buf = append(buf, e.op)
	}
	return buf
}

// take removes key's watch list and returns its operations.
func (s *shards[K]) take(key K) []*Op {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lists[key]
	if l == nil {
		return nil
	}
	if len(l.entries) == 0 {
		sh.empty-- // an empty list kept for reuse
	}
	ops := make([]*Op, len(l.entries))
	for i, e := range l.entries {
		ops[i] = e.op
		e.n.linked = false
	}
	l.stats.watched.Add(-int64(len(ops)))
	l.entries = nil
	delete(sh.lists, key)
	return ops
}

// each calls fn with the operations of every key, one shard at a time.
func (s *shards[K]) each(fn func(ops []*Op)) {
	var buf []*Op
	for i := range s.all {
		sh := &s.all[i]
		sh.mu.Lock()
		buf = buf[:0]
		for _, l := range sh.lists {
			for _, e := range l.entries {
				buf = append(buf, e.op)
			}
		}
		sh.mu.Unlock()
		fn(buf)
	}
}

func (l *watchList[K]) link(o *Op, n *node) {
	n.index, n.linked = len(l.entries), true
	l.entries = append(l.entries, watchEntry{o, n})
	l.stats.watched.Add(1)
}

// unlink removes n in O(1) by moving the last entry into its place, and
// shrinks the slice once it is mostly unused.
func (l *watchList[K]) unlink(n *node) {
	last := len(l.entries) - 1
	if i := n.index; i != last {
		l.entries[i] = l.entries[last]
		l.entries[i].n.index = i
	}
	l.entries[last] = watchEntry{}
	l.entries = l.entries[:last]
	n.linked = false
	l.stats.watched.Add(-1)
	if c := cap(l.entries); c > 64 && len(l.entries) < c/4 {
		l.entries = append(make([]watchEntry, 0, c/2), l.entries...)
	}
}

// remove unlinks n if it is still linked.
func (l *watchList[K]) remove(n *node) {
	l.shard.mu.Lock()
	defer l.shard.mu.Unlock()
	l.removeLocked(n)
}

// removeLocked is remove with the shard's mutex held.
func (l *watchList[K]) removeLocked(n *node) {
	sh := l.shard
	if !n.linked {
		return
	}
	l.unlink(n)
	if len(l.entries) == 0 && sh.lists[l.key] == l {
		sh.empty++
		if sh.empty > minEmpty && 2*sh.empty > len(sh.lists) {
			sh.sweep()
		}
	}
}

// sweep drops every empty list from the map.
func (sh *shard[K]) sweep() {
	for k, l := range sh.lists {
		if len(l.entries) == 0 {
			delete(sh.lists, k)
		}
	}
	sh.empty = 0
}
