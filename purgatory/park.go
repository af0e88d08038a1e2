package purgatory

import (
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// A goroutine that waits for its own operation (a queue's Receive, a pool's
// Acquire, Wait) can time the wait itself instead of arming the operation's
// timeout on the wheel: TryCompleteElsePark adds the operation as
// TryCompleteElseWatch does but arms nothing, and Parked.Wait selects on the
// use's end, the operation's Context and a runtime timer of its own. When
// the timer or the context fires first, the waiter claims the use, by its
// generation (endAt), as the wheel's fire or the context's callback would,
// and then waits for the end once more, since a try under way still wins.
//
// Why: on the wheel a timeout reaches its waiter in three goroutine
// wake-ups (the runtime timer wakes the wheel's driver, the driver readies
// a worker, the worker's OnComplete readies the waiter), each of which can
// sit behind a run queue of busy goroutines; parked, it takes one, as a
// time.Timer in a select does. (Issue 51 measured a pool's timeouts on the
// wheel at 6.9× a channel pool's p99 lateness; on the 2-core machine of
// bench's W10, whose runtime timers wake at about millisecond granularity,
// the wheel's pool, the parked one and the channel pool came out alike.)
//
// The rules, step by step:
//
//  1. TryCompleteElsePark binds the use with its timeout's pin (armedBit)
//     already set, and records its generation in the operation's parking
//     before the use can end (the add holds the try bit until its last
//     settle). So the use is not over, and the operation not recycled or
//     used again, until the waiter lets go of that pin, last. If the first
//     try passes, the use ends on the waiter's own goroutine, which takes
//     the generation back at once (passedAtOnce) rather than send itself a
//     token: no other path can end the use while the try bit is held.
//  2. complete, whoever runs it, takes the recorded generation (a
//     compare-and-swap from g+1 to none) after the use's callbacks have
//     returned, and if it took it, sends one token on the parking's
//     channel, which holds one.
//  3. The waiter's claim is claimAt of its own generation: a timer or a
//     context that fires after the use ended finds it ended and claims
//     nothing. A claim that wins completes the use on the waiter's
//     goroutine (its callbacks, and a panic in them, are the caller's); one
//     left for a try is completed by the try's holder; either way the token
//     comes.
//  4. The waiter leaves (leave) by the same compare-and-swap: if it takes
//     the generation, no token will come; if complete took it, the token is
//     sent or about to be (no user code between), and the waiter takes it.
//     Then it stops its timer and lets go of the pin. So a token never
//     outlives its use, and the next use's waiter never sees one.
//  5. Nothing is armed on the wheel, so detach finds the pin but no timer to
//     stop, and leaves the pin to the waiter.
//  6. The use is over, and recycled, before Wait returns, so the operation
//     may be passed again from the moment Wait returns (or from Recycle).
//     Before the waiter lets go of its pin it records the generation once
//     more; if its unpin makes the use over, it takes the generation back
//     and recycles the use itself. Otherwise another pin is still held (the
//     relay's, whose claim relayed the use to a walk that ended it), and
//     the unpin that makes the use over takes the generation (handOver)
//     and, instead of recycling, sends the waiter a token, on which the
//     waiter recycles. complete sends rule 2's token after it lets go of
//     its own pin, so a use ended by another goroutine mostly costs its
//     waiter one wake-up, not two.
//  7. A use parked under one plain key is tried by its waiter when a
//     CheckAndComplete or Advance of the key rings the key's bell, rather
//     than by their walks, which pass it by: bell.go says why no event is
//     missed. Its waiter's try is a walk's (the try bit, the settle loop),
//     and a use it ends is completed on the waiter's goroutine, which then
//     takes its own token.

// parking is an operation's place to be waited for on its waiter's own
// goroutine: made at its first TryCompleteElsePark, kept for its later uses.
type parking struct {
	// ended holds the token of rule 2.
	ended chan struct{}
	// use is the parked use's generation + 1 until complete or the waiter
	// takes it (rules 2 and 4); 0 otherwise.
	use atomic.Uint64
	// timer is the waiter's timeout, a runtime timer reused by each use;
	// only the waiter of the current use touches it.
	timer *time.Timer
	// over is the use's state once over, handed to the waiter with rule 6's
	// token (the channel orders it).
	over int64
	// own is set by passedAtOnce (rule 1) and read and cleared by the
	// waiter's leave, both on the waiter's goroutine.
	own bool
	// took is set by the waiter's own try when it ended the use and took
	// it back (rule 7), so that no token comes; read and cleared by its
	// leave.
	took bool
	// one says the use is parked under one plain key, so that its waiter
	// tries it when the key's bell rings (rule 7); bell and ring are that
	// key's bell and the channel the add listened to (watchAt), nil for
	// other uses. The add sets them, the waiter reads them.
	one  bool
	bell *bell
	ring <-chan struct{}
}

// ringing returns the parking of a use that its waiter tries (rule 7),
// being linked, else nil. Only the add calls it, under the try bit.
func (o *Op) ringing() *parking {
	if o.timing != timingParked {
		return nil
	}
	if pk := o.more.park; pk.one {
		return pk
	}
	return nil
}

// rings reports whether pk, nil for a use not parked, is that of a use its
// waiter tries (rule 7).
func (pk *parking) rings() bool { return pk != nil && pk.bell != nil }

// passedAtOnce is rule 1's shortcut, for the add whose first try passed,
// which holds the try bit: it takes the use back, so that complete sends no
// token, and tells TryCompleteElsePark's leave so (the add runs on the
// waiter's goroutine: that is the only goroutine that reads own).
func (pk *parking) passedAtOnce(o *Op) {
	pk.own = pk.casUse(o.gen())
}

// parkedIf returns the operation's parking if parked, else nil.
func (o *Op) parkedIf(parked bool) *parking {
	if parked {
		return o.more.park
	}
	return nil
}

// parked returns the operation's parking, nil if it was never parked. Read
// it while the use is not over: a later use's owner may make it.
func (o *Op) parked() *parking {
	if m := o.more; m != nil {
		return m.park
	}
	return nil
}

// handOver is rule 6 for the unpin that made a use over in state s: if the
// use's waiter waits to recycle it, it wakes the waiter with the state and
// reports true.
func (pk *parking) handOver(s int64) bool {
	if pk.use.Load() == 0 || !pk.casUse(genOf(s)) { // the load first: most uses are not parked
		return false
	}
	pk.over = s
	pk.ended <- struct{}{} // empty: the waiter took rule 2's token
	return true
}

// endedUse is complete's rule 2, for use g.
func (pk *parking) endedUse(g gen) {
	if pk.casUse(g) {
		pk.ended <- struct{}{} // empty: its last token was taken before this use began (rule 4)
	}
}

// casUse takes use g from the parking (rules 2 and 4) and reports whether
// it did.
func (pk *parking) casUse(g gen) bool {
	sched.At("parking cas")
	return pk.use.CompareAndSwap(uint64(g)+1, 0)
}

// leave is the waiter's rule 4 for use g; token tells whether the waiter has
// the token already, timed whether it armed the timer for this use.
func (pk *parking) leave(o *Op, g gen, token, timed bool) {
	if pk.own { // rule 1's shortcut: the use ended in the add, never watched, so nothing else pins it
		pk.own = false
		o.unpin(armedBit)
		return
	}
	if token || pk.took {
		pk.took = false // the use is the waiter's: no token comes (rule 7)
	} else if !pk.casUse(g) {
		<-pk.ended // complete took the use: its token is sent or about to be
	}
	if timed {
		pk.timer.Stop()
	}
	pk.park(g) // rule 6
	if s := o.unpinned(armedBit); over(s) {
		pk.casUse(g) // it cannot fail: only the unpin that makes a use over takes it
		o.recycleHere(s)
		return
	}
	<-pk.ended // another pin's holder makes the use over, and hands it back
	o.recycleHere(pk.over)
}

// Parked is a use of an operation added with [Purgatory.TryCompleteElsePark],
// for the goroutine that waits for it: call Wait once, from one goroutine,
// after letting go of the locks held around the add. The zero Parked is that
// of an operation that completed at once; its Wait returns Completed.
type Parked struct {
	o       *Op
	impl    Operation
	g       gen
	timeout time.Duration // 0: none (NoTimeout, or a zero Timeout under a Context's deadline)
	outcome Outcome       // the add ended it already: Wait returns this
}

// TryCompleteElsePark is [Purgatory.TryCompleteElseWatch] for an operation
// whose caller waits for it on its own goroutine, with [Parked.Wait]: a
// queue's blocking receive, a pool's acquire. It tries op, watches it under
// keys if it cannot complete yet, and returns at once, true if op completed
// (Wait then returns Completed at once). Unlike TryCompleteElseWatch it arms
// no timeout on the wheel and registers nothing on op.Context: the waiter
// times itself, so that a timeout reaches it in one goroutine wake-up rather
// than three (through the wheel's driver and a worker).
//
// So call it under the lock that guards what TryComplete takes (as
// TryCompleteElseWatch), then unlock, then Wait.
//
// An operation parked under one key is tried by its waiter, inside Wait,
// when a CheckAndComplete or Advance of the key wakes it: with Op.Locker
// held if set, and with no lock of the caller of CheckAndComplete's. Its
// TryComplete must therefore take what guards what it reads (or set
// Op.Locker to that lock), unless the key is only ever walked by HandOff,
// which tries its operations itself, in its turn, first come, first served
// (a queue's or a pool's release under its mutex). An operation parked
// under several keys, or at levels, is tried by the walks, as a watched one
// is.
//
// Until Wait is called, op's timeout does not run, and under one key
// neither do the tries that CheckAndComplete and Advance wake: an operation
// nobody waits for stays watched until a walk that tries it, ForceComplete,
// Close or CancelForKey ends it. Use
// TryCompleteElseWatch for operations that nobody parks on (a request
// answered from a callback, examples/redis's blocked clients), and this
// for those that a goroutine waits for anyway.
//
// op's Timeout counts from the start of Wait, as a time.Timer's armed in a
// select counts from there (so never early: the use was added before), and
// is timed by a runtime timer, not by the purgatory's wheel: a wheel made
// WithManualClock does not drive these waits.
// Everything else is TryCompleteElseWatch's: the Timeout rules (zero
// panics unless Context has a deadline; negative is a deadline already
// passed; NoTimeout), Shed, Close, and the misuses that panic.
//
// Reuse is simpler than TryCompleteElseWatch's: a parked use is over, and
// recycled, once Wait has returned (or TryCompleteElsePark returned true), so
// the goroutine that waited owns the operation again and may pass it again,
// or put it back in a pool of its own, with no Recycle: read what the use
// produced, then Put. If it is a [Recycler], its Recycle runs on that
// goroutine before Wait (or TryCompleteElsePark) returns; a Recycle that
// puts it in a pool makes it another goroutine's from then, so read what the
// use produced in OnComplete instead.
func (p *Purgatory[K]) TryCompleteElsePark(op Operation, keys ...K) (_ Parked, done bool) {
	p.mustBeNew()
	o := opOf(op, "TryCompleteElsePark")
	if len(keys) == 0 {
		panic("purgatory: TryCompleteElsePark called with no keys; an operation must be watched under at least one")
	}
	p.watchers.mustHashKeys(keys)
	return p.park(op, o, &watches[K]{keys: keys})
}

// TryCompleteElseParkAt is [Purgatory.TryCompleteElsePark] for an operation
// that waits until each of its keys reaches a level, as
// [Purgatory.TryCompleteElseWatchAt] watches one: it is tried on a key's
// account only once Advance reports the key at or past its level (or by
// CheckAndComplete, whatever the level), and its waiter times itself, so
// its timeout is as punctual as Wait's. Everything else is
// TryCompleteElsePark's (call it under the lock that guards what TryComplete
// reads, then Wait) and TryCompleteElseWatchAt's (a key given twice is
// watched once, at the lower level).
func (p *Purgatory[K]) TryCompleteElseParkAt(op Operation, at ...Level[K]) (_ Parked, done bool) {
	p.mustBeNew()
	o := opOf(op, "TryCompleteElseParkAt")
	if len(at) == 0 {
		panic("purgatory: TryCompleteElseParkAt called with no levels; an operation must be watched under at least one key")
	}
	p.watchers.mustHashLevels(at)
	return p.park(op, o, &watches[K]{at: at})
}

// park is TryCompleteElsePark's and TryCompleteElseParkAt's, once their
// arguments are checked.
func (p *Purgatory[K]) park(op Operation, o *Op, ws *watches[K]) (_ Parked, done bool) {
	pk := o.parking()
	pk.one, pk.bell, pk.ring = len(ws.keys) == 1, nil, nil // rule 7
	var g gen
	bound, returned := false, false
	defer func() {
		if bound && (done || !returned) { // completed at once, or TryComplete panicked: the use ended here
			pk.leave(o, g, false, false)
		}
	}()
	done = p.add(op, o, ws, func(bg gen) { g, bound = bg, true; pk.park(bg) })
	returned = true
	switch {
	case done:
		return Parked{outcome: Completed}, true
	case !bound: // ended by ForceComplete before it was ever added
		return Parked{outcome: o.Outcome()}, false
	}
	w := Parked{o: o, impl: op, g: g}
	if o.Timeout != NoTimeout {
		w.timeout = o.Timeout
	}
	return w, false
}

// park records use g as the parked one (rule 1).
func (pk *parking) park(g gen) {
	sched.At("parking store")
	pk.use.Store(uint64(g) + 1)
}

// parking returns the operation's parking, made at its first parked use.
// Only the goroutine that passes the operation (its owner between uses)
// calls it, before bind, whose compare-and-swap every later reader's load of
// the state follows.
func (o *Op) parking() *parking {
	m := o.madeMore()
	if m.park == nil {
		m.park = &parking{ended: make(chan struct{}, 1)}
	}
	return m.park
}

// Wait waits for the parked use to end, on the calling goroutine, and
// returns its Outcome: Completed, Forced, Closed, Cancelled or Shed as
// TryCompleteElseWatch's operation would end; Expired once op.Timeout has
// passed since Wait began, ContextDone once op.Context is
// done, unless a try under way completes the use meanwhile (a try that
// passes wins, as ever). An Expired or ContextDone use is ended here:
// OnComplete (and OnExpiration after it, for Expired) run on this goroutine
// before Wait returns, and a panic in them reaches the caller of Wait, with
// the use ended and counted all the same (Stats.Panics does not count it,
// as it counts no panic on the caller's own goroutine). Whoever else ends
// the use runs them on its own goroutine, and Wait returns after they have
// returned. When Wait returns, the use is over: nothing of it runs any more,
// a Recycler's Recycle has run, on this goroutine, and the operation is the
// caller's to pass again or to pool (TryCompleteElsePark). Close ends a parked
// use Closed, and its Wait returns; Shutdown does not wait for callbacks that
// run in Wait, on no goroutine of the library's.
//
// These expiries are counted as the wheel's are (Stats, the purgatory's
// operation-duration histogram), but they are no timer of the wheel: the
// wheel's lateness histograms and Stats do not see them. Call Wait once;
// a second call, or one on a Parked whose operation has been passed to
// TryCompleteElsePark again, panics.
func (w Parked) Wait() Outcome {
	if w.o == nil {
		return w.outcome
	}
	if !w.o.parkedOn(w.g) {
		panic("purgatory: Parked.Wait called twice, or after its operation was passed again; call Wait once for each TryCompleteElsePark")
	}
	pk := w.o.more.park
	token, timed := false, false
	defer func() { pk.leave(w.o, w.g, token, timed) }() // also when a callback run here panics
	var timeout <-chan time.Time
	if w.timeout != 0 { // one clock read, the runtime timer's own
		if pk.timer == nil {
			pk.timer = time.NewTimer(w.timeout)
		} else {
			pk.timer.Reset(w.timeout)
		}
		timed, timeout = true, pk.timer.C
	}
	var done <-chan struct{}
	if ctx := w.o.Context; ctx != nil {
		done = ctx.Done()
	}
	if token = w.await(pk, timeout, done); token {
		return w.o.Outcome()
	}
	<-pk.ended // rule 3: the use's end, by this claim or another path's
	token = true
	return w.o.Outcome()
}

// await waits for the use's token, trying the use at each ring of its key's
// bell (rule 7), and reports true once it has the token; or, when timeout
// or done comes first, claims the use (rule 3) and reports false.
func (w Parked) await(pk *parking, timeout <-chan time.Time, done <-chan struct{}) bool {
	bell := pk.ring // nil unless the waiter tries its use
	for {
		select {
		case <-pk.ended:
			return true
		case <-bell:
			if pk.use.Load() == 0 { // the use ended, and its token came with the ring: as if it came first
				<-pk.ended
				return true
			}
			if bell = w.wake(pk); bell == nil { // it ended the use, and took it: no token comes
				return true
			}
			continue
		case <-timeout:
			w.o.endAt(w.g, w.impl, Expired)
		case <-done:
			w.o.endAt(w.g, w.impl, ContextDone)
		}
		return false
	}
}
