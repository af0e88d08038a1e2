package purgatory

// The walks. A walk ends the operations of one key, one after another, with
// no library lock held: CheckAndComplete and Advance try them (every one, or
// those the key's level has made ready), CancelForKey and ForceCompleteForKey
// end them with an outcome. A walk that tries begins with enter, which hands
// it the key's list and its turn, and ends with leave; a key has one such
// walk at a time.

// CheckAndComplete tries to complete every operation watched under key, with
// no purgatory lock held, and returns how many this call completed (Kafka's
// checkAndComplete). It walks the key's list in place; the operations it
// completes no longer count in Watched when it returns, and their places in
// the key's list are reclaimed as the walk ends, in one critical section. An
// operation that another goroutine is trying at that moment is not waited for:
// that goroutine tries it once more. Nor is a walk of the same key under way,
// on another goroutine or further up this one (a TryComplete that checks its
// own key): that walk is asked to go over the key once more before it ends,
// and this call returns 0. It returns 0 after Close.
//
// If a callback panics (TryComplete, OnComplete, OnExpiration or the
// Observer), the operations after it are still tried, and then the panic
// continues. An operation whose TryComplete panicked stays watched, with its
// timeout running; one whose OnComplete panicked has ended and is counted.
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	return p.walkKey(key, noLevel, true)
}

// Advance reports that key has reached level and tries, with no purgatory
// lock held, the operations this makes ready: those watched at a level up to
// level under key, lowest level first, after the key's plain watchers (and
// the operations whose level came earlier but whose TryComplete said "not
// yet"), so that one call per event serves both kinds. It returns how many
// this call completed. A key's level only grows: an Advance at or below the
// highest level reported for key tries the plain watchers only. A counter
// that starts again from zero (a partition recreated, say) is the caller's to
// handle, with CancelForKey or ForceCompleteForKey on the old key. The level
// of a key nobody watches is not kept: an operation watched later at a level
// already passed is tried at once by TryCompleteElseWatchAt, and at the
// key's next Advance.
//
// As CheckAndComplete: a walk of the key under way on another goroutine (or
// further up this one) is asked for one more pass and this call returns 0;
// a panic in a callback lets the walk finish before it continues; after
// Close it returns 0.
func (p *Purgatory[K]) Advance(key K, level int64) int {
	return p.walkKey(key, level, false)
}

// walkKey is CheckAndComplete (all) and Advance: it records that key is at
// level (noLevel: no news of its level), walks the operations this makes
// ready, or with all every operation of the key, and returns how many it
// completed.
func (p *Purgatory[K]) walkKey(key K, level int64, all bool) int {
	p.mustBeNew()
	p.watchers.checkKey(key)
	if p.closed.Load() {
		return 0
	}
	l, ops := p.watchers.enter(key, level, all)
	if l == nil {
		return 0
	}
	w := tryWalk{walk: walk{ops: ops}, list: l}
	prefetch(w.ops)
	defer w.finish()
	w.run()
	return w.won
}

