package purgatory

import (
	"sync/atomic"

	"github.com/purgatory-go/purgatory/internal/minheap"
	"github.com/purgatory-go/purgatory/internal/sched"
)

// A key's watch list is a slice of its operations, walked in place: no copy,
// and the CPU can fetch the operations it points to in parallel, where a
// linked list is a chain of dependent cache misses.
//
// Nobody moves an entry while the list is walked. An operation that ends does
// not leave its lists itself; it tells each list that one of its entries is
// dead (drop, an atomic add), and the list compacts in place, under its
// shard's mutex: when a drop makes its dead entries outnumber its live ones,
// or when a walk leaves it with any dead (the walk has just read them all). A
// list therefore never holds more than twice the entries its live operations
// need, and a list whose last operation ends is emptied at once, with no purge
// pass to schedule or to pay for. (Kafka keeps completed operations in its
// lists until a key is checked or a purge sweeps every list; its first design
// ran out of memory here, KAFKA-664, and the sweep costs its reaper several
// times the timer work at high request rates.) So an expiry costs one atomic
// add per key, and the lock once per half a list's worth of expiries, where
// unlinking each took the lock each time; a walk takes it once as it leaves,
// however many it completed.

// place is a key's watch list as an operation sees it, whatever the key's
// type: the list it must tell when it ends, and, for a solo use, the list
// whose walk it hands an outcome to (Op.relay).
type place interface {
	// drop counts one of the list's entries dead: its operation has ended.
	// It is called once for each time the operation was linked there.
	drop()
	// walked reports whether a walk of the list is under way.
	walked() bool
	// queueRelay leaves e, a solo use with an outcome left for its walk, to the
	// walk of the list under way, and returns nil; if that walk has let go
	// meanwhile, it returns every use relayed to the list, e's included,
	// for the caller to apply (applyRelayed).
	queueRelay(e entry) []entry
}

// watchList holds the operations watched under one key. Its invariants:
//
//   - entries[head:] are the list's entries (ops); entries[:head] are what
//     hand-offs passed and compacted away (compactFront), cleared, until a
//     shift moves the rest down, once they are more than half the array, so
//     that a list used as a queue keeps its array rather than grow a new one
//     as appends reach its end. entries and head are written under the
//     shard's mutex only: appended to by link, filtered in place by compact,
//     dropped whole by remove. An operation is in a key's list at most once.
//   - An entry is live while its operation is in the use it was made for
//     (its generation) and that use has no outcome, and dead after; it
//     never comes back, though its operation may, in a later use, with an
//     entry of its own. count holds len(entries) and how many have been
//     dropped: each operation that ends drops once from each list it was
//     linked to (detach), and compact subtracts the dead entries it removes.
//     The two may pass each other (compact may remove an operation whose
//     end has not dropped yet), so the dead count is signed and exact only
//     at rest.
//   - Who may remove entries: compact, only while nobody walks the list, and
//     take, which drops the whole list from the map; nobody else. A walk may
//     therefore read the entries it was handed with no lock: entries beyond
//     them may be appended, into the same array or a new one, but none it
//     reads is written until it leaves.
//   - One walk at a time: walking is a turn (state.go), taken by enter
//     (under the mutex) and let go by leave (without it). A CheckAndComplete,
//     Advance or HandOff that finds it taken asks for one more round and
//     returns; leave then hands the walk the entries once more rather than
//     letting go (a round over every operation if any but a HandOff asked).
//     So no request for a walk is lost, and an operation watched under this
//     key alone (solo, in the block at Op) is tried by nobody but this
//     list's walk.
//   - Entries are in the order their operations were watched (a level watch:
//     the order Advance reached it), and stay so: compaction keeps the live
//     ones in order, and a reused operation's next use is a new entry at
//     the end. Every walk reads them in that order: first come, first
//     served.
//   - A drop that finds the list walked leaves compacting to the walk, which
//     checks the count after it lets go (leave): one of the two sees the
//     other, so no list is left mostly dead.
//   - An empty list stays in the map for reuse until the shard's sweep. A
//     list dropped from the map (sweep, or remove) may still be walked; its
//     operations are in no other list of the key. remove zeroes its count,
//     so what its operations drop afterwards counts for nothing. It never
//     holds an entry again: remove empties it, the sweep drops only empty
//     lists, and entries are added only to the list the map holds (watchAt,
//     reach), so compaction, which finds entries to remove, works on a list
//     the map holds, and removed counts it empty without a lookup.
//   - lv, made by the first watch at a level or Advance of the key, holds
//     the operations watched at a level the key has not reached (levels.go),
//     a heap never walked in place; reach moves those whose level is
//     reached to entries. count covers both parts, and so does a drop.
//     lv.high, the highest level reported, only grows, and is forgotten
//     with the list. lv also holds the solo uses relayed to the walk with an
//     outcome left for it (relay.go), a rare path, which the walk applies
//     between its tries and as it leaves; take keeps them.
//   - The walking word holds, beside the turn's bits, listLeveled (lv's heap
//     holds a waiting operation: drops compact sooner; set and cleared
//     under the mutex), listRelayed (lv.relayed is not empty) and
//     listAgainAll (state.go).
//
// The words every drop and walk touch (count, walking, entries) come first,
// on one cache line. For an int key the list's fields fit 64 bytes and its
// room the next 64, so that lists are line-aligned and never share one: W5
// at 10,000 keys holds 10,000 of them. head lives in the walking word's high
// bits (state.go) for that: as a field of its own it made the list 72 bytes
// (before the room), the 80-byte size class, whose lists straddle lines (W8
// at 8 goroutines, one key each, 1.067x the time per add+complete).
type watchList[K comparable] struct {
	count   atomic.Int64 // len(ops())+len(levels) and the dead among them; see split
	walking atomic.Int64 // one walk at a time, and its flags (state.go)
	entries []entry      // entries[head():] are the list's; see head
	lv      *levelState  // nil until the key's first level watch or Advance
	key     K
	shard   *shard[K]
	room    [2]entry // the first array of entries: see newWatchList
}

