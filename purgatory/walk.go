package purgatory

import "github.com/purgatory-go/purgatory/internal/sched"

// The walks. A walk ends the operations of one key, one after another, with
// no library lock held: CheckAndComplete and Advance try them (every one, or
// those the key's level has made ready), HandOff tries them until one says
// no, CancelForKey and ForceCompleteForKey end them with an outcome. A walk
// that tries begins with enter, which hands it the key's list and its turn,
// and ends with leave; a key has one such walk at a time. Every walk reads a
// key's operations in the order they were watched.

// CheckAndComplete tries to complete every operation watched under key, with
// no purgatory lock held, in the order they were watched, and returns how many
// this call completed (Kafka's checkAndComplete). It walks the key's list in
// place; the operations it completes no longer count in Watched when it
// returns, and their places in the key's list are reclaimed as the walk ends,
// in one critical section. An operation that another goroutine is trying at
// that moment is not waited for: that goroutine tries it once more. Nor is a
// walk of the same key under way, on another goroutine or further up this one
// (a TryComplete that checks its own key): that walk is asked to go over the
// key once more before it ends, and this call returns 0. It returns 0 after
// Close.
//
// An operation parked under key alone (TryCompleteElsePark or Wait with one
// key) is not tried here: this call wakes its waiter, with one close of a
// channel for all of the key's, and the waiter tries it in Parked.Wait, on
// its own goroutine, as a goroutine woken by a condition variable checks its
// condition (bell.go). So this call pays one close and a pass over their
// entries, the tries run on as many cores as there are waiters to wake, and
// this call neither waits for nor counts them.
//
// If a callback panics (TryComplete, OnComplete, OnExpiration or the
// Observer), the operations after it are still tried, and then the panic
// continues. An operation whose TryComplete panicked stays watched, with its
// timeout running; one whose OnComplete panicked has ended and is counted.
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	return p.walkKey(key, noLevel, walkAll)
}

// HandOff gives what has just become available under key (one item pushed to
// a queue, a slot freed) to the operations waiting for it, first come first
// served: it tries the key's operations in the order they were watched,
// completes each whose TryComplete returns true, and stops at the first that
// returns false. It returns how many this call completed. A panic in a
// callback (TryComplete, or the OnComplete, OnExpiration or Observer of an
// operation it ended) stops it there too, and continues once the rounds that
// other walks of the key asked for meanwhile have run; an operation whose
// TryComplete panicked stays watched. A TryComplete that passes may take the item it
// completes with: the operation then ends Completed whatever else happens
// meanwhile (see Operation.TryComplete), so an item handed off is never lost
// to a racing timeout.
//
// It passes over ended operations, those waiting for a level the key has not
// reached, and those that another goroutine is trying at that moment (that
// goroutine tries once more); it never waits. A walk of the key under way, on
// another goroutine or further up this one, is asked for one more round and
// this call returns 0: that round stops at its first "no" too, unless a
// CheckAndComplete or Advance asked for it as well. Its cost is the
// operations it passes and completes, not those watched: call it once for
// each item made available (or once for many: it goes on until a try says
// no). It returns 0 after Close.
func (p *Purgatory[K]) HandOff(key K) int {
	return p.walkKey(key, noLevel, walkHandOff)
}

// Advance reports that key has reached level and tries, with no purgatory
// lock held, the operations this makes ready: those watched at a level up to
// level under key, lowest level first (in the order watched among equal
// levels), after the key's plain watchers (and the operations whose level
// came earlier but whose TryComplete said "not yet"), so that one call per
// event serves both kinds. It returns how many this call completed. A key's
// level only grows: an Advance at or below the highest level reported for key
// tries the plain watchers only. A counter that starts again from zero (a
// partition recreated, say) is the caller's to handle, with CancelForKey or
// ForceCompleteForKey on the old key. The level of a key nobody watches is
// not kept: an operation watched later at a level already passed is tried at
// once by TryCompleteElseWatchAt, and at the key's next Advance.
//
// As CheckAndComplete: a walk of the key under way on another goroutine (or
// further up this one) is asked for one more pass and this call returns 0
// (the level is recorded all the same, at once: that pass tries what it
// reached);
// a panic in a callback lets the walk finish before it continues; after
// Close it returns 0; an operation parked under key alone is woken to try
// itself, and not counted.
func (p *Purgatory[K]) Advance(key K, level int64) int {
	return p.walkKey(key, level, walkReady)
}

