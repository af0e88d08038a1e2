package purgatory

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/procid"
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
	// TryComplete reports whether the operation completes now, and may take
	// what it completes with: pop an item from a queue, take a slot. A try
	// that returns true completes that use with Outcome Completed, whatever
	// else happens meanwhile: a timeout, ForceComplete, the context, Close
	// or CancelForKey that meets a running try leaves its outcome for the
	// try, which ends the operation with it only if it returns false. So
	// what a passing try took is never lost.
	//
	// It is called possibly many times, never after the operation has
	// ended, and never concurrently with itself for the same operation: a
	// try asked for while another runs is made by the goroutine already
	// trying, once more, before it lets go (Kafka 2.x's maybeTryComplete).
	// If Op.Locker is set, it is held while TryComplete runs. It must not
	// block: a key is walked by one call at a time, so a TryComplete that
	// blocks holds up the other operations of its key and any outcome left
	// for it (never a caller: a CheckAndComplete or HandOff that finds the
	// key walked asks the walk for one more pass and returns).
	TryComplete() bool
	// OnComplete runs exactly once, whichever path ends the operation
	// (Op.Outcome tells which), with no library lock held: on the goroutine
	// that ended it, which for an outcome left for a try is the goroutine
	// that ran that try. It does not run for an operation cancelled by
	// CancelForKey.
	//
	// OnComplete must not block: it runs inside the call that ended the
	// operation (CheckAndComplete, HandOff, TryCompleteElseWatch,
	// ForceComplete, Close) or on a timing-wheel worker, which waits for
	// it. Answer through a channel with room for the answer
	// (make(chan T, 1)), or hand slow work to a goroutine of your own.
	OnComplete()
	// OnExpiration runs after OnComplete when the timeout ended the
	// operation (Outcome Expired), even if OnComplete panicked, on the same
	// goroutine. It does not run for any other outcome, Closed included.
	OnExpiration()

	// mustEmbedPurgatoryOp is Op's: an Operation is a struct that embeds
	// purgatory.Op.
	mustEmbedPurgatoryOp() *Op
}

// An operation's life, in one place (the manner of runtime/time.go). Its
// state word, every bit and every move of it, is state.go's; this is what
// the moves mean.
//
// A use is pending until exactly one move gives it an outcome. A try runs
// under the try bit (one TryComplete at a time): TryCompleteElseWatch holds
// it from bind to its last settle, a walk takes it per try (acquire), and
// whoever wants a try while it is held asks the holder for one more
// (turnAgain) rather than wait. The other paths (ForceComplete, the timeout,
// the context, Close, CancelForKey, ForceCompleteForKey, Shed) claim the
// use: one that finds no try running ends it and runs its callbacks; one
// that meets a try leaves its outcome for it (left), and the try's holder
// ends the use, with Completed if the try passed and with the outcome left
// otherwise, on its own goroutine. So an outcome is set only where no try
// runs, and a try that passes always wins.
//
// A use watched under one key is solo once TryCompleteElseWatch lets go: only
// that key's walk tries it, without the try bit (a try costs a load, not two
// compare-and-swaps), and a claim hands its outcome to that walk when one is
// under way (the steps at relay).
//
// The pins, each set only while the use is pending and cleared once: the
// ending pin (set with the outcome, until the winner's complete has run the
// callbacks), the timeout's (armed, until a Stop prevents the fire or the
// fire has run), the context's (until its stop prevents the callback or the
// callback has run) and the relay's (set by a claim that relays a solo use,
// until the relay has read where to). The move that clears the last one
// makes the use over: it is recycled (Recycle), and bind may start the next
// use, generation + 1. So a stale timeout, context callback or relay never
// meets the next use; a watch-list entry, which may outlive its use until its
// list compacts, carries its generation, which every walk and every entry's
// path (Close, CancelForKey, ForceCompleteForKey) compares before it acts.
//
// Where it waits, under each of its keys (watchlist.go, levels.go): a plain
// watch, or a watch at a level the key has reached, is an entry of the key's
// list, in the order added; every walk of the key reads them in that order. A
// watch at a level the key has not reached waits in the key's level heap,
// tried only by CheckAndComplete, until an Advance of the key to that level
// appends it to the entries (reach, lowest level first, ties in the order
// added); it never goes back. Wherever it waits, its end drops it there (a
// count; the list compacts itself), never unlinks it.
//
// Attaching and detaching: watch, armTimer and watchContext attach the use
// to its keys' lists, its timer and its context while TryCompleteElseWatch
// holds its try bit; the winner of its outcome detaches it (detach, where
// why that needs no lock is argued). Close sets Purgatory.closed before it
// walks the watch lists, and TryCompleteElseWatch reads it after watching, so
// an operation Close's walk missed is ended Closed there.
//
// Lock order, the one place it is written: the try bit or a key's walk (both
// turns), then Op.Locker (held only while TryComplete runs), then a shard's
// mutex (shard.mu, which guards its map and its lists' entries and heaps). A
// wheel shard's mutex (inside Timer.Reset and Timer.Stop) is taken with no
// purgatory lock held; bind's InitTimer takes none. No library lock is held
// while user code runs: turns are flags that nobody waits on (whoever finds
// one taken asks its holder for one more round, or leaves its outcome to it).

