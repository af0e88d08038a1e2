package purgatory

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"

	"github.com/purgatory-go/purgatory/internal/cacheline"
	"github.com/purgatory-go/purgatory/internal/sched"
)

// shard is a part of the key space with its own lock, so that callers working
// on keys in different shards never contend.
//
// A list that becomes empty stays in the map, so that a busy key does not
// allocate a new list for every operation; once empty lists outnumber both
// minEmpty and the shard's lists in use, one sweep drops them all. Each sweep
// visits at most twice as many lists as it drops, so keys nobody watches any
// more cost O(1) each to forget and never accumulate.
type shard[K comparable] struct {
	// mu guards lists and empty, and each list's entries and lv (its
	// count, walk and leveled are atomic). It is the innermost purgatory
	// lock (the lock order is in the block at Op) and is never held while
	// user code runs.
	mu    sched.Mutex
	lists map[K]*watchList[K]
	empty int // lists in the map with no operations
	// last is the list that list last found or made, nil once it leaves the
	// map: an add is mostly followed by a check of the same key, and a key's
	// list stays in the map while it is busy, so comparing last's key first
	// saves most busy keys' map lookups (a hash and a probe, about 14 ns).
	last *watchList[K]
	// lastWord is last's key when K is a word (shards.word), which
	// list compares on this line, the one mu's holder has, rather than on
	// last's own first line: over many keys that line is cold, or another
	// core's, and reading it to miss cost W5 at 10,000 keys 2.5 % of its
	// CPU (110 ms of 4.36 s in a profile). Other keys compare last.key.
	lastWord uint64
	_        [cacheline.Size - 40]byte // internal/cacheline's rule: neighbouring shards' locks are a block apart
}

// list returns key's list, nil if it has none. word says K is a word
// (shards.word). The caller holds mu.
func (sh *shard[K]) list(key K, word bool) *watchList[K] {
	if l := sh.last; l != nil && (word && sh.lastWord == wordOf(&key) || !word && l.key == key) {
		return l
	}
	l := sh.lists[key]
	if l != nil {
		sh.setLast(l, key, word)
	}
	return l
}

// setLast records l, key's list, as last. The caller holds mu.
func (sh *shard[K]) setLast(l *watchList[K], key K, word bool) {
	sh.last = l
	if word {
		sh.lastWord = wordOf(&key)
	}
}

// wordOf reads a key that is a word (isWord) as a uint64.
func wordOf[K any](key *K) uint64 { return *(*uint64)(unsafe.Pointer(key)) }

const minEmpty = 64

type shards[K comparable] struct {
	seed     maphash.Seed
	mix      uint64 // nonzero (odd) when K is a word, an integer of 8 bytes: see of
	all      []shard[K]
	stats    *counters
	mayPanic bool // hashing a K can panic: K holds an interface
}

func newShards[K comparable](n int, stats *counters, mayPanic bool) shards[K] {
	s := shards[K]{seed: maphash.MakeSeed(), all: make([]shard[K], n), stats: stats, mayPanic: mayPanic}
	if isWord(reflect.TypeFor[K]()) {
		s.mix = maphash.Comparable(s.seed, uint64(0)) | 1 // random, as the seed
	}
	for i := range s.all {
		s.all[i].lists = make(map[K]*watchList[K])
	}
	return s
}

// of returns key's shard: its hash scaled to the number of shards (the high
// word of hash × n, which a uniform hash spreads evenly, as it does a
// modulo, for a multiply where a modulo by a variable divides).
//
// A key that is a word (int, int64, uint64: partitions, connection and
// request ids) is hashed by Fibonacci hashing of the word xored with a
// random mix, whose high bits spread consecutive and strided keys evenly:
// about 2 ns, where maphash.Comparable, which reaches the runtime's hasher
// through the map type, takes about 6, and every walk and watch pays it
// once (the shard's map hashes the key again, with its own seed). Only
// which shard's lock a key takes depends on it, never a map's cost: keys
// chosen to share a shard contend for its mutex, nothing worse.
func (s *shards[K]) of(key K) *shard[K] {
	var h uint64
	if s.mix != 0 {
		h = (wordOf(&key) ^ s.mix) * 0x9e3779b97f4a7c15 // 2⁶⁴/φ; K is 8 bytes (isWord)
	} else {
		h = maphash.Comparable(s.seed, key)
	}
	i, _ := bits.Mul64(h, uint64(len(s.all)))
	return &s.all[i]
}

