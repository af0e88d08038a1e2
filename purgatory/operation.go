package purgatory

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// Operation is a delayed operation (Kafka's DelayedOperation). Implement it by
// embedding [Op] in a struct and giving the struct's pointer type the three
// methods below; the purgatory calls them, never more than the contract says.
//
// Each method is a call into user code and may panic; see the package
// documentation ("Panics") for what happens then, and ("Re-entrancy") for what
// each may call.
type Operation interface {
	// TryComplete reports whether the operation can complete now. It must
	// only check: when it returns true, the purgatory completes the
	// operation, unless another path has just won. It is called possibly
	// many times, never after the operation has ended, and never
	// concurrently with itself for the same operation: a try asked for while
	// another runs is made by the goroutine already trying, once more,
	// before it lets go (Kafka 2.x's maybeTryComplete). If Op.Locker is set,
	// it is held while TryComplete runs. It must not block: a key is walked
	// by one CheckAndComplete at a time, so a TryComplete that blocks holds
	// up the other operations of its key (never a caller: a CheckAndComplete
	// that finds the key walked asks the walk for one more pass and returns).
	TryComplete() bool
	// OnComplete runs exactly once, whichever path ends the operation
	// (Op.Outcome tells which), on the goroutine that ended it, with no
	// library lock held. It does not run for an operation cancelled by
	// CancelForKey.
	//
	// OnComplete must not block: it runs inside the call that ended the
	// operation (CheckAndComplete, TryCompleteElseWatch, ForceComplete,
	// Close) or on a timing-wheel worker, which waits for it. Answer through
	// a channel with room for the answer (make(chan T, 1)), or hand slow
	// work to a goroutine of your own.
	OnComplete()
	// OnExpiration runs after OnComplete when the timeout ended the
	// operation (Outcome Expired), even if OnComplete panicked. It does not
	// run for any other outcome, Closed included.
	OnExpiration()

	// mustEmbedPurgatoryOp is Op's: an Operation is a struct that embeds
	// purgatory.Op.
	mustEmbedPurgatoryOp() *Op
}

// An operation's life, in one place (the manner of runtime/time.go).
//
// Op.state is one word, read and written only in state.go, by
// compare-and-swap: the Outcome, the try (a turn, turn.go: trying and
// again), solo and locker. Each bit's invariants are on its constant there.
// Its states, and who moves between them:
//
//	Pending              no outcome, no try running. acquire may take the
//	                     try bit; claim may set an outcome.
//	Pending|trying       one goroutine runs TryComplete (it holds the try
//	                     bit). acquire by anyone else sets again instead of
//	                     waiting; claim may still set an outcome.
//	Pending|trying|again a try was asked for during the running one: the
//	                     holder's settle clears again and tries once more.
//	outcome (|try bits)  ended. Exactly one claim wins (claim, or settle
//	                     claiming Completed); nothing leaves an outcome.
//	withdrawn            internal outcome of a TryCompleteElseWatch undone
//	                     because TryComplete panicked (abandon); Outcome
//	                     reports Pending.
//	Pending|solo         watched under one key, and TryCompleteElseWatch has
//	                     let go: only that key's walk tries it, without the
//	                     try bit, and claims Completed if it passes.
//
// Why a solo operation may be tried without the try bit, step by step, for
// an operation watched under key k alone (Kafka argues its
// tryCompleteElseWatch the same way):
//
//  1. TryCompleteElseWatch holds the try bit from its first try to its last
//     settle. A walk of k that meets the operation meanwhile cannot take
//     the bit; it sets again, and the holder tries once more before it lets
//     go, so the walk's event is not missed.
//  2. The last settle clears the try bit and sets solo in one
//     compare-and-swap, and TryCompleteElseWatch never tries the operation
//     again.
//  3. After 2 nothing tries the operation but a walk of k: it is in no
//     other key's list, and ForceComplete, its timeout, its context and
//     Close end it with claim, without a try.
//  4. Walks of k never overlap: k's list has one walk at a time (its
//     walking turn), and a CheckAndComplete or Advance of k that finds it
//     taken asks that walk for one more pass and returns. So after 2 the
//     tries are one walk's, one after another, and need no bit.
//  5. A walk that read the state before 2 found walkOnly false and takes
//     the try bit as usual (acquire; it fails and sets again until 2 has
//     happened); it lets go keeping solo.
//  6. An outcome claimed during a walk's try (a timeout, ForceComplete)
//     wins over the try's own claim of Completed, which then fails: the
//     operation ends once, and the walk does not count it.
//
// Where it waits, under each of its keys (watchlist.go, levels.go): a plain
// watch, or a watch at a level the key has reached, is an entry of the key's
// list, tried by every walk of the key. A watch at a level the key has not
// reached waits in the key's level heap, tried only by CheckAndComplete,
// until an Advance of the key to that level moves it to the entries (reach,
// lowest level first); it never goes back. Wherever it waits, its end drops
// it there (a count; the list compacts itself), never unlinks it.
//
// The flags beside it:
//
//	Op.added        set once, by the first TryCompleteElseWatch (a second
//	                panics); never cleared.
//	Op.done         set under Op.book by detach, which the winner of the
//	                claim runs, before it releases the timer and the context
//	                and drops its watch-list entries. watch, armTimer and
//	                setStopCtx check it under Op.book, so nothing attaches
//	                after it.
//	Purgatory.closed set once, by Close, before Close walks the watch lists;
//	                TryCompleteElseWatch reads it after watching, so an
//	                operation Close's walk missed is ended Closed there.
//
// Lock order, the one place it is written: the try bit or a key's walk (both
// turns), then Op.Locker (held only while TryComplete runs; a key's walk also
// while OnComplete runs), then Op.book, then a shard's mutex (shard.mu, which
// guards its map and its lists' entries and heaps). A wheel shard's mutex
// (inside Timer.Reset and Timer.Stop) is taken with no purgatory lock held;
// bind's InitTimer takes none. No library lock is held while user code runs:
// turns are flags that nobody waits on (whoever finds one taken asks its
// holder for one more round, and moves on).