// newWatchList returns a new list whose entries start in its room, an array
// of two on the line after the list's first: a list that never holds more
// than two operations at once allocates nothing beyond itself, and its walk
// reads two adjacent lines rather than two apart. (W5 at 100,000 keys, where
// most lists hold one or two: 0.936x the CPU per request of a separate first
// array, over 8 alternated pairs.)
func newWatchList[K comparable](key K, sh *shard[K]) *watchList[K] {
	l := &watchList[K]{key: key, shard: sh}
	l.entries = l.room[:0]
	return l
}

// push appends e to the entries. Once an append moves them to an array of
// their own, the room holds copies of entries that may end, so it is
// cleared, unless a walk may be reading it: then compaction clears it later
// (clearRoom). The caller holds the shard's mutex.
func (l *watchList[K]) push(e entry) {
	moved := len(l.entries) == cap(l.entries)
	l.entries = append(l.entries, e)
	if moved && !l.walked() {
		l.clearRoom()
	}
}

// clearRoom clears the room if the entries have left it, so that it keeps no
// operation past its end. The caller holds the shard's mutex and either
// holds the walk or has seen that nobody does: a walk may read the room.
func (l *watchList[K]) clearRoom() {
	inRoom := cap(l.entries) > 0 && &l.entries[:1][0] == &l.room[0]
	if !inRoom && (l.room[0].op != nil || l.room[1].op != nil) { // a hand-off may have cleared the first alone
		clear(l.room[:])
	}
}

// waiting returns the heap of operations waiting for a level, nil if none.
// The caller holds the shard's mutex.
func (l *watchList[K]) waiting() minheap.Heap[entry] {
	if l.lv == nil {
		return nil
	}
	return l.lv.levels
}

// levelsMade returns lv, making it if need be. The caller holds the shard's
// mutex.
func (l *watchList[K]) levelsMade() *levelState {
	if l.lv == nil {
		l.lv = &levelState{high: noLevel}
	}
	return l.lv
}

// vacant reports whether the list holds no operation. It reads leveled, on
// the list's first cache line, rather than follow lv to the heap: leveled is
// set exactly while the heap holds an entry. The caller holds the shard's
// mutex.
func (l *watchList[K]) vacant() bool { return len(l.entries) == l.head() && !l.leveled() }

