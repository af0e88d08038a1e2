package timingwheel

import (
	"context"
	"sync"
	"time"
)

// Request deadlines are the largest population of timers in a Go server, and
// context.WithTimeout gives each its own runtime timer and a cancelCtx around
// it. WithTimeout and WithDeadline make one allocation that is both the
// context and its Timer on the wheel, stopped in O(1) when the context is
// cancelled first, as most are.

// WithTimeout is context.WithTimeout with its timer on the wheel: see
// WithDeadline.
func (tw *TimingWheel) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	tw.mustBeNew()
	now := tw.now()
	return tw.withExpiration(parent, now, tw.after(now, d))
}

// WithDeadline is context.WithDeadline with its timer on the wheel: the
// returned context is done when deadline passes (Err returns
// context.DeadlineExceeded), when the returned cancel function is called (Err
// returns context.Canceled), or when parent is done (parent's Err), whichever
// happens first; context.Cause reports as for the standard library's
// contexts, and Deadline the earlier of deadline and parent's. Like
// AfterFunc, the deadline is never early. Call cancel as soon as the work is
// done: it stops the timer. On a stopped wheel the deadline never fires, but
// cancel and the parent still end the context.
func (tw *TimingWheel) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	tw.mustBeNew()
	return tw.withExpiration(parent, tw.now(), tw.at(deadline))
}

// withExpiration makes the context for a deadline exp, given in ns since the
// wheel's start as now is.
func (tw *TimingWheel) withExpiration(parent context.Context, now time.Duration, exp int64) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("timingwheel: WithTimeout or WithDeadline called with a nil parent context")
	}
	deadline := tw.start.Add(time.Duration(exp))
	if cur, ok := parent.Deadline(); ok && !cur.After(deadline) {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	c := &deadlineCtx{parent: parent, deadline: deadline}
	c.timer.tw = tw
	c.timer.e.Value = &c.timer
	c.timer.f = c.expire
	if parent.Done() != nil {
		if err := parent.Err(); err != nil {
			c.end(err)
			return c, c.cancel
		}
		c.stopParent = context.AfterFunc(parent, func() { c.end(parent.Err()) })
	}
	if exp <= int64(now) { // already passed: done at once, as the standard library's
		c.end(context.DeadlineExceeded)
		return c, c.cancel
	}
	c.timer.exp = exp
	tw.mu.Lock()
	if tw.state != stopped {
		tw.schedule(&c.timer)
	} else {
		tw.rejected.Add(1)
	}
	tw.mu.Unlock()
	return c, c.cancel
}

// deadlineCtx is a context that ends at its deadline, by its cancel function
// or with its parent. Its Timer is part of it: one allocation for both.
type deadlineCtx struct {
	parent     context.Context
	deadline   time.Time
	timer      Timer
	stopParent func() bool // detaches from parent; nil if parent is never done

	mu   sync.Mutex
	done chan struct{} // made on first Done, or closed at the end
	err  error
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *deadlineCtx) expire() { c.end(context.DeadlineExceeded) }
func (c *deadlineCtx) cancel() { c.end(context.Canceled) }

// end ends the context with err once; later calls do nothing. (context.Cause
// then reports err, or the parent's cause if the parent ended it.)
func (c *deadlineCtx) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	c.mu.Unlock()
	c.timer.Stop()
	if c.stopParent != nil {
		c.stopParent()
	}
}

func (c *deadlineCtx) String() string { return "timingwheel.WithDeadline(" + c.deadline.String() + ")" }
