package timingwheel

import (
	"context"
	"reflect"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// Request deadlines are the largest population of timers in a Go server, and
// context.WithTimeout gives each its own runtime timer and a cancelCtx around
// it. WithTimeout and WithDeadline make one allocation that is both the
// context and its Timer on the wheel, stopped in O(1) when the context is
// cancelled first, as most are.
//
// The standard library's contract, and how it is kept without its internals:
//   - Deadline is the time given, not the wheel's reading of it.
//   - Err and context.Cause: the first of deadline, cancel and parent wins, and
//     later ones change nothing. context.Cause asks Value for the nearest
//     cancelCtx (by an unexported key); deadlineCtx answers that key itself,
//     never with its parent's record, and holds a record of its own only when
//     its cause differs from its Err (a parent's cause).
//   - Children: a standard-library child of a deadlineCtx, or a deadlineCtx
//     under another, registers through the AfterFunc method, which the
//     context package looks for, instead of a goroutine that waits.
//   - A stopped wheel hands the timer back to the context (Timer.keepsDeadline),
//     which keeps its deadline on a runtime timer.

// WithTimeout is context.WithTimeout with its timer on the wheel: it returns
// tw.WithDeadline(parent, time.Now().Add(d)).
func (tw *TimingWheel) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return tw.withTimeout(parent, d, nil)
}

// WithTimeoutCause is context.WithTimeoutCause with its timer on the wheel: as
// WithTimeout, but context.Cause reports cause once the deadline passes.
func (tw *TimingWheel) WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return tw.withTimeout(parent, d, cause)
}

// withTimeout reads the monotonic clock only: time.Now would read the wall
// clock too, which costs as much again (BenchmarkContextTimeout). The
// deadline is the wheel's start plus the time since it plus d, which is
// time.Now().Add(d) unless the wall clock was stepped since the wheel
// started. A deadline that has passed (d <= 0: the context is done at once)
// or lies beyond the wheel's range is computed as the standard library
// does, since its instant is saturated (at the wheel's start, or at never).
func (tw *TimingWheel) withTimeout(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	tw.mustBeNew()
	now := tw.now()
	when := now.add(d)
	if d > 0 && when != never {
		return tw.withDeadline(parent, now, when, tw.timeOf(when), false, cause)
	}
	return tw.withDeadline(parent, now, when, time.Now().Add(d), true, cause)
}

// WithDeadline is context.WithDeadline with its timer on the wheel: the
// returned context is done when deadline passes (Err returns
// context.DeadlineExceeded), when the returned cancel function is called (Err
// returns context.Canceled), or when parent is done (parent's Err), whichever
// happens first; context.Cause, Deadline and Value report exactly as for the
// standard library's contexts. If parent's deadline is earlier, it returns
// context.WithCancel(parent), as the standard library does. Like AfterFunc,
// the deadline is never early. Call cancel as soon as the work is done: it
// stops the timer. Children of the context, the standard library's included,
// cost no goroutine while they wait.
//
// The deadline holds whatever happens to the wheel: if the wheel is stopped
// (or was already), the context keeps its deadline on a runtime timer.
func (tw *TimingWheel) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return tw.WithDeadlineCause(parent, deadline, nil)
}

// WithDeadlineCause is context.WithDeadlineCause with its timer on the wheel:
// as WithDeadline, but context.Cause reports cause once the deadline passes
// (a nil cause means context.DeadlineExceeded).
func (tw *TimingWheel) WithDeadlineCause(parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	tw.mustBeNew()
	return tw.withDeadline(parent, tw.now(), tw.instantOf(deadline), deadline, true, cause)
}

// withDeadline makes the context for deadline, which is the instant when;
// now is the instant of the call. A deadline that is not the time of when is
// given, and kept as it is.
func (tw *TimingWheel) withDeadline(parent context.Context, now, when instant, deadline time.Time, given bool, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("timingwheel: WithTimeout or WithDeadline called with a nil parent context")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		return context.WithCancel(parent) // the parent's deadline comes first
	}
	c := &deadlineCtx{parent: parent}
	if cause != nil {
		c.rare().cause = cause
	}
	if given {
		c.rare().deadline, c.extra.given = deadline, true
	}
	t := &c.timer.t
	t.h, t.when, t.keepsDeadline = (*ctxDeadline)(c), when, true
	t.sh.Store(tw.local())
	if c.follow(parent) {
		return c, c.cancel
	}
	if when <= now { // already passed: done at once, as the standard library's
		c.end(context.DeadlineExceeded, cause)
		return c, c.cancel
	}
	sh := t.lock()
	stopped := sh.tw.stopped()
	if !stopped {
		sh.register(t, when)
	}
	sh.mu.Unlock()
	if stopped {
		c.expire() // not due yet: onto a runtime timer
	}
	return c, c.cancel
}

// deadlineCtx is a context that ends at its deadline, by its cancel function
// or with its parent. Its Timer is part of it: one allocation for both.
type deadlineCtx struct {
	timer  Timer
	parent context.Context

	mu         sched.WheelMutex // guards the fields below and *extra
	done       chan struct{}    // made on first Done, or closed at the end
	err        error            // set once, at the end
	stopParent func() bool      // detaches from parent; nil if parent is never done
	extra      *rareFields      // nil until one of them is needed: most contexts need none
}

