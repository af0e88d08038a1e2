package purgatory

import (
	"context"
	"time"
)

// Wait parks the calling goroutine until ready returns true, ctx is done, or
// timeout passes, and returns how the wait ended: Completed (ready returned
// true), ContextDone, Expired, Shed (over WithMaxDelayed's bound: not parked
// at all), Forced (ForceCompleteForKey on one of its keys) or Closed (the
// purgatory closed). It is the long poll of a net/http handler in one call,
// with no operation type and no channel of the caller's:
//
//	switch polls.Wait(r.Context(), 30*time.Second, func() bool { return job.Version() > after }, job.ID) {
//	case purgatory.Shed:
//		w.Header().Set("Retry-After", "1")
//		http.Error(w, "busy", http.StatusServiceUnavailable)
//	default: // Completed, Expired, ... : answer with the state as it is now
//	}
//
// ready is tried at once, then by every CheckAndComplete (or
// TryCompleteElseWatch) of one of keys, as an operation's TryComplete is, on
// the goroutine that calls it: it must only check, and not block. A panic in
// ready reaches that goroutine (the caller of Wait, for the first tries). A
// timeout of [NoTimeout] waits for ready or ctx only; a zero timeout is a
// misuse unless ctx has a deadline, which then bounds the wait. A nil ctx or
// ready, or no keys, is a misuse and panics.
func (p *Purgatory[K]) Wait(ctx context.Context, timeout time.Duration, ready func() bool, keys ...K) Outcome {
	p.mustBeNew()
	switch {
	case ctx == nil:
		panic("purgatory: Wait called with a nil Context; pass the request's context (r.Context()) or context.Background()")
	case ready == nil:
		panic("purgatory: Wait called with a nil ready func")
	case len(keys) == 0:
		panic("purgatory: Wait called with no keys; pass the keys whose CheckAndComplete should try ready (a job's ID, say)")
	case timeout == 0:
		if _, ok := ctx.Deadline(); !ok {
			panic("purgatory: Wait called with a zero timeout and a context without a deadline; pass a positive timeout, or purgatory.NoTimeout to wait for ready or ctx only")
		}
	}
	w := &waiter{ready: ready, done: make(chan struct{})}
	w.Timeout, w.Context = timeout, ctx
	if p.TryCompleteElseWatch(w, keys...) {
		return Completed
	}
	<-w.done
	return w.Outcome()
}

// waiter is Wait's operation: OnComplete closes done, which Wait waits on.
type waiter struct {
	Op
	ready func() bool
	done  chan struct{}
}

func (w *waiter) TryComplete() bool { return w.ready() }
func (w *waiter) OnComplete()       { close(w.done) }
func (w *waiter) OnExpiration()     {}