// ops returns the list's entries, in the order they were watched. The caller
// holds the shard's mutex.
func (l *watchList[K]) ops() []entry { return l.entries[l.head():] }

// entry is an operation in a watch list, with the Operation that embeds it
// and the use (generation) it was made for. The walk reads impl here, in
// order through the array, so the only part of the operation itself that a
// try reads is Op's last word (state), usually on the cache line TryComplete
// reads.
type entry struct {
	impl Operation
	op   *Op
	gen  gen
}

// live reports whether the entry's use is the operation's current one and
// pending.
func (e entry) live() bool { return e.op.live(e.use()) }

// oneEntry is one entry in watchList.count, whose high 32 bits count the
// entries and low 32 bits the dead among them, so that a drop reads both in
// the one atomic add that counts it.
const oneEntry = 1 << 32

// split decodes a watchList.count: n entries, of which dead are dead. The dead
// count is signed, and a negative one borrows from the high half as two's
// complement does, so subtracting it first gives n back.
func split(count int64) (n, dead int64) {
	dead = int64(int32(count))
	return (count - dead) >> 32, dead
}

// anyDead reports whether a list with this count holds a dead entry.
func anyDead(count int64) bool {
	_, dead := split(count)
	return dead > 0
}

// link appends o (with mark: ringsMark or none). The caller holds the
// shard's mutex.
func (l *watchList[K]) link(o *Op, mark gen) {
	l.makeRoom()
	l.push(entry{o.impl, o, o.gen() | mark})
	l.count.Add(oneEntry)
}

// linkAt links o to wait until the key reaches level: among the plain
// entries if it has already, else in the heap. The caller holds the shard's
// mutex.
func (l *watchList[K]) linkAt(o *Op, level int64) {
	if level == noLevel || l.lv != nil && level <= l.lv.high {
		l.link(o, 0)
		return
	}
	lv := l.levelsMade()
	lv.seq++
	lv.levels.PushInOrder(level, lv.seq, entry{o.impl, o, o.gen()})
	l.setLeveled(true)
	l.count.Add(oneEntry)
}

// reach records that the key is at level and, if that is higher than before,
// moves the operations waiting for it from the heap to the end of entries,
// lowest level first, and in the order they were watched among equal levels.
// The caller holds the shard's mutex.
func (l *watchList[K]) reach(level int64) {
	if level == noLevel {
		return
	}
	lv := l.levelsMade()
	if level <= lv.high {
		return
	}
	lv.high = level
	for len(lv.levels) > 0 && lv.levels[0].Key <= level {
		l.makeRoom()
		l.push(lv.levels.Pop().Value)
	}
	if len(lv.levels) == 0 {
		l.setLeveled(false)
	}
}

// walkable returns what a walk that tries every operation of the key reads:
// entries itself, or with a heap, a copy of both. The caller holds the
// shard's mutex.
func (l *watchList[K]) walkable() []entry {
	waiting := l.waiting()
	if len(waiting) == 0 {
		return l.ops()
	}
	ops := make([]entry, 0, len(l.entries)-l.head()+len(waiting))
	ops = append(ops, l.ops()...)
	for _, e := range waiting {
		ops = append(ops, e.Value)
	}
	return ops
}

// shrunk returns s, or s moved to an array twice its length if its own is
// mostly unused, so that a list or heap that was once long lets go of the
// memory once its operations have ended.
func shrunk[S ~[]E, E any](s S) S {
	if c := cap(s); c > 64 && len(s) < c/4 {
		return append(make(S, 0, max(2*len(s), 16)), s...)
	}
	return s
}

// drop implements place. A list with a heap compacts once an eighth of its
// operations are dead rather than half: its waiting operations are not walked,
// so nothing else would let go of the ended ones (their expiries, mostly)
// until their level came.
func (l *watchList[K]) drop() {
	sched.At("count add")
	if l.crowded(l.count.Add(1)) && !l.walked() {
		l.compact(true)
	}
}

// crowded reports whether a list with this count should be compacted whole:
// its dead entries outnumber its live ones or, with a heap, are more than an
// eighth of them. (It reads leveled only past an eighth.)
func (l *watchList[K]) crowded(count int64) bool {
	n, dead := split(count)
	return 8*dead > n && (2*dead > n || l.leveled())
}