// A walk's kind: what it reads, and whether it stops at its first "no".
type walkKind uint8

const (
	walkAll     walkKind = iota // CheckAndComplete: every operation, level heap included
	walkReady                   // Advance: the entries, which its level moved the ready ones to
	walkHandOff                 // HandOff: the entries, until a try says no
)

// walkKey is CheckAndComplete, Advance and HandOff: it records that key is at
// level (noLevel: no news of its level), walks what kind reads, and returns
// how many it completed.
func (p *Purgatory[K]) walkKey(key K, level int64, kind walkKind) int {
	p.mustBeNew()
	p.watchers.mustHashKey(key)
	if p.isClosed() {
		return 0
	}
	l, ops := p.watchers.enter(key, level, kind)
	if l == nil {
		return 0
	}
	var w tryWalk[K] // set field by field: a composite literal is built aside and copied, which stalls the copy's loads
	w.ops, w.list, w.handOff = ops, l, kind == walkHandOff
	if !w.handOff {
		prefetch(w.ops)
	}
	defer w.unwind()
	w.run()
	return w.won
}

// CancelForKey removes every operation watched under key and cancels them
// without completing them: their timeouts stop, they leave their other keys'
// watch lists, OnComplete does not run and Outcome reports Cancelled (Kafka's
// cancelForKey). It returns the operations it cancelled, in no particular
// order; none for a key nobody watches. An operation that a try holds at that
// moment is among them, though it ends only when that try returns: Completed,
// with OnComplete, if the try passed, else Cancelled. If the Observer panics,
// the remaining operations are still cancelled before the panic continues.
func (p *Purgatory[K]) CancelForKey(key K) []Operation {
	p.mustBeNew()
	p.watchers.mustHashKey(key)
	w := endWalk{walk: walk{ops: p.watchers.remove(key)}, outcome: Cancelled}
	defer w.unwind()
	w.run()
	cancelled := make([]Operation, w.won)
	for i, e := range w.ops[:w.won] {
		cancelled[i] = e.impl
	}
	return cancelled
}

// ForceCompleteForKey ends every operation watched under key with Outcome
// Forced, running each one's OnComplete on the calling goroutine ("flush this
// tenant": answer everything waiting on it now), and returns how many this
// call ended or left Forced to the try under way. It is ForceComplete for each
// operation under key: an operation that another path ends meanwhile (its
// timeout, Close) ends once, by whichever path wins, and does not count here;
// one that a try holds at that moment counts, and ends when that try returns,
// Completed if it passed, else Forced, with OnComplete on the trying
// goroutine. The operations leave their other keys' watch lists and stop
// their timeouts, and are counted under Forced in Stats and the metrics. The
// key's list is taken whole first, as CancelForKey takes it, so a
// CheckAndComplete of the key running at the same time finishes its own pass
// and then finds the key empty.
//
// OnComplete runs inside this call: one that blocks holds up the rest (see
// [StuckAfter]). If a callback panics (OnComplete or the Observer), the
// remaining operations are still ended before the panic continues.
func (p *Purgatory[K]) ForceCompleteForKey(key K) int {
	p.mustBeNew()
	p.watchers.mustHashKey(key)
	w := endWalk{walk: walk{ops: p.watchers.remove(key)}, outcome: Forced}
	defer w.unwind()
	w.run()
	return w.won
}

// prefetch brings each operation's cache lines in before the tries. Each try's
// first read of an operation is a cache miss, and a try is long enough that
// the CPU never has two of those in flight; a loop this short overlaps them
// all, and the tries then hit the cache. (BenchmarkCheckWalk: about a third
// of the time per try.) A hand-off, which reads only as far as its first
// "no", does without.
func prefetch(ops []entry) {
	for _, e := range ops {
		e.op.touch()
	}
}

// walk is where a walk of one key's operations stands: ops, read in order
// from next, with no library lock held, and won, how many it ended. A walk
// that tries (tryWalk: CheckAndComplete, Advance, HandOff) holds its key's
// list and its turn and goes over it again as often as other walks of the key
// ask it to; a walk that ends (endWalk: CancelForKey, ForceCompleteForKey)
// reads a copy of a list it removed from the map, once, and needs neither.
//
// Each walk's run is deferred once more, as unwind, by the method that runs
// it: a callback that panics, or calls runtime.Goexit, unwinds through
// unwind, which lets go of what the walk held and walks the rest before the
// panic (the last one, if a later operation panics too) or the Goexit goes
// on. So one operation's panic does not hold back the others, a TryComplete
// that ends its goroutine (t.FailNow in a test's TryComplete, say) leaves
// neither its try bit nor its key's walk held, and the tries themselves stay
// free of defers. TestTryCompletePanicInCheckAndComplete and
// TestGoexitInTryCompleteDuringCheck (panic_test.go) show both.
type walk struct {
	ops  []entry
	next int
	won  int
}

