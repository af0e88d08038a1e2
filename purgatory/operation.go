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
type Operation interface {
	// TryComplete reports whether the operation can complete now. It is
	// called with the operation's lock held (Op.Locker, or the Op's own
	// mutex), never after the operation has completed, and possibly many
	// times. It must only check: when it returns true, the purgatory
	// completes the operation, unless another path has just won.
	TryComplete() bool
	// OnComplete runs exactly once, whichever path completes the operation
	// (Op.Outcome tells which), on the goroutine that completed it, with no
	// library lock held. It does not run for an operation cancelled by
	// CancelForKey.
	OnComplete()
	// OnExpiration runs after OnComplete when the timeout completed the
	// operation (Outcome Expired).
	OnExpiration()

	op() *Op
}

// Outcome is how an operation ended.
type Outcome int32

const (
	Pending     Outcome = iota // not completed yet
	Completed                  // TryComplete returned true
	Forced                     // ForceComplete won
	Expired                    // its Timeout passed first, or the purgatory was closed
	ContextDone                // its Context was done first
	Cancelled                  // CancelForKey removed it; OnComplete did not run
)

func (o Outcome) String() string {
	switch o {
	case Pending:
		return "pending"
	case Completed:
		return "completed"
	case Forced:
		return "forced"
	case Expired:
		return "expired"
	case ContextDone:
		return "context done"
	case Cancelled:
		return "cancelled"
	}
	return "unknown"
}

// Op is the purgatory's bookkeeping for one operation, to be embedded in an
// [Operation]. Set Timeout (and optionally Context and Locker) before handing
// the operation to TryCompleteElseWatch; the rest is private. An Op is used for
// one operation only and must not be copied after first use.
type Op struct {
	// What every try in CheckAndComplete reads comes first, on one cache line.
	state atomic.Int32 // an Outcome; Pending until one path wins the CAS
	added atomic.Bool  // set by the first TryCompleteElseWatch
	mu    sync.Mutex   // the operation's lock when Locker is nil
	impl  Operation    // the embedding operation; immutable once watched
	// Locker, if not nil, is held instead of the Op's own mutex while
	// TryComplete runs, so that several operations can share one lock
	// (Kafka's lockOpt).
	Locker sync.Locker
	// Timeout is how long the operation may wait after TryCompleteElseWatch
	// before it expires. Zero or less expires it as soon as possible unless
	// it completes at once.
	Timeout time.Duration
	// Context, if not nil, ties the operation to a context: if the context is
	// done before the operation completes, the operation completes with
	// Outcome ContextDone (OnComplete runs; OnExpiration does not).
	Context context.Context

	book    sync.Mutex // guards the fields below; never held while user code runs
	done    bool       // completed: nothing more may be attached
	stats   *counters
	start   time.Duration // since stats.epoch, when bound; read only with an observer
	first   node          // the place in the first key's watch list: most operations watch one key
	nodes   []*node       // places under further keys
	timer   *timingwheel.Timer
	stopCtx func() bool
}

func (o *Op) op() *Op { return o }

// Outcome returns how the operation ended, or Pending. Inside OnComplete it
// tells which path completed the operation.
func (o *Op) Outcome() Outcome { return Outcome(o.state.Load()) }

// IsCompleted reports whether the operation has completed (or been cancelled).
func (o *Op) IsCompleted() bool { return o.Outcome() != Pending }

func (o *Op) locker() sync.Locker {
	if o.Locker != nil {
		return o.Locker
	}
	return &o.mu
}

// ForceComplete completes op from outside the purgatory (Kafka's
// forceComplete), for example when a response arrives by another route. It
// returns true if this call completed op, and false if op had already completed
// or been cancelled: of all the paths that race to complete an operation, exactly
// one wins. OnComplete runs on the calling goroutine before ForceComplete
// returns. It may be called before op is handed to TryCompleteElseWatch, and from
// inside TryComplete (though returning true there is the usual way). A nil op is
// a misuse and panics.
func ForceComplete(op Operation) bool {
	if op == nil {
		panic("purgatory: ForceComplete called with a nil Operation")
	}
	o := op.op()
	if !o.claim(Forced) {
		return false
	}
	o.complete(op, Forced)
	return true
}

// tryClaim asks impl whether it can complete and, if so, claims the
// completion. The caller holds the operation's lock.
func (o *Op) tryClaim(impl Operation) bool {
	return o.state.Load() == int32(Pending) && impl.TryComplete() && o.claim(Completed)
}

// claim makes outcome the operation's outcome if it has none yet, and reports
// whether it did. Exactly one claim per operation succeeds.
func (o *Op) claim(outcome Outcome) bool {
	return o.state.CompareAndSwap(int32(Pending), int32(outcome))
}

// complete runs once, after a successful claim: it detaches the operation from
// its timer, context and watch lists, counts the outcome and runs the
// callbacks. No library lock is held when the callbacks run.
func (o *Op) complete(impl Operation, outcome Outcome) {
	o.book.Lock()
	o.done = true
	first := o.first.owner
	nodes, timer, stopCtx, stats := o.nodes, o.timer, o.stopCtx, o.stats
	o.nodes, o.timer, o.stopCtx = nil, nil, nil
	o.book.Unlock()

	if timer != nil {
		timer.Stop()
	}
	if stopCtx != nil {
		stopCtx()
	}
	if first != nil {
		first.remove(&o.first)
	}
	for _, n := range nodes {
		n.owner.remove(n)
	}
	if stats != nil {
		stats.record(outcome)
		if stats.observer != nil {
			stats.observer.OperationEnded(outcome, time.Since(stats.epoch)-o.start)
		}
	}
	if outcome == Cancelled {
		return
	}
	impl.OnComplete()
	if outcome == Expired {
		impl.OnExpiration()
	}
}

// expire is the timeout's callback; contextDone is the context's.
func (o *Op) expire()      { o.end(Expired) }
func (o *Op) contextDone() { o.end(ContextDone) }

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
// embedding operation and the purgatory's counters. It returns false if the
// operation had already completed (ForceComplete before it was added).
func (o *Op) bind(impl Operation, stats *counters) bool {
	o.book.Lock()
	defer o.book.Unlock()
	if o.done || o.state.Load() != int32(Pending) {
		return false
	}
	o.impl, o.stats = impl, stats
	if stats.observer != nil {
		o.start = time.Since(stats.epoch)
	}
	stats.added.Add(1)
	stats.delayed.Add(1)
	return true
}

// setTimer records the operation's timeout timer, or stops the timer if the
// operation completed while it was being started.
func (o *Op) setTimer(t *timingwheel.Timer) {
	o.book.Lock()
	done := o.done
	if !done {
		o.timer = t
	}
	o.book.Unlock()
	if done {
		t.Stop()
	}
}

// setStopCtx records how to detach the operation from its context, or detaches
// it at once if the operation has already completed.
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
