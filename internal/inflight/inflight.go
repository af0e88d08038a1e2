// Package inflight counts callbacks that are running, so that a Shutdown can
// wait for them without knowing which goroutines run them, and tells whether
// the calling goroutine is itself inside such a callback, so that a Shutdown
// called from one does not wait for itself. Go has no goroutine IDs on
// purpose; the call stack answers the second question instead.
package inflight

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
)

// Counter counts callbacks in flight. The zero Counter is ready to use.
type Counter struct {
	n    atomic.Int64
	mu   sync.Mutex
	zero chan struct{} // closed when n reaches 0, if someone waits
}

// Add counts k more callbacks in flight.
func (c *Counter) Add(k int) { c.n.Add(int64(k)) }

// Count returns how many callbacks are in flight now.
func (c *Counter) Count() int64 { return c.n.Load() }

// Done counts one callback as returned.
func (c *Counter) Done() {
	if c.n.Add(-1) != 0 {
		return
	}
	c.mu.Lock()
	if c.zero != nil && c.n.Load() == 0 {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

// Wait returns nil once no callback is in flight, or ctx's error if ctx is
// done first.
func (c *Counter) Wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n.Load() == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	zero := c.zero
	c.mu.Unlock()
	select {
	case <-zero:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Frames names functions for OnStack. Make it once, at package
// initialisation, from the functions themselves (method expressions), so
// that a renamed function cannot silently stop matching.
type Frames []string

// FramesOf returns the names of fns, which must be funcs.
func FramesOf(fns ...any) Frames {
	names := make(Frames, len(fns))
	for i, f := range fns {
		names[i] = runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	}
	return names
}

// OnStack reports whether any of the functions in fs is on the calling
// goroutine's stack. It costs a stack walk: call it on rare paths only.
func (fs Frames) OnStack() bool {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs) // from OnStack's caller
	for n == len(pcs) {          // a deep stack: take it whole
		pcs = make([]uintptr, 2*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		for _, name := range fs {
			if f.Function == name {
				return true
			}
		}
		if !more {
			return false
		}
	}
}