// tryWalk is a walk that tries its key's operations. It is generic in the
// key's type, as its list is, so that it calls the list's methods directly,
// not through an interface. (The in-process harness gave 0.92x the time of
// W8's reused loop; W8 itself showed no change, and
// BenchmarkWatchCompleteReused about 0.97x for this and the two changes
// beside it: docs/benchmarks.md, Trials.)
type tryWalk[K comparable] struct {
	walk
	holding entry         // the operation whose try bit this walk holds, if any
	list    *watchList[K] // the key's list this walk holds, until it leaves it
	handOff bool          // this round stops at its first "no"
}

// run tries the operations, and goes over the list again for as long as
// other walks ask it to before it leaves; then it applies the outcomes relayed
// to it.
func (w *tryWalk[K]) run() {
	for w.list != nil {
		w.tryEach()
		ops, again, all := w.list.leave(w.handOff, w.next)
		w.ops, w.next = ops, 0
		if !again {
			l := w.list
			w.list = nil
			if l.relayedAny() { // takeRelayed's own first look, without the call
				applyRelayed(l.takeRelayed(true)) // after leave let go: see queueRelay
			}
			return
		}
		w.handOff = !all
		if all {
			prefetch(w.ops)
		}
	}
}

// tryEach tries each operation from next, completes those that pass, and
// applies the outcomes handed to the walk after each try, so that one waits
// for at most one try. A hand-off round stops at its first "no". The
// commonest case, a solo use whose try says no, is the loop's own: one load
// of the use's state, the try, one load of the list's word.
func (w *tryWalk[K]) tryEach() {
	for w.next < len(w.ops) {
		e := w.ops[w.next]
		w.next++
		var no bool
		s := e.op.load() // not a method of Op's that returns both: it would not inline
		if st := walkStep(s, e.gen); st != stepSolo {
			if st == stepDead && e.gen&ringsMark != 0 { // its waiter tries it (bell.go)
				st, e = w.rung(s, e)
			}
			no = w.try(e, st)
		} else if lockedIn(s) {
			no = w.trySolo(e, e.op.runTryLocked(e.impl))
		} else if e.impl.TryComplete() {
			w.trySolo(e, true)
		} else {
			// No, and an outcome left meanwhile was handed to this walk,
			// which applies it below.
			no = true
		}
		if w.list.relayedAny() { // uses handed to the walk since the last look
			applyRelayed(w.list.takeRelayed(false))
		}
		if no && w.handOff {
			return
		}
	}
}

// trySolo ends the walk's try of e's solo use, made without the try bit,
// which returned ok (the steps at Op.relay), and reports whether it said
// no.
func (w *tryWalk[K]) trySolo(e entry, ok bool) (no bool) {
	switch r, out := e.op.soloTried(e.gen, ok); r {
	case settleWon:
		w.won++
		e.op.complete(e.impl, out)
	case settleApplied:
		e.op.complete(e.impl, out)
	}
	return !ok
}

// try does what step st says with e's use, when it is not a solo try: passes
// it if it has ended, applies an outcome left on it, or takes the try bit and
// tries it, completing it if it passes or with an outcome left for the try.
// It reports whether it was tried and said no.
func (w *tryWalk[K]) try(e entry, st step) (no bool) {
	o, impl := e.op, e.impl
	switch st {
	case stepDead:
		return false
	case stepApply:
		if out := o.apply(e.gen); out != Pending {
			o.complete(impl, out)
		}
		return false
	}
	switch o.acquire(e.gen) {
	case acquirePassed:
		return false // ended, or its holder tries it once more
	case acquireLeft:
		if out := o.apply(e.gen); out != Pending {
			o.complete(impl, out)
		}
		return false
	}
	w.holding = e
	r, out, ok := o.tryHeld(impl, o.runTry(impl), 0)
	w.holding = entry{}
	switch r {
	case settleWon:
		w.won++
		o.complete(impl, out)
	case settleApplied:
		o.complete(impl, out)
	}
	return !ok
}