// rareFields are what few contexts need, kept apart so that the common one
// stays small (BenchmarkContextTimeout).
type rareFields struct {
	deadline time.Time   // as given to WithDeadline; immutable
	given    bool        // deadline is set; else it is the time of timer.t.when
	cause    error       // the deadline's cause (WithDeadlineCause); nil: DeadlineExceeded; immutable
	record   any         // a cancelled *context.cancelCtx holding the cause, if it differs from err
	runtime  *time.Timer // the deadline, once the wheel has stopped
	after    funcSet     // AfterFunc's functions, until the end
}

// rare returns c.extra, making it if needed; the caller holds c.mu, or is
// the only one to see c yet.
func (c *deadlineCtx) rare() *rareFields {
	if c.extra == nil {
		c.extra = new(rareFields)
	}
	return c.extra
}

// follow ties c to parent, and ends c at once if parent is done. It reports
// whether c has ended.
func (c *deadlineCtx) follow(parent context.Context) bool {
	if parent.Done() == nil {
		return false // never done
	}
	if err := parent.Err(); err != nil {
		c.end(err, context.Cause(parent))
		return true
	}
	onParent := func() { c.end(parent.Err(), context.Cause(parent)) }
	var stop func() bool
	if a, ok := parent.(afterFuncer); ok {
		stop = a.AfterFunc(onParent) // another deadlineCtx: no goroutine
	} else {
		stop = context.AfterFunc(parent, onParent)
	}
	c.mu.Lock()
	ended := c.err != nil // the parent ended c meanwhile
	if !ended {
		c.stopParent = stop
	}
	c.mu.Unlock()
	if ended {
		stop()
	}
	return ended
}

// afterFuncer is the method the context package looks for on a parent, so that
// a child need not wait for it in a goroutine of its own.
type afterFuncer interface {
	AfterFunc(f func()) (stop func() bool)
}

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	x := c.extra
	c.mu.Unlock()
	if x != nil && x.given {
		return x.deadline, true
	}
	return c.timer.t.wheel().timeOf(c.timer.t.when), true
}

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

// Value returns parent's value for key, except for the context package's own
// key for context.Cause, which c answers itself (see the top of this file).
func (c *deadlineCtx) Value(key any) any {
	if isCauseKey(key) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.extra == nil {
			return nil
		}
		return c.extra.record
	}
	return c.parent.Value(key)
}

// causeKeyProbe answers Value with itself for the context package's cause key,
// and nil for every other key: that is how isCauseKey recognises the key.
var causeKeyProbe, _ = context.WithCancel(context.Background())

func isCauseKey(key any) bool { return causeKeyProbe.Value(key) == causeKeyProbe }

// AfterFunc arranges to call f once c is done, on the goroutine that ends c,
// and returns a function that detaches f (true if that prevented the call). If
// c is done already, f starts at once in its own goroutine. The context
// package uses it for c's children, and context.AfterFunc(c, f) for its f, so
// that neither waits in a goroutine of its own. f must not block.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	return c.rare().after.add(f, &c.mu)
}

// ctxDeadline is a deadlineCtx as its timer's Handler, a type of its own so
// that the context has no Fire method for others to find.
type ctxDeadline deadlineCtx

func (c *ctxDeadline) Fire() { (*deadlineCtx)(c).expire() }

// expire is the timer's callback: it ends c at the deadline. Called before the
// deadline, by a wheel that is stopping (or stopped), it moves the deadline to
// a runtime timer instead.
func (c *deadlineCtx) expire() {
	if left := c.timer.t.when.until(c.timer.t.wheel().now()); left > 0 {
		c.mu.Lock()
		if x := c.rare(); c.err == nil && x.runtime == nil {
			x.runtime = time.AfterFunc(left, c.expire)
		}
		c.mu.Unlock()
		return
	}
	var cause error
	c.mu.Lock()
	if c.extra != nil {
		cause = c.extra.cause
	}
	c.mu.Unlock()
	c.end(context.DeadlineExceeded, cause)
}

func (c *deadlineCtx) cancel() { c.end(context.Canceled, nil) }

// closedDone is the Done channel of contexts that ended before anyone asked.
var closedDone = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// end ends the context with err and cause (nil: err) once; later calls do
// nothing. It stops the timers, detaches from the parent and runs the
// AfterFunc functions, with c.mu released.
func (c *deadlineCtx) end(err, cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if cause != nil && !same(cause, err) {
		record, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		c.rare().record = record
	}
	if c.done == nil {
		c.done = closedDone
	} else {
		close(c.done)
	}
	var after funcSet
	var rt *time.Timer
	if x := c.extra; x != nil {
		after, rt = x.after, x.runtime
		x.after = nil
	}
	stopParent := c.stopParent
	c.stopParent = nil
	c.mu.Unlock()

	c.timer.Stop()
	if rt != nil {
		rt.Stop()
	}
	if stopParent != nil {
		stopParent()
	}
	for f := range after {
		(*f)()
	}
}

// same reports whether a and b are the same error value, without the panic
// that == raises for two values of one uncomparable type.
func same(a, b error) bool {
	t := reflect.TypeOf(a)
	if t != reflect.TypeOf(b) || !t.Comparable() {
		return false
	}
	return a == b
}

func (c *deadlineCtx) String() string {
	dl, _ := c.Deadline()
	return "timingwheel.WithDeadline(" + dl.String() + ")"
}
