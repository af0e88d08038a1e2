package purgatory

import (
	"context"
	"sync"
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
// Op.state is one word, read and written only in state.go, by atomic
// moves: the use's generation, its Outcome, the try (a turn, turn.go:
// trying and again), the flags (solo, locker, recycler, bound) and the pins.
// Each bit's invariants are on its constant there. A use's states, and who
// moves between them:
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
//	over                 ended, no try bit held, no pin: nothing of the use
//	                     can run any more (its callbacks have returned, its
//	                     timeout and context callbacks will not run or have
//	                     run, no walk can be trying it). The move that leaves
//	                     it so finishes the use (Recycle); bind may then start
//	                     the next use, generation + 1.
//
// The pins, each set only while the use is pending and cleared once: the
// claim's (ending, until the winner's complete has run the callbacks), the
// timeout's (armed, until a Stop prevents the fire or the fire has run), the
// context's (until its stop prevents the callback or the callback has run),
// and walked (a solo use ended by another path while a walk of its key may be
// trying it without the try bit: until that walk leaves the key). So a stale
// timeout, context callback or walk of a use never meets the next use: the
// timer and the context callback cannot outlive the use that armed them, and
// a watch-list entry, which may outlive it until its list compacts, carries
// its generation, which every walk and every entry's path (Close,
// CancelForKey, ForceCompleteForKey) compares before it tries or ends.
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
// Attaching and detaching, under Op.book: detach, which the winner of the
// claim runs after the claim, reads the use's watch-list places and context
// stop under Op.book; watch and watchContext attach under Op.book only if
// the use has not ended. So nothing attaches to a use after its detach has
// looked. (The timeout has its own handshake: armTimer.)
//
// The flag beside it:
//
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

	// Immutable once bind has set them (under book, before the operation is
	// watched anywhere or its timer armed).
	impl  Operation     // the embedding operation
	core  *core         // the purgatory's settings and counters
	start time.Duration // since settings.epoch, when bound; read only with an observer
	// timer is the timeout, owned by the operation (initialised by bind):
	// no allocation of its own, and no closure, since the operation is its
	// Handler (opTimeout). Its methods are safe for concurrent use.
	timer timingwheel.Timer

	// Under book, which is never held while user code runs. A use's
	// bind resets them while the operation is between uses.
	book    sync.Mutex
	first   place       // the first key's watch list: most operations watch one key
	places  []place     // further keys' watch lists
	stopCtx func() bool // detaches the use from Context

	// _ keeps state from ending a 64-byte line: without it Op is 192
	// bytes, state its bytes 184 to 191, and in an operation that starts on
	// a line the embedding type's first field starts the next one, so a try
	// touches two lines. Measured at commit 82e606c on a 2-core Intel Xeon,
	// with go -C bench run . -child -workload W5 -system purgatory
	// -cpuprofile: TryComplete's read of the request's first field was 17 %
	// of the samples, a cache miss, against under 1 % with Op at 200 bytes.
	_ [8]byte

	// Atomic. The one field of Op a try in CheckAndComplete reads (its watch
	// list holds impl), state, comes last, in Op's last word, next to the
	// embedding operation's own first fields, which TryComplete most likely
	// reads: a try then usually touches one cache line of the operation, not
	// two (TestLayout).
	state turn // the use's generation and Outcome, the try bits, the flags and the pins (state.go)
}

// A Recycler is an Operation that the purgatory hands back once it is done
// with a use of it, for a pool of operations (a sync.Pool's Put, or a free
// list's push): Recycle runs once per use, after its callbacks have returned
// and nothing of the use can run any more (its timeout's and context's
// callbacks included), on the goroutine that finished it. From then on the
// operation may be passed to TryCompleteElseWatch again. Recycle is user code:
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
// returns true if this call completed op, and false if op had already ended:
// of all the paths that race to end an operation, exactly one wins. OnComplete
// runs on the calling goroutine before ForceComplete returns; if it panics, op
// has still ended (Forced, and counted) and the panic reaches the caller. It
// may be called before op is handed to TryCompleteElseWatch, and from inside
// TryComplete (though returning true there is the usual way). A nil op is a
// misuse and panics. On a reused operation it ends the current use.
func ForceComplete(op Operation) bool {
	o := opOf(op, "ForceComplete")
	if !o.claim(Forced) {
		return false
	}
	o.complete(op, Forced, false)
	return true
}

