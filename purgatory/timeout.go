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
// unless an outcome was left for the tries. TryCompleteElseWatch holds the
// try bit, so detach finds the pin and stops the timer (Op.detach says why).
// The fire may come at once (a negative Timeout): it leaves Expired for the
// tries.
func (o *Op) armTimer() {
	if o.pin(armedBit) {
		o.timer.Reset(o.Timeout)
	}
}

// watchContext ties the use to its context, pinned (ctxBit) from before the
// callback is registered, unless an outcome was left for the tries; detach
// finds the stop function it keeps (as for armTimer).
func (o *Op) watchContext() {
	if o.pin(ctxBit) {
		o.stopCtx = context.AfterFunc(o.Context, o.contextDone)
	}
}