// Op is the purgatory's bookkeeping for one operation, to be embedded (by
// value) in an [Operation]. Set Timeout (and optionally Context and Locker)
// before handing the operation to TryCompleteElseWatch; the rest is private. An
// Op is used for one operation only and must not be copied after first use.
type Op struct {
	// Set by the user before TryCompleteElseWatch, and only read after.

	// Locker, if not nil, is held while TryComplete runs, so that several
	// operations can share one lock with the user's own code (Kafka's
	// lockOpt). Go's locks are not re-entrant: TryComplete of an operation
	// with a Locker must not call CheckAndComplete on a key that watches
	// another operation with the same Locker. Set it before
	// TryCompleteElseWatch; one set afterwards is not taken.
	Locker sync.Locker
	// Timeout is how long the operation may wait after TryCompleteElseWatch
	// before it expires (Outcome Expired). Zero is a forgotten field and
	// TryCompleteElseWatch panics on it, unless Context has a deadline, which
	// then bounds the wait instead (Outcome ContextDone). A negative Timeout
	// is a deadline already passed: the operation expires as soon as the
	// wheel runs, unless it completes at once. [NoTimeout] waits without one.
	Timeout time.Duration
	// Context, if not nil, ties the operation to a context: if the context is
	// done before the operation ends, the operation ends with Outcome
	// ContextDone (OnComplete runs; OnExpiration does not).
	Context context.Context

	// Immutable once bind has set them (under book, before the operation is
	// watched anywhere or its timer armed).
	impl  Operation     // the embedding operation
	core  *core         // the purgatory's settings and counters
	start time.Duration // since settings.epoch, when bound; read only with an observer
	// timer is the timeout, owned by the operation (initialised by bind):
	// no allocation of its own, and no closure, since the operation is its
	// Handler (opTimeout). Its methods are safe for concurrent use.
	timer timingwheel.Timer

	// Under book, which is never held while user code runs.
	book    sync.Mutex
	done    bool        // ended or withdrawn: nothing more may be attached
	timed   bool        // timer is armed (or being armed) for Timeout
	first   place       // the first key's watch list: most operations watch one key
	places  []place     // further keys' watch lists
	stopCtx func() bool // detaches the operation from Context

	// Atomic. The one field of Op a try in CheckAndComplete reads (its watch
	// list holds impl), state, comes last, in Op's last word, next to the
	// embedding operation's own first fields, which TryComplete most likely
	// reads: a try then usually touches one cache line of the operation, not
	// two (TestLayout).
	added atomic.Bool // set by the first TryCompleteElseWatch
	state turn        // an Outcome, the try bits, solo and locker (state.go)
}

