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
// and reported there (the operation has ended all the same).
func (o *Op) expire() {
	o.core.counters.inflight.Add(1)
	defer o.core.counters.inflight.Done()
	defer o.core.recoverPanic("an expired operation's OnComplete or OnExpiration")
	o.end(Expired)
}

func (o *Op) contextDone() {
	o.core.counters.inflight.Add(1)
	defer o.core.counters.inflight.Done()
	defer o.core.recoverPanic("OnComplete of an operation whose context was done")
	o.end(ContextDone)
}

// arm starts the operation's timeout and ties it to its context.
func (o *Op) arm() {
	if o.Timeout != 0 && o.Timeout != NoTimeout {
		o.armTimer()
	}
	if ctx := o.Context; ctx != nil {
		o.setStopCtx(context.AfterFunc(ctx, o.contextDone))
	}
}

// armTimer arms the operation's timeout and records it, or stops it again if
// the operation ended while it was being armed.
func (o *Op) armTimer() {
	o.timer.Reset(o.Timeout)
	o.book.Lock()
	done := o.done
	o.timed = !done
	o.book.Unlock()
	if done {
		o.timer.Stop()
	}
}

// setStopCtx records how to detach the operation from its context, or detaches
// it at once if the operation has already ended.
func (o *Op) setStopCtx(stop func() bool) {
	o.book.Lock()
	done := o.done
	if !done {
		o.stopCtx = stop
	}
	o.book.Unlock()
	if done {
		stop()
	}
}