// Op is the purgatory's bookkeeping for one operation, to be embedded (by
// value) in an [Operation]. Set Timeout (and optionally Context and Locker)
// before handing the operation to TryCompleteElseWatch; the rest is private. An
// Op must not be copied after first use.
//
// An operation may be used again, for a new request: passed to
// TryCompleteElseWatch once the purgatory is done with its last use, which it
// tells a [Recycler] by calling its Recycle. A service keeps its operations
// in a sync.Pool or a free list that way and allocates none per request.
// Reset the embedding operation's own fields, and Timeout, Context and
// Locker as needed, before passing it again; the purgatory resets its own. A
// use's Outcome stays readable until the next one starts. An operation's later
// uses go to the purgatory of its first (passing it to another panics), and
// passing it again before its last use is over (its OnComplete still runs,
// say) panics with a message that says what to do. Exactly once holds per
// use: nothing of one use (its timeout, its context's callback, a walk of its
// keys) ever ends or tries the next.
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

	// Written by the one bind whose compare-and-swap started the first use
	// (impl, core, timer) or the use (start), before the operation is
	// watched anywhere or its timer armed; immutable after. A bind that
	// loses reads none of them.
	impl Operation // the embedding operation
	core *core     // the purgatory's settings and counters
	// timer is the timeout, owned by the operation (initialised by bind):
	// no allocation of its own, and no closure, since the operation is its
	// Handler (opTimeout). Its methods are safe for concurrent use.
	timer timingwheel.Timer

	// Set by watch (and by watchContext, bind, in more) while the try bit is
	// held, read with no lock by the use's detach (which says why); first
	// stays until the next use's bind clears it.
	first  place  // the first key's watch list: most operations watch one key
	more   *more  // what few uses need (further keys, a context, an observer, parking); nil until one does
	timing timing // who lets go of the timeout's pin: written by bind and armTimer, read by detach as first is

	// Atomic, and last: the one field of Op a walk's try reads (its list
	// holds impl) sits next to the embedding operation's first fields, which
	// TryComplete most likely reads, so a try usually touches one cache line
	// of the operation, not two (TestLayout).
	state atomic.Int64 // the use's generation and Outcome, the try bits, the flags, the pins and an outcome left (state.go)
}

// more is the part of an operation's bookkeeping that few uses need, out of
// Op, which is allocated with each fresh request and scanned by the collector
// while it waits. The first use that needs it makes it (madeMore), and the
// later ones keep it; its fields follow Op's rules for those beside it.
type more struct {
	places  []place       // further keys' watch lists: set by watch, cleared by detach
	stopCtx func() bool   // detaches the use from Context: set by watchContext, cleared by detach
	start   time.Duration // since settings.epoch, when bound; written by bind only with an observer
	// park is the operation's parking (park.go), made at its first
	// TryCompleteElsePark by the goroutine that passes it, before its bind;
	// nil if it was never parked.
	park *parking
}

// madeMore returns o.more, made if need be, for the holder of the try bit
// (or, for parking, the goroutine that passes the operation, before bind).
func (o *Op) madeMore() *more {
	if o.more == nil {
		o.more = new(more)
	}
	return o.more
}

// A Recycler is an Operation that the purgatory hands back once it is done
// with a use of it, for a pool of operations (a sync.Pool's Put, or a free
// list's push): Recycle runs once per use, after its callbacks have returned
// and nothing of the use can run any more (its timeout's and context's
// callbacks included), on the goroutine that finished it (in Parked.Wait for
// a parked use, which needs no Recycle to be pooled: TryCompleteElsePark).
// From then on the operation may be passed again. Recycle is user code:
// if it panics, the use is over all the same, and the panic reaches the caller
// or, on the library's goroutines, is reported as a callback's is. It does not
// run for a use withdrawn because TryComplete panicked, nor for one ended
// because the purgatory's wheel stopped under it (the wheel handed its
// timeout back unfired, so that use is never over).
type Recycler interface {
	Operation
	Recycle()
}