// unwind is deferred by run's caller (see walk): after a walk that ran to its
// end it does nothing; after a callback panicked or called Goexit, it lets go
// of the try bit if TryComplete was the one (completing the use with an
// outcome left for that try), and walks the rest: the rest of a round over
// every operation, but no more of a hand-off's, which stops at a panic as at
// a "no". Further rounds asked for meanwhile still run.
func (w *tryWalk[K]) unwind() {
	held := w.holding
	w.holding = entry{}
	if w.handOff {
		w.next = len(w.ops)
	}
	if held.op == nil && w.next >= len(w.ops) && w.list == nil {
		return
	}
	defer w.unwind()
	if held.op != nil {
		held.op.abandonTry(held.impl, false)
	}
	w.run()
}

// endWalk is a walk that ends every operation with outcome.
type endWalk struct {
	walk
	outcome Outcome
}

// run ends each operation from next that no other path has ended, or leaves
// the outcome to the try under way, and moves those to the front of ops
// (CancelForKey returns them).
func (w *endWalk) run() {
	for w.next < len(w.ops) {
		e := w.ops[w.next]
		w.next++
		if e.op.endAt(e.use(), e.impl, w.outcome) {
			w.ops[w.won] = e
			w.won++
		}
	}
}

// unwind is deferred by run's caller (see walk): it ends the rest after a
// callback panicked.
func (w *endWalk) unwind() {
	if w.next < len(w.ops) {
		defer w.unwind()
		w.run()
	}
}

// enter begins a walk of key's list, first recording that key is at level
// (reach; noLevel for none): it returns the list, whose turn the walk holds
// until it leaves it, and what the walk reads: the list's entries in place,
// the operations whose level the key has reached included, or for walkAll a
// copy of those and the ones still waiting for a level. It returns a nil list
// if there is nothing to read, or if another walk of the key is under way:
// that walk is then asked to go round once more.
func (s *shards[K]) enter(key K, level int64, kind walkKind) (*watchList[K], []entry) {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.list(key, s.word())
	if l == nil {
		return nil, nil
	}
	if kind == walkHandOff {
		if !l.walked() {
			l.trimFront() // what the last hand-off completed, left for this one
		}
	} else {
		l.ring() // the parked waiters try their own (bell.go)
	}
	l.reach(level)
	ops := l.ops()
	if kind == walkAll {
		ops = l.walkable()
	}
	if len(ops) == 0 {
		return nil, nil
	}
	if !l.take(kind != walkHandOff) {
		return nil, nil // the walk under way goes round once more
	}
	return l, ops
}

// leave ends a round of a walk, which read passed entries (a hand-off's, if
// handOff), and returns the entries the next round reads, if another walk
// asked for one (again; all: over every operation). A round that leaves
// compacts what it passed if any entry is dead: a round over every
// operation compacts the whole list (it has just read it all), and its heap
// too if the list is crowded; a hand-off's compacts the whole list only if
// the dead outnumber the live, and leaves the entries it completed at the
// front to the next hand-off's enter (trimFront), which holds the shard's
// mutex anyway, so that a hand-off takes the mutex once (a walk over every
// operation passes them, and compacts the list as it leaves). Drops that
// found the list walked left compacting to it. It does so after it lets go
// of the list, so that a drop either sees the walk over (and compacts
// itself) or is seen here. If another walk asked for one more round, it
// keeps the turn and compacts under the mutex instead, and returns what that
// round reads: for a round over every operation, all of them (a
// CheckAndComplete's round tries the heap too).
func (l *watchList[K]) leave(handOff bool, passed int) ([]entry, bool, bool) {
	again, all := l.letGo()
	sh := l.shard
	if !again {
		sched.At("count load")
		if count := l.count.Load(); anyDead(count) && (!handOff || l.crowded(count)) {
			sh.mu.Lock()
			if !l.walked() {
				l.tidy(handOff, passed)
			}
			sh.mu.Unlock()
		}
		return nil, false, false
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l.tidy(handOff, passed)
	if all {
		return l.walkable(), true, true
	}
	return l.ops(), true, false
}

// tidy compacts after a round (see leave). The caller holds the shard's
// mutex and the walk, or has seen that nobody holds it.
func (l *watchList[K]) tidy(handOff bool, passed int) {
	count := l.count.Load()
	switch {
	case !anyDead(count):
	case !handOff:
		l.compactLocked(l.crowded(count))
	default:
		l.compactFront(passed)
		if count := l.count.Load(); l.crowded(count) {
			l.compactLocked(true)
		}
	}
}
