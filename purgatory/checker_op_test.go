//go:build purgatorycheck

package purgatory

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// checked is the interleaving checker's operation: it records, per use,
// what the purgatory did with it, and what it must not have done.
type checked struct {
	Op
	w      *cworld
	trying atomic.Int32

	mu   sync.Mutex // guards uses; held only between points
	uses [2]useRecord
}

// useRecord is what happened to one use of a checked operation.
type useRecord struct {
	completes, expirations, recycles int
	with                             Outcome // the outcome OnComplete saw
	passed                           bool    // a try returned true
	cancelled, withdrawn             bool    // CancelForKey ended it; its add panicked and was undone
	waited                           Outcome // what Parked.Wait returned, for a parked use
	forced                           bool    // ForceComplete returned true for it
}

// errInjected is what a try that the scenario makes panic panics with.
var errInjected = fmt.Errorf("injected panic")

// use returns the record of the use in state s, or nil past the second.
func (c *checked) use(s int64) *useRecord {
	if g := genOf(s); g < 2 {
		return &c.uses[g]
	}
	c.w.fail("a third use of the operation")
	return nil
}

func (c *checked) record(f func(u *useRecord)) {
	s := c.state.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := c.use(s); u != nil {
		f(u)
	}
}

// TryComplete is a step of its own (a point), runs one at a time and never
// for an ended or recycled use, and answers as the world says (each way the
// checker chooses, or by an item taken), or panics where the scenario lets
// it.
func (c *checked) TryComplete() bool {
	if c.w.hands {
		sched.At("TryComplete") // a try is a step of its own; else answer's Choose is its point
	}
	if c.trying.Add(1) > 1 {
		c.w.fail("two tries of one operation at once")
	}
	defer c.trying.Add(-1)
	c.record(func(u *useRecord) {
		if ended(c.state.Load()) || u.recycles > 0 {
			c.w.fail("a try of an ended or recycled use")
		}
	})
	ok := c.w.answer()
	if ok {
		c.record(func(u *useRecord) { u.passed = true })
	}
	return ok
}

func (c *checked) OnComplete() {
	out := outcomeOf(c.state.Load())
	if out != Expired && c.timing == timingWheel && c.w.tw.Len() != 0 {
		// detach has stopped the timer, or found it fired: a completed
		// use's timeout left on the wheel holds the use until it fires.
		c.w.fail(fmt.Sprintf("OnComplete (%v) with the use's timer still on the wheel", out))
	}
	c.record(func(u *useRecord) {
		u.completes++
		u.with = out
		switch {
		case out == Pending || out == withdrawn:
			c.w.fail("OnComplete before the use had its outcome")
		case u.completes > 1:
			c.w.fail("OnComplete twice for one use")
		case u.recycles > 0:
			c.w.fail("OnComplete after Recycle")
		}
	})
}

func (c *checked) OnExpiration() {
	out := outcomeOf(c.state.Load())
	c.record(func(u *useRecord) {
		u.expirations++
		if out != Expired || u.expirations > 1 || u.completes != 1 {
			c.w.fail(fmt.Sprintf("OnExpiration for a use %v, its %d time, after %d OnCompletes", out, u.expirations, u.completes))
		}
	})
}

func (c *checked) Recycle() {
	out := outcomeOf(c.state.Load())
	c.record(func(u *useRecord) {
		u.recycles++
		u.cancelled = out == Cancelled
		if u.recycles > 1 {
			c.w.fail("Recycle twice for one use")
		}
	})
	c.w.recycledOnce.Do(func() { close(c.w.recycled) })
}

// check holds the record of each use against its end, once nobody can go
// on: ended once, with the callbacks its outcome calls for, Completed if a
// try passed, recycled once unless undone.
func (c *checked) check(u *useRecord, g int) error {
	switch {
	case u.cancelled && !slices.ContainsFunc(c.w.keysOf[g], func(k string) bool { return slices.Contains(c.w.cancelKeys, k) }):
		return fmt.Errorf("use %d ended Cancelled, yet no CancelForKey named a key it is watched under (%v): a stale entry ended it", g, c.w.keysOf[g])
	case u.withdrawn:
		if u.completes+u.recycles+u.expirations != 0 {
			return fmt.Errorf("use %d, undone, ran its callbacks", g)
		}
		return nil
	case u.cancelled && u.completes == 0:
	case u.completes != 1:
		return fmt.Errorf("use %d: OnComplete ran %d times", g, u.completes)
	case u.passed && u.with != Completed:
		return fmt.Errorf("use %d: a try passed, yet it ended %v", g, u.with)
	case u.forced && u.with != Forced && !(u.passed && u.with == Completed):
		return fmt.Errorf("use %d: ForceComplete decided it, yet it ended %v with no try passed", g, u.with)
	case (u.expirations == 1) != (u.with == Expired):
		return fmt.Errorf("use %d: ended %v with %d OnExpirations", g, u.with, u.expirations)
	}
	if u.recycles != 1 {
		return fmt.Errorf("use %d: Recycle ran %d times", g, u.recycles)
	}
	if u.waited != Pending && u.waited != u.with && !(u.cancelled && u.waited == Cancelled) {
		return fmt.Errorf("use %d: Parked.Wait returned %v, the use ended %v", g, u.waited, u.with)
	}
	return nil
}