//lint:ignore U1000 called through Operation, which only embedding Op satisfies
func (o *Op) mustEmbedPurgatoryOp() *Op { return o }

// ForceComplete completes op from outside the purgatory (Kafka's
// forceComplete), for example when a response arrives by another route. It
// returns true if op was pending: it ends op with Outcome Forced now, running
// OnComplete on the calling goroutine before it returns, or, if a try of op is
// running (on any goroutine, this one included), it leaves Forced for that
// try, which ends op when it returns: Completed if it passed, Forced
// otherwise, with OnComplete on the trying goroutine. It returns false if op
// had ended, or already has an outcome left for its try: of all the paths that
// race to end an operation, exactly one decides.
//
// It may be called before op is handed to TryCompleteElseWatch (op then ends
// at once and is never added), and from inside TryComplete, where it leaves
// Forced for that very try; a TryComplete that has taken what it completes
// with returns true instead. If OnComplete panics, op has still ended (Forced,
// and counted) and the panic reaches the caller. A nil op is a misuse and
// panics. On a reused operation it ends the current use.
func ForceComplete(op Operation) bool {
	o := opOf(op, "ForceComplete")
	r, g := o.claim(Forced)
	return o.end(op, g, r, Forced)
}

// end acts on a claim of outcome for use g (claim, claimAt) and reports
// whether it decided the use's end: it completes a use it ended, hands a solo
// use to its key's walk, and leaves the rest to the try under way.
func (o *Op) end(impl Operation, g gen, r claimed, outcome Outcome) bool {
	switch r {
	case claimLost:
		return false
	case claimEnded:
		o.complete(impl, outcome)
	case claimLeftSolo:
		o.relay(impl, g)
	}
	return true
}

// endOwn ends the current use with outcome, or leaves it for its try: the
// paths that own the current use (its timeout, its context, Close's and
// Shed's ends in TryCompleteElseWatch).
func (o *Op) endOwn(outcome Outcome) bool {
	r, g := o.claim(outcome)
	return o.end(o.impl, g, r, outcome)
}

// endAt is endOwn for use g only: the paths that reach the operation through
// a watch-list entry (Close, CancelForKey, ForceCompleteForKey).
func (o *Op) endAt(g gen, impl Operation, outcome Outcome) bool {
	return o.end(impl, g, o.claimAt(g, outcome), outcome)
}

// complete runs once per use, after the move that set its outcome: it
// detaches the operation from its timer, context and watch lists, counts the
// outcome and runs the callbacks, with no library lock held, listed meanwhile
// in a slot that the stuck-callback watchdog samples (watchdog.go). Each
// callback runs even if the one before it panicked; the panic then continues
// once they have run. Then it lets go of the ending pin, which may make the
// use over.
func (o *Op) complete(impl Operation, outcome Outcome) {
	c, unpin := o.detach(outcome)
	defer o.finish(endingBit | unpin)
	if c == nil {
		callbacks(impl, outcome)
		return
	}
	p := procid.Hint() // once, for the outcome's count and the watchdog's slot
	c.counters.recordOn(p, outcome)
	c.madeRoom()
	if outcome != Cancelled { // no callback runs
		if slot := c.dog.track(o, p); slot != nil {
			defer slot.Store(nil)
		}
	}
	if obs := c.settings.observer; obs != nil {
		defer callbacks(impl, outcome)
		obs.OperationEnded(outcome, time.Since(c.settings.epoch)-o.more.start)
		return
	}
	callbacks(impl, outcome)
}

