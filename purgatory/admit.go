package purgatory

import (
	"context"
	"sync"
	"sync/atomic"
)

// Admit waits until fewer operations are delayed than [WithMaxDelayed]'s
// bound: backpressure, for a caller that reads requests from its clients and
// would rather stop reading while the purgatory is full than shed (Shed) or
// park more than its CheckAndComplete calls can walk in time. The requests
// then wait in the clients' connections, and one whose completion event
// arrives meanwhile completes at once when it is added, without being parked.
// Call Admit before reading the next request, and TryCompleteElseWatch after;
// count the time Admit took against the request's timeout. (In net/http the
// request has been read before its handler runs: there, shed instead and
// answer 503 with Retry-After, or call Admit in a middleware as a queue in
// front of the purgatory; the repository's docs/operations.md compares the
// two.)
//
// Admit returns nil at once with no bound, or below it; ctx's error if ctx
// is done first; and nil once the purgatory is closed (TryCompleteElseWatch
// then ends the operation Closed). Goroutines admitted at the same moment may
// together pass the bound, and the ones past it are shed by
// TryCompleteElseWatch. Admit may wait, so do not call it from an operation's
// callbacks, which must not block. It starts no goroutine, and an operation
// that ends wakes waiters only while there are some: an atomic load per
// operation otherwise.
func (p *Purgatory[K]) Admit(ctx context.Context) error {
	p.mustBeNew()
	if ctx == nil {
		panic("purgatory: Admit called with a nil Context; pass context.Background() to wait without a deadline")
	}
	r := &p.core.room
	if !p.full() {
		return nil
	}
	r.waiters.Add(1)
	defer r.waiters.Add(-1)
	for {
		// Take the channel before looking again: an end that makes room
		// after this look closes this channel, so no wake-up is lost.
		wake := r.channel()
		if !p.full() {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// full reports whether Admit must wait: the purgatory has a bound, is at or
// over it, and is open.
func (p *Purgatory[K]) full() bool {
	n := p.core.settings.maxDelayed
	return n > 0 && p.core.counters.delayed() >= int64(n) && !p.closed.Load()
}

// room is where Admit's callers wait: a channel that is closed, and replaced,
// whenever an operation ends below the bound or the purgatory closes.
type room struct {
	waiters atomic.Int32 // Admit calls waiting; ends look here first
	mu      sync.Mutex
	wake    chan struct{} // nil until a waiter needs one
}

// channel returns the channel the next wake-up closes.
func (r *room) channel() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return r.wake
}

// wakeAll wakes every waiter, which looks at the count again.
func (r *room) wakeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// madeRoom is called after an operation leaves Delayed: it wakes Admit's waiters
// if there are any and there is room now.
func (c *core) madeRoom() {
	if c.room.waiters.Load() == 0 {
		return
	}
	if n := c.settings.maxDelayed; c.counters.delayed() < int64(n) {
		c.room.wakeAll()
	}
}
