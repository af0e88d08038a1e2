// Package timingwheel provides TimingWheel, a hierarchical timing wheel that
// holds millions of timers at O(1) cost to add or stop each, in the manner of
// Kafka's SystemTimer, and runs their callbacks never before their deadline.
//
// A TimingWheel is a faster [time.AfterFunc] for programs with many timers that
// are mostly stopped before they fire (request timeouts, delayed retries):
//
//	tw, err := timingwheel.New()
//	...
//	tw.Start()
//	defer tw.Stop()
//	t := tw.AfterFunc(30*time.Second, func() { ... })
//	...
//	t.Stop()
//
// Timers live in buckets of a wheel of [DefaultWheelSize] slots per level, one
// tick ([DefaultTick]) per slot on the finest level; coarser levels are created
// on demand. A single driver goroutine sleeps until the earliest non-empty bucket
// is due (no ticker: an idle wheel uses no CPU), then moves its timers to finer
// levels or hands them to the executor. Time is measured on the monotonic clock
// only.
package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStopped is returned by Start on a TimingWheel that has been stopped.
var ErrStopped = errors.New("timingwheel: stopped")

type state int

const (
	created state = iota
	running
	stopped
)

// TimingWheel schedules callbacks to run after a delay. It must be created with
// [New]. All its methods are safe for concurrent use, including from inside
// callbacks; callbacks never run while the wheel's lock is held.
type TimingWheel struct {
	mu    sync.Mutex // guards w, state and every Timer's place in the wheel
	w     *wheel
	state state
	start time.Time // epoch of the monotonic clock: expirations are time.Since(start)
	exec  executor

	onPanic  func(recovered any)
	observer Observer

	ctx      context.Context // cancelled by Stop; the driver and AdvanceClock wait on it
	cancel   context.CancelFunc
	consumer sync.Mutex      // held by whoever takes from the delay queue: the driver or AdvanceClock
	due      []*Timer        // the consumer's batch of due timers, reused; guarded by consumer
	lateness []time.Duration // lateness of each timer in due, when observed; guarded by consumer
	done     chan struct{}   // closed when the driver exits; nil until Start
	driver   atomic.Uint64   // the driver's goroutine ID, for Stop

	fired    atomic.Int64
	panics   atomic.Int64
	rejected atomic.Int64
}

// New returns a TimingWheel that is not yet running: call Start, or drive it with
// AdvanceClock. It returns an error wrapping [ErrInvalidOption] if an option is
// out of range.
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
		w:        newWheel(c.tick, c.size),
		start:    time.Now(),
		onPanic:  c.onPanic,
		observer: c.observer,
	}
	tw.ctx, tw.cancel = context.WithCancel(context.Background())
	if c.exec.inline {
		tw.exec = inline{run: tw.run}
	} else {
		tw.exec = newPool(c.exec.workers, tw.run)
	}
	return tw, nil
}

// Start launches the driver goroutine, which runs timers as they come due. It
// returns nil if the wheel is running (calling Start twice is harmless) and
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

func (tw *TimingWheel) drive() {
	defer close(tw.done)
	tw.driver.Store(goid())
	tw.consumer.Lock()
	defer tw.consumer.Unlock()
	for {
		b, err := tw.w.queue.Take(tw.ctx, tw.now)
		if err != nil {
			return
		}
		tw.expire(b)
	}
}

// AdvanceClock is for callers that drive the wheel from their own loop instead
// of calling Start (Kafka's Timer.advanceClock). It waits up to timeout for a
// bucket to come due, then runs every timer that is due, through the executor,
// and returns true; it returns false if nothing came due within timeout or the
// wheel is stopped. A timeout of zero or less only looks. Calls are serialized.
// Calling it on a started wheel is a misuse and panics.
func (tw *TimingWheel) AdvanceClock(timeout time.Duration) bool {
	tw.mustBeNew()
	tw.mu.Lock()
	st := tw.state
	tw.mu.Unlock()
	switch st {
	case running:
		panic("timingwheel: AdvanceClock called on a started TimingWheel; use Start or AdvanceClock, not both")
	case stopped:
		return false
	}
	tw.consumer.Lock()
	defer tw.consumer.Unlock()
	ctx, cancel := context.WithTimeout(tw.ctx, max(timeout, 0))
	defer cancel()
	b, err := tw.w.queue.Take(ctx, tw.now) // looks once even if ctx is already done
	if err != nil {
		return false
	}
	tw.expire(b)
	return true
}

