// Package timingwheel provides TimingWheel, a hierarchical timing wheel that
// holds millions of timers at O(1) cost to add or stop each, in the manner of
// Kafka's SystemTimer, and runs their callbacks never before their deadline
// and, like time.AfterFunc, without rounding them to a tick.
//
// A TimingWheel is a faster [time.AfterFunc] for programs with many timers that
// are mostly stopped before they fire (request timeouts, delayed retries):
//
//	tw, err := timingwheel.New()
//	...
//	defer tw.Stop()
//	t := tw.AfterFunc(30*time.Second, func() { ... })
//	...
//	t.Stop()
//
// Timers live in buckets of a wheel of [DefaultWheelSize] slots per level, one
// tick ([DefaultTick]) per slot on the finest level; coarser levels are created
// on demand. A single driver goroutine sleeps until the earliest bucket's tick
// begins or the earliest deadline within the current tick comes (no ticker: an
// idle wheel uses no CPU), then moves timers to finer levels or hands them to
// the executor. Time is measured on the monotonic clock only.
package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStopped is returned by Start and Err on a TimingWheel that has been
// stopped.
var ErrStopped = errors.New("timingwheel: stopped")

type state int

const (
	manual  state = iota // made WithManualClock and not started: AdvanceClock drives it
	running              // the driver goroutine drives it
	stopped
)

// TimingWheel schedules callbacks to run after a delay. It must be created with
// [New]. All its methods are safe for concurrent use, including from inside
// callbacks; callbacks never run while the wheel's lock is held.
//
// Lock order: mu is the wheel's only lock, from scheduling a timer to handing
// it to the executor; the executor's own lock is taken after it is released.
type TimingWheel struct {
	mu    sync.Mutex // guards w, state, sleepUntil and every Timer's place in the wheel
	w     *wheel
	state state
	start time.Time // epoch of the monotonic clock: deadlines are time.Since(start)
	exec  executor

	// sleepUntil is when the driver (or a waiting AdvanceClock) will next
	// look at the wheel, in ns since start; math.MaxInt64 when it waits for
	// nothing. A timer that is due earlier sends a token on wake.
	sleepUntil time.Duration
	wake       chan struct{} // capacity 1: a token means "look again"
	quit       chan struct{} // closed by Stop
	done       chan struct{} // closed when the driver exits; nil if none was started
	inflight   inflight      // callbacks handed to the executor and not yet returned

	onPanic  func(recovered any)
	observer Observer

	fired    atomic.Int64
	panics   atomic.Int64
	rejected atomic.Int64
}