// finish is complete's last step (one deferred call: a second would cost
// every add+complete): the ending pin and those detach ended go, then a parked
// use's token, last, so that its waiter mostly ends the use (park.go, rule 6).
func (o *Op) finish(pins int64) {
	g, pk := o.gen(), o.parked() // before the unpin: once over, the operation may be bound again
	if o.unpin(pins); pk != nil {
		pk.endedUse(g)
	}
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

// detach takes the ended use off its timer and context, tells each of its
// watch lists that its entry there is dead, and clears its places for the
// next use. It returns the purgatory's core, nil if the operation was never
// bound, and the pins whose part it ended (a timeout it stopped before the
// fire, a context callback it stopped before it ran), for the caller to let
// go of with its own.
//
// A use that ended Expired with its timeout on the wheel was ended by that
// timeout's fire (expire), which has begun and holds the pin: Stop would
// return false. So detach does not call it, which would lock the timer's
// shard of the wheel, where the driver collects the due timers, once per
// expiry (the interleaving checker fails if a detach leaves a timer set).
//
// It reads what the use's add attached with no lock. watch, armTimer and
// watchContext attach only inside TryCompleteElseWatch, which holds the
// use's try bit from bind to its last settle; a held use cannot end (a
// claim leaves its outcome for the try), and detach, which the winner of the
// outcome runs after setting it, follows an end. So detach never runs while
// they attach, and finds all they attached: the settle that lets go of the
// try bit comes after them in the state word, and every end after that. It
// leaves the first place, which relay reads too: a relay and the detach of
// one use may run at once, and both only read it. The next use's bind
// clears it, and a relay of the last use cannot race that bind or the next
// use's watch, for the claim that relays pins the use (relayBit) until the
// relay has read. The interleaving checker holds both premises (mustHoldTry;
// a relay's read of Op.first against a later bind or watch) and catches a
// detach that clears Op.first and a relay without its pin.
func (o *Op) detach(outcome Outcome) (c *core, unpin int64) {
	s := o.load()    // ended: so nothing attaches after this
	first := o.first // it stays for a relay of this use: bind clears it
	var places []place
	var stopCtx func() bool
	if m := o.more; m != nil {
		places, stopCtx = m.places, m.stopCtx
		m.places, m.stopCtx = places[:0], nil // the next use appends to the same array
	}
	if bound(s) {
		c = o.core // written before the bind that set boundBit
	}

	if armed(s) {
		switch o.timing {
		case timingUnarmed:
			unpin |= armedBit // nothing was armed
		case timingWheel:
			if outcome != Expired && o.timer.Stop() {
				unpin |= armedBit // it will not fire
			}
		} // timingParked: the waiter lets go (park.go)
	}
	if stopCtx != nil && stopCtx() {
		unpin |= ctxBit // its callback will not run
	}
	if first != nil {
		first.drop()
	}
	for _, l := range places {
		l.drop()
	}
	clear(places) // holds no list past the use
	if len(places) > 0 {
		c.counters.addExtra(-int64(len(places)))
	}
	return c, unpin
}

// withdraw undoes a TryCompleteElseWatch whose TryComplete panicked, after the
// operation was withdrawn (abandonMove): it leaves nothing watched, armed or
// counted.
func (o *Op) withdraw() {
	c, unpin := o.detach(Pending) // withdrawn: no outcome
	defer o.unpin(endingBit | unpin)
	if c != nil {
		c.counters.add(-1)
		c.madeRoom()
	}
}

// bind makes the operation's next use a use of purgatory c: its first (which
// records the embedding operation and c, and initialises its timer on tw) or
// a later one, once the last is over. The use starts with its try bit held,
// for TryCompleteElseWatch's first tries, and with pin, its timeout's pin
// (armedBit) or none, held as t says, and returns the use's generation. One
// compare-and-swap decides which of two calls passing the same operation at
// once binds it, before either writes a field. It returns false if the
// operation had ended before it was ever added (ForceComplete), and panics
// with a message that says what to do for a misuse: an operation in use (the
// loser of that race too), one whose last use is not over, or one reused in
// another purgatory.
func (o *Op) bind(impl Operation, c *core, tw *timingwheel.TimingWheel, pin int64, t timing) (gen, bool) {
	set := turnHeld | pin // TryCompleteElseWatch's first tries; the timeout's pin (timing)
	if o.Locker != nil {
		set |= lockerBit
	}
	if _, ok := impl.(Recycler); ok {
		set |= recyclerBit
	}
	if s := o.state.Load(); bound(s) && over(s) && o.core != c { // bindState's load is the point // core is immutable once a use is over
		panic("purgatory: operation reused in another purgatory; an operation's later uses must go to the purgatory of its first, whose wheel holds its timeout")
	}
	c.counters.add(1) // before the use can end and be counted
	r, s := o.bindState(set)
	switch r {
	case bindFresh:
		o.impl, o.core = impl, c
		tw.InitTimer(&o.timer, (*opTimeout)(o))
		fallthrough
	case bindReused:
		o.first = nil // the last use's (detach leaves it): no relay of that use reads it now, for its pin made the use over only after it read
		o.timing = t
		if c.settings.observer != nil {
			o.madeMore().start = time.Since(c.settings.epoch)
		}
		return genOf(s), true
	}
	c.counters.add(-1)
	switch r {
	case bindEnded:
		return 0, false
	case bindInUse:
		panic("purgatory: operation passed to TryCompleteElseWatch while it is in use (pending from an earlier call, or passed by another goroutine at the same moment); pass it again only once it has ended and its callbacks have returned")
	}
	panic("purgatory: operation passed to TryCompleteElseWatch again before the purgatory was done with its last use (its OnComplete or OnExpiration, or its timeout's or context's callback, still runs); " +
		"put it back in your pool from Recycle (implement purgatory.Recycler), which runs once the purgatory is done with it")
}