// CancelForKey removes every operation watched under key and cancels them
// without completing them: their timeouts stop, they leave their other keys'
// watch lists, OnComplete does not run and Outcome reports Cancelled (Kafka's
// cancelForKey). It returns the operations it cancelled, in no particular
// order; none for a key nobody watches. If the Observer panics, the remaining
// operations are still cancelled before the panic continues.
func (p *Purgatory[K]) CancelForKey(key K) []Operation {
	p.mustBeNew()
	p.watchers.checkKey(key)
	w := endWalk{walk: walk{ops: p.watchers.remove(key)}, outcome: Cancelled}
	defer w.finish()
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
// call ended. It is ForceComplete for each operation under key: an operation
// that another path ends meanwhile (a walk of the key trying it, its timeout,
// Close) ends once, by whichever path wins, and does not count here. The
// operations leave their other keys' watch lists and stop their timeouts, and
// are counted under Forced in Stats and the metrics. The key's list is taken
// whole first, as CancelForKey takes it, so a CheckAndComplete of the key
// running at the same time finishes its own pass and then finds the key
// empty.
//
// OnComplete runs inside this call: one that blocks holds up the rest (see
// [StuckAfter]). If a callback panics (OnComplete or the Observer), the
// remaining operations are still ended before the panic continues.
func (p *Purgatory[K]) ForceCompleteForKey(key K) int {
	p.mustBeNew()
	p.watchers.checkKey(key)
	w := endWalk{walk: walk{ops: p.watchers.remove(key)}, outcome: Forced}
	defer w.finish()
	w.run()
	return w.won
}

// prefetch brings each operation's cache lines in before the tries. Each try's
// first read of an operation is a cache miss, and a try is long enough that
// the CPU never has two of those in flight; a loop this short overlaps them
// all, and the tries then hit the cache. (BenchmarkCheckWalk: about a third
// of the time per try.)
func prefetch(ops []entry) {
	for _, e := range ops {
		e.op.touch()
	}
}

// walk is where a walk of one key's operations stands: ops, read in order
// from next, with no library lock held, and won, how many it ended. A walk
// that tries (tryWalk: CheckAndComplete, Advance) holds its key's list and
// its turn and goes over it again as often as other walks of the key ask it
// to; a walk that ends (endWalk: CancelForKey, ForceCompleteForKey) reads a
// copy of a list it removed from the map, once, and needs neither.
//
// Each walk's run is deferred once more, as finish, by the method that runs
// it: a callback that panics, or calls runtime.Goexit, unwinds through
// finish, which lets go of what the walk held and walks the rest before the
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

// tryWalk is a walk that tries its key's operations.
type tryWalk struct {
	walk
	holding *Op      // the operation whose try bit this walk holds, if any
	list    walkList // the key's list this walk holds, until it leaves it
}

// walkList is a key's watch list as a walk holds it, whatever the key's type.
type walkList interface {
	// leave ends the walk of the list and compacts it if any entry is dead,
	// unless another walk asked for one more pass: then it compacts, returns
	// the list's entries and true, and the walk goes on with them.
	leave() (ops []entry, again bool)
}

// run tries the operations, and goes over the list again for as long as
// other walks ask it to before it leaves.
func (w *tryWalk) run() {
	for {
		w.tryEach()
		if w.list == nil {
			return
		}
		ops, again := w.list.leave()
		w.ops, w.next = ops, 0
		if !again {
			w.list = nil
			return
		}
		prefetch(w.ops)
	}
}

// tryEach tries each operation from next, and completes those that pass.
func (w *tryWalk) tryEach() {
	for w.next < len(w.ops) {
		e := w.ops[w.next]
		w.next++
		o, impl := e.op, e.impl
		if o.walkOnly(e.gen) { // no try bit to take (operation.go)
			if o.check(impl) && o.claimAt(e.gen, Completed) {
				w.won++
				o.complete(impl, Completed, true)
			}
			continue
		}
		if !o.acquire(e.gen) {
			continue // its holder tries it once more, or e is dead
		}
		w.holding = o
		won := o.tryHeld(impl, o.check(impl), false)
		w.holding = nil
		if won {
			w.won++
			o.complete(impl, Completed, true)
		}
	}
}

// finish is deferred by run's caller (see walk): after a walk that ran to
// its end it does nothing; after a callback panicked or called Goexit, it
// lets go of the try bit if TryComplete was the one, and walks the rest.
func (w *tryWalk) finish() {
	if o := w.holding; o != nil {
		w.holding = nil
		o.abandon(false)
	}
	if w.next < len(w.ops) || w.list != nil {
		defer w.finish()
		w.run()
	}
}

// endWalk is a walk that ends every operation with outcome.
type endWalk struct {
	walk
	outcome Outcome
}

// run ends each operation from next that no other path has ended, and moves
// those it ended to the front of ops (CancelForKey returns them).
func (w *endWalk) run() {
	for w.next < len(w.ops) {
		e := w.ops[w.next]
		w.next++
		if e.op.endAt(e.gen, e.impl, w.outcome) {
			w.ops[w.won] = e
			w.won++
		}
	}
}

// finish is deferred by run's caller (see walk): it ends the rest after a
// callback panicked.
func (w *endWalk) finish() {
	if w.next < len(w.ops) {
		defer w.finish()
		w.run()
	}
}

// enter begins a walk of key's list, first recording that key is at level
// (reach; noLevel for none): it returns the list, whose turn the walk holds
// until it leaves it, and what the walk reads: the list's entries in place,
// the operations whose level the key has reached included, or with all a copy
// of those and the ones still waiting for a level (CheckAndComplete). It
// returns a nil list if there is nothing to read, or if another walk of the
// key is under way: that walk is then asked to go round once more.
func (s *shards[K]) enter(key K, level int64, all bool) (*watchList[K], []entry) {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lists[key]
	if l == nil {
		return nil, nil
	}
	l.reach(level)
	ops := l.entries
	if all {
		ops = l.walkable()
	}
	if len(ops) == 0 {
		return nil, nil
	}
	if !l.walking.take(0, 0, 0) {
		return nil, nil // the walk under way goes round once more
	}
	return l, ops
}

// leave implements walkList. A walk that leaves compacts the list's entries
// if any is dead (the walk has just read them all), and its heap too if the
// list is crowded: drops that found the list walked left compacting to it.
// It does so after it lets go of the list, so that a drop either sees the
// walk over (and compacts itself) or is seen here. If another walk asked for
// one more round, it keeps the turn and compacts under the mutex instead, and
// returns what the round reads: a CheckAndComplete's round tries the heap
// too, so it reads all.
func (l *watchList[K]) leave() ([]entry, bool) {
	if !l.walking.release() {
		l.finishDeferred()
		if count := l.count.Load(); anyDead(count) {
			l.compact(l.crowded(count))
		}
		return nil, false
	}
	sh := l.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if count := l.count.Load(); anyDead(count) {
		l.compactLocked(l.crowded(count))
	}
	return l.walkable(), true
}