// expire flushes b and every other bucket that is due, then hands the timers
// whose time has come to the executor, outside the lock.
func (tw *TimingWheel) expire(b *slot) {
	tw.mu.Lock()
	if tw.state == stopped {
		tw.mu.Unlock()
		return
	}
	now := tw.now()
	due := tw.w.expire(b, tw.due[:0])
	due = tw.w.poll(now, due)
	late := tw.lateness[:0]
	if tw.observer != nil {
		for _, t := range due {
			late = append(late, max(now-time.Duration(t.exp), 0))
		}
	}
	tw.mu.Unlock()
	if len(due) > 0 {
		if len(late) > 0 {
			tw.observe(late)
		}
		tw.fired.Add(int64(len(due)))
		tw.exec.execute(due)
		clear(due) // drop the references until the next batch
	}
	tw.due, tw.lateness = due, late
}

// observe tells the observer each timer's lateness. A panicking observer is
// recovered and reported like a callback, so that it cannot kill the driver;
// the timers it was told about still run.
func (tw *TimingWheel) observe(late []time.Duration) {
	defer tw.recoverPanic("the Observer")
	for _, l := range late {
		tw.observer.TimerFired(l)
	}
}

// run calls t's callback, recovering a panic so that it cannot kill the driver or
// a worker and lose the timers behind it.
func (tw *TimingWheel) run(t *Timer) {
	defer tw.recoverPanic("a timer's callback")
	t.f()
}

// recoverPanic is deferred around user code. It counts a recovered panic and
// passes it to the panic handler or, with none, logs it once with its stack
// through the standard log package (net/http's convention for a handler's
// panic). It runs inside the deferred recovery, so the stack shows where the
// panic happened. A handler that panics itself is logged too, never allowed to
// kill the goroutine that runs other timers.
func (tw *TimingWheel) recoverPanic(where string) {
	r := recover()
	if r == nil {
		return
	}
	tw.panics.Add(1)
	if h := tw.onPanic; h != nil {
		if handled(h, r) {
			return
		}
		where += " (and the panic handler panicked too)"
	}
	log.Printf("timingwheel: recovered a panic from %s: %v\n%s", where, r, debug.Stack())
}

// handled calls h(r) and reports whether it returned normally; a panic in h is
// logged.
func handled(h func(any), r any) (ok bool) {
	defer func() {
		if !ok {
			log.Printf("timingwheel: the panic handler panicked: %v\n%s", recover(), debug.Stack())
		}
	}()
	h(r)
	return true
}

// Stop shuts the wheel down and returns the callbacks of the timers that were
// still pending, none of which will run: the caller may run them, hand them on,
// or drop them knowingly. Those timers' Stop then returns false.
//
// Stop waits for the driver to exit and for callbacks already handed to the
// executor to return, except that Stop called from inside a callback does not
// wait for the goroutine it runs on. Later calls return nil after the same wait.
// After Stop, AfterFunc and ScheduleFunc return timers that never run (counted
// in Stats.Rejected), Reset returns false and does nothing, and Start returns
// [ErrStopped].
func (tw *TimingWheel) Stop() (pending []func()) {
	tw.mustBeNew()
	tw.mu.Lock()
	first := tw.state != stopped
	if first {
		tw.state = stopped
		tw.w.drain(func(e *entry) { pending = append(pending, e.Value.f) })
	}
	done := tw.done
	tw.mu.Unlock()
	if first {
		tw.cancel()
	}
	// Every caller waits, not only the first; none may wait for itself.
	if done != nil && goid() != tw.driver.Load() {
		<-done
	}
	tw.exec.wait()
	return pending
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
func (tw *TimingWheel) expiration(d time.Duration) int64 {
	now := tw.now()
	if d > math.MaxInt64-now {
		return math.MaxInt64
	}
	return int64(now + d)
}
