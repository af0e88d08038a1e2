package purgatory

import (
	"context"
	"sync"
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
// ready is tried at once, then by every CheckAndComplete, HandOff or Advance
// of one of keys, as an operation's TryComplete is, on the goroutine that
// calls it; it must not block. With one key, CheckAndComplete and Advance
// wake the wait instead, and ready is tried on the goroutine that called
// Wait ([Purgatory.TryCompleteElsePark]): with several waits on a key, the
// walk closes one channel, not one try per wait. No event is lost between the first try and
// the watch: ready is tried once more after the wait is watched, so a change
// made (and checked) in between is seen by that try, and one made after it
// by the next CheckAndComplete's. It may take what the wait is for (the next
// job of a queue, say, with HandOff after each push): a ready that returns
// true ends the wait Completed even if its timeout, ctx or Close comes during
// that very try (see Operation.TryComplete), so what it took is never lost.
// Wait returns only once no try of its wait can still run: after the one that
// passed, or after the try under way when the wait ended otherwise. When the
// purgatory's wheel stops under it, the purgatory closes and Wait returns
// Closed. A panic in ready reaches the goroutine that tried it (the caller of
// Wait, for the first tries).
//
// The wait times itself on the calling goroutine ([Purgatory.TryCompleteElsePark]),
// so its timeout and ctx end it in one goroutine wake-up, and it follows the
// runtime's clock, not a wheel made WithManualClock.
//
// A timeout of zero or less is a poll: ready is tried once, on the calling
// goroutine, and Wait returns Completed if it passed, else Expired, at once
// (Closed after Close, without a try); nothing is watched or counted, and ctx
// is not consulted. (A ?wait=0 query answers at once.) A timeout of
// [NoTimeout] waits for ready or ctx only. A nil ctx or ready, or no keys, is
// a misuse and panics.
func (p *Purgatory[K]) Wait(ctx context.Context, timeout time.Duration, ready func() bool, keys ...K) Outcome {
	if p.mustWait("Wait", ctx, ready); len(keys) == 0 {
		panic("purgatory: Wait called with no keys; pass the keys whose CheckAndComplete or HandOff should try ready (a job's ID, say)")
	}
	return p.wait(ctx, timeout, ready, keys, nil)
}

// WaitAt is [Purgatory.Wait] for a wait until each key reaches a level:
// ready is tried on a key's account only once [Purgatory.Advance] reports
// the key at or past its level (and by every CheckAndComplete of the key,
// whatever its level), as [Purgatory.TryCompleteElseWatchAt] tries an
// operation. Use it where the waiters of one key wait for different levels
// of a number that only grows (a fetch for its offset, an index past each
// waiter's own), so that an Advance tries only those it reached; where every
// event reaches every waiter of its key (a version's long poll, woken by
// each change), Wait costs less. Everything else is Wait's.
func (p *Purgatory[K]) WaitAt(ctx context.Context, timeout time.Duration, ready func() bool, at ...Level[K]) Outcome {
	if p.mustWait("WaitAt", ctx, ready); len(at) == 0 {
		panic("purgatory: WaitAt called with no levels; pass purgatory.At(key, level) for each key whose Advance should try ready")
	}
	return p.wait(ctx, timeout, ready, nil, at)
}

// wait is Wait's and WaitAt's once their arguments are checked: parked under
// keys, or at the levels at if there are any.
func (p *Purgatory[K]) wait(ctx context.Context, timeout time.Duration, ready func() bool, keys []K, at []Level[K]) Outcome {
	if timeout <= 0 {
		return p.poll(ready)
	}
	w := p.waiters.get()
	w.ready, w.Timeout, w.Context = ready, timeout, ctx
	var parked Parked
	var done bool
	if len(at) > 0 {
		parked, done = p.TryCompleteElseParkAt(w, at...)
	} else {
		parked, done = p.TryCompleteElsePark(w, keys...)
	}
	if done {
		return Completed
	}
	return parked.Wait()
}

// mustWait panics for Wait's and WaitAt's misuses but one, the call with
// nothing to watch, whose message is each caller's own.
func (p *Purgatory[K]) mustWait(name string, ctx context.Context, ready func() bool) {
	p.mustBeNew()
	switch {
	case ctx == nil:
		panic("purgatory: " + name + " called with a nil Context; pass the request's context (r.Context()) or context.Background()")
	case ready == nil:
		panic("purgatory: " + name + " called with a nil ready func")
	}
}

// poll is Wait with no time to wait: one try, at once.
func (p *Purgatory[K]) poll(ready func() bool) Outcome {
	switch {
	case p.isClosed():
		return Closed
	case ready():
		return Completed
	}
	return Expired
}

// waiter is Wait's operation, parked: Parked.Wait waits for it. Waiters are
// pooled per purgatory (an operation's later uses go to the purgatory of its
// first), with their parking, its channel and its timer, so that a Wait
// allocates nothing once the pool holds one for it.
type waiter struct {
	Op
	ready func() bool
	pool  *waiters
}

func (w *waiter) TryComplete() bool { return w.ready() }
func (w *waiter) OnComplete()       {}
func (w *waiter) OnExpiration()     {}

// Recycle puts w back in its pool: the purgatory is done with its use, which
// is, at the latest, when Parked.Wait lets go of it. A use withdrawn because
// ready panicked is never recycled, and its waiter is left to the collector.
func (w *waiter) Recycle() {
	w.ready, w.Context = nil, nil // hold neither the caller's closure nor its context
	w.pool.Put(w)
}

// waiters is a purgatory's pool of Wait's operations.
type waiters struct{ sync.Pool }

func (ws *waiters) get() *waiter {
	if w, ok := ws.Get().(*waiter); ok {
		return w
	}
	return &waiter{pool: ws}
}