// compact removes the dead entries (with all, from the heap too) unless a
// walk holds the list (its leave compacts then).
func (l *watchList[K]) compact(all bool) {
	l.shard.mu.Lock()
	defer l.shard.mu.Unlock()
	if !l.walked() {
		l.compactLocked(all)
	}
}

// compactLocked removes the dead entries, keeping the live ones in order, and
// moves them to an array twice their size if the old one is mostly unused;
// with all, it filters the heap too. The caller holds the shard's mutex and
// either holds the walk or has seen that nobody does.
func (l *watchList[K]) compactLocked(all bool) {
	if l.vacant() {
		return
	}
	live := l.entries[:0]
	for _, e := range l.ops() {
		if e.live() {
			live = append(live, e)
		}
	}
	removed := len(l.entries) - l.head() - len(live)
	clearEntries(l.entries[len(live):])
	l.entries = shrunk(live)
	l.clearRoom()
	l.setHead(0)
	if lv := l.lv; all && lv != nil && len(lv.levels) > 0 {
		removed += lv.filter()
		l.setLeveled(len(lv.levels) > 0)
	}
	l.removed(removed)
}

// clearEntries zeroes es, so that the list holds no ended operation: entry by
// entry when es is short, as after most walks, for the runtime's clear, a call
// that checks the write barrier first, costs more than a few stores.
func clearEntries(es []entry) {
	if len(es) > 4 {
		clear(es)
		return
	}
	for i := 0; i < len(es); i++ { // not a range loop, which compiles to clear's call
		es[i] = entry{}
	}
}

// compactFront removes the dead among the first n entries, the ones a
// hand-off has just passed, and keeps the live ones in order, where they
// were: so a hand-off costs what it passed, not the list's length. The caller
// holds the shard's mutex and either holds the walk or has seen that nobody
// does.
func (l *watchList[K]) compactFront(n int) {
	es := l.ops()
	n = min(n, len(es))
	k := n // es[k:n] will hold the live ones
	for i := n - 1; i >= 0; i-- {
		if es[i].live() {
			k--
			es[k] = es[i]
		}
	}
	clear(es[:k])
	head := l.head() + k
	l.setHead(head)
	if 2*head > len(l.entries) { // more than half passed
		l.shift()
	}
	l.removed(k)
}

// trimFront removes the dead entries at the front of the list, those a
// hand-off completed (it left them to the next walk), up to the first live
// one: a cost of what the hand-off passed. The caller holds the shard's
// mutex and has seen that no walk holds the list.
func (l *watchList[K]) trimFront() {
	es := l.ops()
	k := 0
	for k < len(es) && !es[k].live() {
		k++
	}
	if k > 0 {
		l.compactFront(k)
	}
}

// makeRoom, before an append, moves the entries down to the start of their
// array if it is full, at least a quarter of it was passed, and no walk reads
// it, so that a list used as a queue keeps its array (each entry moves once
// per quarter of the list appended, at most). The caller holds the shard's
// mutex.
func (l *watchList[K]) makeRoom() {
	if head := l.head(); len(l.entries) == cap(l.entries) && 4*head >= len(l.entries) && head > 0 && !l.walked() {
		l.shift()
	}
}

// shift moves the entries from head down to the start of their array. The
// caller holds the shard's mutex and either holds the walk or has seen that
// nobody does.
func (l *watchList[K]) shift() {
	rest := copy(l.entries, l.ops())
	clear(l.entries[rest:])
	l.entries = l.entries[:rest]
	l.setHead(0)
}

// removed accounts for n entries compaction took out, and lets the shard
// forget the list once it is empty. The caller holds the shard's mutex.
func (l *watchList[K]) removed(n int) {
	if n == 0 {
		return
	}
	l.count.Add(-int64(n) * (oneEntry + 1))
	sh := l.shard
	if l.vacant() { // the map holds it: a list out of the map holds no entries (see the invariants)
		sh.empty++
		if sh.empty > minEmpty && 2*sh.empty > len(sh.lists) {
			sh.sweep()
		}
	}
}