//lint:ignore U1000 called through Operation, which only embedding Op satisfies
func (o *Op) mustEmbedPurgatoryOp() *Op { return o }

// ForceComplete completes op from outside the purgatory (Kafka's
// forceComplete), for example when a response arrives by another route. It
// returns true if this call completed op, and false if op had already ended:
// of all the paths that race to end an operation, exactly one wins. OnComplete
// runs on the calling goroutine before ForceComplete returns; if it panics, op
// has still ended (Forced, and counted) and the panic reaches the caller. It
// may be called before op is handed to TryCompleteElseWatch, and from inside
// TryComplete (though returning true there is the usual way). A nil op is a
// misuse and panics.
func ForceComplete(op Operation) bool {
	o := opOf(op, "ForceComplete")
	if !o.claim(Forced) {
		return false
	}
	o.complete(op, Forced)
	return true
}

// complete runs once, after a successful claim: it detaches the operation from
// its timer, context and watch lists, counts the outcome and runs the
// callbacks, with no library lock held, listed meanwhile in a slot that the
// stuck-callback watchdog samples (watchdog.go). Each callback runs even if
// the one before it panicked; the panic then continues once they have run.
func (o *Op) complete(impl Operation, outcome Outcome) {
	c := o.detach()
	if c == nil {
		callbacks(impl, outcome)
		return
	}
	c.counters.record(outcome)
	c.madeRoom()
	if outcome != Cancelled { // no callback runs
		if slot := c.dog.track(o); slot != nil {
			defer slot.Store(nil)
		}
	}
	if obs := c.settings.observer; obs != nil {
		defer callbacks(impl, outcome)
		obs.OperationEnded(outcome, time.Since(c.settings.epoch)-o.start)
		return
	}
	callbacks(impl, outcome)
}

func callbacks(impl Operation, outcome Outcome) {
	switch outcome {
	case Cancelled:
		return
	case Expired:
		defer impl.OnExpiration()
	}
	impl.OnComplete()
}

// detach marks the operation done and takes it off its timer and context, and
// tells each of its watch lists that its entry there is dead. It returns the
// purgatory's core, nil if it was never bound.
func (o *Op) detach() *core {
	o.book.Lock()
	o.done = true
	first, places, timed, stopCtx, c := o.first, o.places, o.timed, o.stopCtx, o.core
	o.places, o.timed, o.stopCtx = nil, false, nil
	o.book.Unlock()

	if timed {
		o.timer.Stop()
	}
	if stopCtx != nil {
		stopCtx()
	}
	if first != nil {
		first.drop()
	}
	for _, l := range places {
		l.drop()
	}
	if len(places) > 0 {
		c.counters.addExtra(-int64(len(places)))
	}
	return c
}

// withdraw undoes a TryCompleteElseWatch whose TryComplete panicked, after the
// operation was claimed as withdrawn: it leaves nothing watched, armed or
// counted.
func (o *Op) withdraw() {
	if c := o.detach(); c != nil {
		c.counters.add(-1)
		c.madeRoom()
	}
}

// end completes the bound operation with outcome unless it has ended already,
// and reports whether it did.
func (o *Op) end(outcome Outcome) bool {
	if !o.claim(outcome) {
		return false
	}
	o.complete(o.impl, outcome)
	return true
}

// bind makes the operation part of a purgatory, once: it records the
// embedding operation and the purgatory's core. It returns false if the
// operation had already ended (ForceComplete before it was added).
func (o *Op) bind(impl Operation, c *core, tw *timingwheel.TimingWheel) bool {
	o.book.Lock()
	defer o.book.Unlock()
	if o.done || !o.untouched() {
		return false
	}
	o.impl, o.core = impl, c
	if o.Locker != nil {
		o.markLocker()
	}
	tw.InitTimer(&o.timer, (*opTimeout)(o))
	if c.settings.observer != nil {
		o.start = time.Since(c.settings.epoch)
	}
	c.counters.add(1)
	return true
}
