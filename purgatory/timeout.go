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

// arm starts the operation's timeout and ties it to its context.
func (o *Op) arm() {
	if o.Timeout != 0 && o.Timeout != NoTimeout {
		o.armTimer()
	}
	if o.Context != nil {
		o.watchContext()
	}
}

// armTimer arms the use's timeout, pinned (armedBit) from before it arms,
// unless the use has ended; and stops it again if the use ended while it was
// being armed. detach, which the winner of the claim runs, stops the timer
// if it finds the pin: of armTimer's check after arming and detach's look at
// the pin after the claim, on sequentially consistent atomics, one sees the
// other, so no timer of an ended use stays armed.
func (o *Op) armTimer() {
	if !o.pin(armedBit) {
		return
	}
	o.timer.Reset(o.Timeout)
	if o.ended() {
		o.stopTimer()
	}
}

// stopTimer is armTimer's stop of the timeout of a use that ended while it
// was being armed: it lets go of the pin if that prevented the fire; if not,
// the fire runs (or ran) and lets go of it (expire). (detach stops it the
// same way.) A timeout the wheel handed back unfired, because it stopped,
// keeps its pin: that use is never over, and its operation is not recycled.
func (o *Op) stopTimer() {
	if o.timer.Stop() {
		o.unpin(armedBit)
	}
}

// watchContext ties the use to its context, pinned (ctxBit) from before the
// callback is registered, unless the use has ended; and detaches it at once
// if the use ended meanwhile. The stop function is kept under Op.book, where
// detach finds it.
func (o *Op) watchContext() {
	if !o.pin(ctxBit) {
		return
	}
	stop := context.AfterFunc(o.Context, o.contextDone)
	o.book.Lock()
	done := o.ended()
	if !done {
		o.stopCtx = stop
	}
	o.book.Unlock()
	if done && stop() {
		o.unpin(ctxBit)
	}
}