// New returns a running TimingWheel: its driver goroutine runs timers as they
// come due until Stop. With [WithManualClock] it returns one that only
// AdvanceClock drives. It returns an error wrapping [ErrInvalidOption] if an
// option is out of range or nil.
func New(opts ...Option) (*TimingWheel, error) {
	c := config{tick: DefaultTick, size: DefaultWheelSize, exec: PoolExecutor(DefaultMaxWorkers)}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		o(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	tw := &TimingWheel{
		w:          newWheel(c.tick, c.size),
		start:      time.Now(),
		onPanic:    c.onPanic,
		observer:   c.observer,
		sleepUntil: math.MaxInt64,
		wake:       make(chan struct{}, 1),
		quit:       make(chan struct{}),
	}
	if c.exec.inline {
		tw.exec = inline{run: tw.run}
	} else {
		tw.exec = newPool(c.exec.workers, tw.run)
	}
	if !c.manual {
		tw.Start()
	}
	return tw, nil
}

// Start launches the driver goroutine of a wheel made [WithManualClock], after
// which AdvanceClock may no longer be called. It returns nil if the wheel is
// running (every wheel New makes without that option already is) and
// [ErrStopped] after Stop.
func (tw *TimingWheel) Start() error {
	tw.mustBeNew()
	tw.mu.Lock()
	defer tw.mu.Unlock()
	switch tw.state {
	case running:
		return nil
	case stopped:
		return ErrStopped
	}
	tw.state = running
	tw.done = make(chan struct{})
	go tw.drive()
	return nil
}

// Err returns [ErrStopped] once the wheel has been stopped, and nil before.
func (tw *TimingWheel) Err() error {
	tw.mustBeNew()
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.state == stopped {
		return ErrStopped
	}
	return nil
}

// Stop shuts the wheel down and returns the callbacks of the timers that were
// still pending, none of which will run: the caller may run them, hand them on,
// or drop them knowingly. Those timers' Stop then returns false. Like
// time.Timer.Stop, it does not wait for callbacks that have already been
// handed to the executor: use Shutdown for that. Stop may be called from a
// callback. Later calls return nil.
//
// After Stop, AfterFunc and ScheduleFunc return timers that never run (counted
// in Stats.Rejected), Reset returns false and does nothing, Start and Err
// return [ErrStopped], and the driver goroutine exits.
func (tw *TimingWheel) Stop() (pending []func()) {
	tw.mustBeNew()
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.state == stopped {
		return nil
	}
	tw.state = stopped
	close(tw.quit)
	tw.w.drain(func(e *entry) { pending = append(pending, e.Value.f) })
	return pending
}

// Shutdown stops the wheel as Stop does and then waits, until ctx is done,
// for the callbacks already handed to the executor to return and for the
// driver goroutine to exit (http.Server.Shutdown's convention). It returns the
// pending callbacks, as Stop, and ctx's error if ctx was done first. Called
// from a callback, Shutdown waits for that callback too, so it returns only
// when ctx is done: call Stop there. Later calls hand back nothing but wait
// the same way.
func (tw *TimingWheel) Shutdown(ctx context.Context) (pending []func(), err error) {
	pending = tw.Stop()
	if tw.done != nil {
		select {
		case <-tw.done:
		case <-ctx.Done():
			return pending, ctx.Err()
		}
	}
	return pending, tw.inflight.wait(ctx)
}

// Observer returns the Observer given with WithObserver, or nil.
func (tw *TimingWheel) Observer() Observer { return tw.observer }

// Len returns the number of pending timers. It reads one atomic counter.
func (tw *TimingWheel) Len() int {
	tw.mustBeNew()
	return int(tw.w.count.Load())
}

// mustBeNew panics with a message that says what to do on a TimingWheel that
// was not made by New, before any lock is taken.
func (tw *TimingWheel) mustBeNew() {
	if tw == nil || tw.w == nil {
		panic("timingwheel: TimingWheel must be created with New")
	}
}

// Stats is a snapshot of a TimingWheel's counters.
type Stats struct {
	Pending  int   // timers waiting to fire, as Len
	Fired    int64 // timers whose time came and were handed to the executor
	Panics   int64 // callbacks that panicked (recovered)
	Rejected int64 // timers scheduled after Stop, which never run
}

// Stats returns the wheel's counters. It takes no lock.
func (tw *TimingWheel) Stats() Stats {
	return Stats{
		Pending:  tw.Len(),
		Fired:    tw.fired.Load(),
		Panics:   tw.panics.Load(),
		Rejected: tw.rejected.Load(),
	}
}

// now returns the time since the wheel's start on the monotonic clock.
func (tw *TimingWheel) now() time.Duration { return time.Since(tw.start) }

// expiration returns now+d in nanoseconds since start, saturating at MaxInt64.
func (tw *TimingWheel) expiration(d time.Duration) int64 { return tw.after(tw.now(), d) }

// after returns now+d, saturating at MaxInt64.
func (tw *TimingWheel) after(now, d time.Duration) int64 {
	if d > math.MaxInt64-now {
		return math.MaxInt64
	}
	return int64(now + d)
}

// schedule puts t in the wheel, and wakes whoever waits on the wheel if t is
// due before it would look. The caller holds mu.
func (tw *TimingWheel) schedule(t *Timer) {
	if at, ok := tw.w.schedule(&t.e); ok && at < tw.sleepUntil {
		tw.sleepUntil = at
		select {
		case tw.wake <- struct{}{}:
		default:
		}
	}
}