// word reports whether K is a word (isWord): of hashes it, and a shard keeps
// a copy of its last key, as a uint64.
func (s *shards[K]) word() bool { return s.mix != 0 }

// isWord reports whether a value of type t is an integer of 8 bytes, which of
// may read as a uint64.
func isWord(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return t.Size() == 8
	}
	return false
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

// mustHashKeys panics with a message that names the key if one cannot be
// hashed, before anything changes; every method that takes keys calls it, so
// the mistake reads the same everywhere. It costs nothing for key types that
// cannot hold an interface.
func (s *shards[K]) mustHashKeys(keys []K) {
	if !s.mayPanic {
		return
	}
	for _, key := range keys {
		s.hashes(key)
	}
}

// mustHashKey is mustHashKeys for one key.
func (s *shards[K]) mustHashKey(key K) {
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

// watch links o under key and records the list on o, with no lock of o's:
// the caller, TryCompleteElseWatch, holds o's try bit (why that is enough:
// Op.detach). It returns false if o has an outcome left for its tries (which apply it,
// unless one passes): watching it further would be undone at once.
func (s *shards[K]) watch(o *Op, key K) bool {
	return s.watchAt(o, key, noLevel)
}

// watchAt is watch for an operation that waits until key reaches level
// (noLevel: a plain watch).
func (s *shards[K]) watchAt(o *Op, key K, level int64) bool {
	sh := s.of(key)
	if o.decided() {
		return false
	}
	sh.mu.Lock()
	l := sh.list(key, s.word())
	switch {
	case l == nil:
		l = newWatchList(key, sh)
		sh.lists[key] = l
		sh.setLast(l, key, s.word())
	case l.vacant():
		sh.empty--
	}
	if o.first == nil {
		o.first = l
	} else {
		m := o.madeMore()
		m.places = append(m.places, l)
		s.stats.addExtra(1)
	}
	if pk := o.ringing(); pk != nil {
		pk.bell = l.heard()
		pk.ring = pk.bell.listen() // before the add's second try (bell.go, step 2)
		l.link(o, ringsMark)
	} else {
		l.linkAt(o, level)
	}
	sh.mu.Unlock()
	return true
}

// remove takes key's watch list out of the map and returns a copy of its
// entries (a walk may still be reading them). The operations stay counted as
// watched until they end and drop, as the caller is about to make them. The
// uses handed to a walk of the list stay with it: that walk still applies
// them.
func (s *shards[K]) remove(key K) []entry {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.list(key, s.word())
	if l == nil {
		return nil
	}
	if l.vacant() {
		sh.empty-- // an empty list kept for reuse
	}
	sh.last = nil // it leaves the map
	ops := slices.Clone(l.walkable())
	var owed *levelState
	if l.lv != nil && len(l.lv.relayed) > 0 {
		owed = &levelState{high: noLevel, relayed: l.lv.relayed}
	}
	l.entries, l.lv = nil, owed
	if !l.walked() { // else the walk may read the room: the list, out of the map, keeps its two until nothing holds the list
		l.clearRoom()
	}
	l.setHead(0)
	l.setLeveled(false)
	l.count.Store(0)
	delete(sh.lists, key)
	return ops
}

// each calls fn with the operations of every key, one shard at a time.
func (s *shards[K]) each(fn func(ops []entry)) {
	var buf []entry
	for i := range s.all {
		sh := &s.all[i]
		sh.mu.Lock()
		buf = buf[:0]
		for _, l := range sh.lists {
			buf = append(buf, l.ops()...)
			for _, e := range l.waiting() {
				buf = append(buf, e.Value)
			}
		}
		sh.mu.Unlock()
		fn(buf)
	}
}

// sweep drops every empty list from the map.
func (sh *shard[K]) sweep() {
	for k, l := range sh.lists {
		if l.vacant() {
			delete(sh.lists, k)
		}
	}
	sh.empty = 0
	if l := sh.last; l != nil && l.vacant() {
		sh.last = nil // it left the map
	}
}
