package purgatory

import (
	"context"
	"math"
	"time"
)

// NoTimeout, as Op.Timeout, makes an operation wait without a timeout: only
// completion, ForceComplete, its Context, CancelForKey or Close end it. (It is
// the largest Duration, about 292 years, so a computed timeout that saturates
// means the same thing.)
const NoTimeout time.Duration = math.MaxInt64

// opTimeout is an operation as its timeout's Handler, a type of its own so
// that Op has no Fire method to promote into the user's type.
type opTimeout Op

func (o *opTimeout) Fire() { (*Op)(o).expire() }

// Drain is the wheel's word that the timeout will not fire: the wheel
// stopped with it pending, or refused it, stopped already (timingwheel's
// Drainer). The use lets go of the timeout's pin then, as a fire would at
// its end; the purgatory, which learns of the stop too, ends the use
// Closed. Without it, a use whose outcome a try or a walk was to apply when
// the wheel stopped (Close stops a wheel the purgatory made, after its
// sweep) kept the pin for good, and was never over: the interleaving
// checker found it on the code (issue 70, "own wheel: add, handoff, close").
func (o *opTimeout) Drain() {
	op := (*Op)(o)
	defer op.core.recoverPanic("a drained timeout's Recycle")
	op.unpin(armedBit)
}

// expire is the timeout's callback and contextDone the context's. They run on
// goroutines the library owns, so a panic in the user's callbacks is recovered
// and reported there (the operation has ended all the same). Each ends the
// current use, which its pin (armedBit, ctxBit) keeps from being over, and
// so from a next use, until it lets go of the pin, last.
func (o *Op) expire() {
	c := o.core
	c.counters.inflight.Add(1)
	defer c.counters.inflight.Done()
	defer c.recoverPanic("an expired operation's OnComplete, OnExpiration or Recycle")
	defer o.unpin(armedBit)
	o.endOwn(Expired)
}

func (o *Op) contextDone() {
	c := o.core
	c.counters.inflight.Add(1)
	defer c.counters.inflight.Done()
	defer c.recoverPanic("OnComplete or Recycle of an operation whose context was done")
	defer o.unpin(ctxBit)
	o.endOwn(ContextDone)
}

// timing is who lets go of a use's timeout pin (armedBit), which bind sets
// for a use with a timeout: Op.timing, written by bind and by armTimer while
// TryCompleteElseWatch holds the try bit, and read with no lock by detach
// (Op.detach says why that is enough).
type timing uint8

const (
	timingUnarmed timing = iota // nothing armed (yet): detach lets go
	timingWheel                 // armTimer armed the timer: detach, if its Stop prevents the fire; else the fire, at its end (expire)
	timingParked                // a parked use: its waiter (park.go)
)

// timed reports whether the operation's timeout goes on the wheel.
func (o *Op) timed() bool { return o.Timeout != 0 && o.Timeout != NoTimeout }

// timeoutPin returns the pin a use's bind sets for its timeout, with the bind's
// compare-and-swap rather than one of armTimer's own, and who lets go of it: a
// parked use's waiter, or for a timeout on the wheel, detach or the fire.
func (o *Op) timeoutPin(parked bool) (int64, timing) {
	switch {
	case parked:
		return armedBit, timingParked
	case o.timed():
		return armedBit, timingUnarmed
	}
	return 0, timingUnarmed
}

// arm starts the operation's timeout and ties it to its context.
func (o *Op) arm() {
	if o.timed() {
		o.armTimer()
	}
	if o.Context != nil {
		o.watchContext()
	}
}

// armTimer arms the use's timeout, pinned (armedBit) since bind.
// TryCompleteElseWatch holds the try bit, so detach finds timingWheel and
// stops the timer (Op.detach says why). An outcome may have been left for
// the tries since the caller looked: detach stops the timer all the same,
// unless the outcome is Expired, which only the timer's own fire leaves.
// The fire may come at once (a negative Timeout): it leaves Expired for the
// tries.
func (o *Op) armTimer() {
	o.timing = timingWheel
	o.timer.Reset(o.Timeout)
}

// watchContext ties the use to its context, pinned (ctxBit) from before the
// callback is registered, unless an outcome was left for the tries; detach
// finds the stop function it keeps (as for armTimer).
func (o *Op) watchContext() {
	if o.pin(ctxBit) {
		o.madeMore().stopCtx = context.AfterFunc(o.Context, o.contextDone)
	}
}