// complete runs once per use, after a successful claim: it detaches the
// operation from its timer, context and watch lists, counts the outcome and
// runs the callbacks, with no library lock held, listed meanwhile in a slot
// that the stuck-callback watchdog samples (watchdog.go). Each callback runs
// even if the one before it panicked; the panic then continues once they have
// run. Then it lets go of the claim's pin (noSoloTry: see release), which may
// finish the use.
func (o *Op) complete(impl Operation, outcome Outcome, noSoloTry bool) {
	c, unpin := o.detach()
	defer o.release(endingBit|unpin, noSoloTry)
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

// detach marks the use done and takes it off its timer and context, and
// tells each of its watch lists that its entry there is dead. It returns the
// purgatory's core, nil if the operation was never bound, and the pins whose
// part it ended (a timeout it stopped before the fire, a context callback it
// stopped before it ran), for the caller to let go of with its own.
func (o *Op) detach() (c *core, unpin int64) {
	o.book.Lock()
	s := o.state.Load() // ended: the claim came first, so nothing attaches after this

	first, places, stopCtx := o.first, o.places, o.stopCtx
	o.places, o.stopCtx = nil, nil
	if s&boundBit != 0 {
		c = o.core // written before the bind that set boundBit
	}
	o.book.Unlock()

	if s&armedBit != 0 && o.timer.Stop() {
		unpin |= armedBit // it will not fire
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
	if len(places) > 0 {
		c.counters.addExtra(-int64(len(places)))
	}
	return c, unpin
}

// withdraw undoes a TryCompleteElseWatch whose TryComplete panicked, after the
// operation was claimed as withdrawn: it leaves nothing watched, armed or
// counted.
func (o *Op) withdraw() {
	c, unpin := o.detach()
	defer o.release(endingBit|unpin, true)
	if c != nil {
		c.counters.add(-1)
		c.madeRoom()
	}
}

// end completes the current use with outcome unless it has ended already,
// and reports whether it did. Only paths that own the current use call it
// (its timeout, its context); see endAt.
func (o *Op) end(outcome Outcome) bool {
	if !o.claim(outcome) {
		return false
	}
	o.complete(o.impl, outcome, false)
	return true
}

// endAt is end for use g only: the paths that reach the operation through a
// watch-list entry (Close, CancelForKey, ForceCompleteForKey).
func (o *Op) endAt(g gen, impl Operation, outcome Outcome) bool {
	if !o.claimAt(g, outcome) {
		return false
	}
	o.complete(impl, outcome, false)
	return true
}

// bind makes the operation's next use a use of purgatory c: its first (which
// records the embedding operation and c, and initialises its timer on tw) or
// a later one, once the last is over. The use starts with its try bit held,
// for TryCompleteElseWatch's first tries. It returns false if the operation had
// already ended before it was ever added (ForceComplete), and panics with a
// message that says what to do for a misuse: an operation pending in a use,
// one whose last use is not over, or one reused in another purgatory.
func (o *Op) bind(impl Operation, c *core, tw *timingwheel.TimingWheel) bool {
	set := tryingBit // TryCompleteElseWatch's first tries (hold)
	if o.Locker != nil {
		set |= lockerBit
	}
	if _, ok := impl.(Recycler); ok {
		set |= recyclerBit
	}
	if s := o.state.Load(); s == 0 { // its first use: nobody else may reach it yet
		o.impl, o.core = impl, c
		tw.InitTimer(&o.timer, (*opTimeout)(o))
	} else if s&boundBit != 0 && free(s) {
		if o.core != c {
			panic("purgatory: operation reused in another purgatory; an operation's later uses must go to the purgatory of its first, whose wheel holds its timeout")
		}
		o.first, o.places = nil, nil // the last use is over: nobody reads these
	}
	if c.settings.observer != nil {
		o.start = time.Since(c.settings.epoch)
	}
	c.counters.add(1) // before the use can end and be counted
	r := o.bindState(set)
	switch r {
	case bindFresh, bindReused:
		return true
	}
	c.counters.add(-1)
	switch r {
	case bindEnded:
		return false
	case bindPending:
		panic("purgatory: operation passed to TryCompleteElseWatch again while it is still pending; pass it again only once it has ended and its callbacks have returned")
	}
	panic("purgatory: operation passed to TryCompleteElseWatch again before the purgatory was done with its last use (its OnComplete or OnExpiration, or its timeout's or context's callback, still runs); " +
		"put it back in your pool from Recycle (implement purgatory.Recycler), which runs once the purgatory is done with it")
}
