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
// on demand. The wheel is split into shards ([WithShards], one per GOMAXPROCS
// by default), each with its own lock, and a timer is armed on the shard of
// the P its caller runs on, so that goroutines on different cores add and
// stop timers without contending. A single driver goroutine sleeps until the
// earliest bucket's tick of any shard begins or the earliest deadline within
// the current tick comes (no ticker: an idle wheel uses no CPU), then moves
// timers to finer levels or hands them to the executor. Time is measured on
// the monotonic clock only.
//
// # Durations and deadlines
//
// Every call that takes a duration or a deadline (AfterFunc, Timer.Reset,
// WithTimeout, WithDeadline and their Cause forms, AdvanceClock) accepts
// every value, from math.MinInt64 to math.MaxInt64, whatever the driver is
// doing. A duration of zero or less, or a deadline that has passed (the zero
// Time included), is due at once: the callback runs on the driver's next
// pass. A deadline beyond the wheel's range (now + d past about 292 years
// from its start, math.MaxInt64 included) never comes. Only Every panics, on
// an interval that is not positive.
package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/cacheline"
	"github.com/purgatory-go/purgatory/internal/inflight"
	"github.com/purgatory-go/purgatory/internal/recovery"
	"github.com/purgatory-go/purgatory/internal/sched"
	"github.com/purgatory-go/purgatory/internal/stuck"
)

// ErrStopped is returned by Start and Err on a TimingWheel that has been
// stopped.
var ErrStopped = errors.New("timingwheel: stopped")

// ErrShutdownInCallback is returned by Shutdown when it is called from inside
// a callback, which it cannot wait for: it has stopped the wheel as Stop does
// and waited for nothing.
var ErrShutdownInCallback = errors.New("timingwheel: Shutdown called from a callback: stopped, waited for nothing; call Stop there")

type state int32

const (
	manual  state = iota // made WithManualClock and not started: AdvanceClock drives it
	running              // the driver goroutine drives it
	stopped
)

// TimingWheel schedules callbacks to run after a delay. It must be created with
// [New]. All its methods are safe for concurrent use, including from inside
// callbacks; callbacks never run while any of the wheel's locks is held.
//
// It is made of shards (shard.go), each a whole wheel with its own lock, so
// that timers armed and stopped on different cores do not contend.
//
// Lock order: mu, the wheel's lifecycle lock, before any shard's mu; a shard's
// mu alone from arming a timer to handing it to the executor, and never two
// shards' at once; sleepMu, the driver's sleep, after a shard's mu (an arm
// that brings the sleep forward) or alone, and no other lock taken under it;
// the executor's own lock after those are released.
type TimingWheel struct {
	shards []shard // immutable slice; each shard guards itself
	start  time.Time
	exec   executor

	mu        sched.WheelMutex     // guards state changes, done and afterStop
	state     atomic.Int32         // a state; written under mu, read without it
	done      chan struct{}        // closed by the driver that sees the wheel stopped; nil if none was started
	afterStop funcSet              // AfterStop's functions, until Stop starts them; guarded by mu
	quit      chan struct{}        // closed by Stop
	wake      chan struct{}        // capacity 1: a token means "look again" (to AdvanceClock: the driver's sleep is re-armed instead)
	_         [cacheline.Size]byte // the words above are read by every arm (shards, start, state); sleepUntil, which the driver writes, is kept off their lines
	// sleepUntil is when the driver (or a waiting AdvanceClock) will next
	// look at the shards. The handshake that loses no wake-up: a register
	// lowers its shard's next and then reads sleepUntil, bringing the
	// driver's sleep forward if its instant is earlier (wakeFor); the
	// driver stores sleepUntil and then reads every shard's next again,
	// until what it stored is no later than any (nextLook). Of two such
	// store-then-load pairs on sequentially consistent atomics, at least one
	// load sees the other's store, so either the register brings the sleep
	// forward or the driver sees the shard due.
	sleepUntil atomic.Int64
	// sleep is the driver's timer, made by Start (nil on a wheel that
	// AdvanceClock drives, which a register sends a token on wake instead).
	// sleepMu serializes arming it with the stores to sleepUntil of the
	// goroutines that are not the driver: the driver arms it for sleepUntil
	// before it sleeps (plan), a register that needs it sooner lowers
	// sleepUntil and re-arms it (wakeFor), and a Stop that took out the
	// deadline it was to wake for moves sleepUntil on and re-arms it
	// (postpone). So while the driver sleeps, its timer is armed for
	// sleepUntil. Lock order: a shard's mu is never held while sleepMu is
	// taken by a Stop; a register takes it under its shard's mu.
	sleepMu  sched.WheelMutex
	sleep    *time.Timer // guarded by sleepMu
	_        [cacheline.Size]byte
	inflight inflight.Counter // callbacks and AfterStop functions started and not yet returned

	onPanic  func(recovered any)
	observer Observer
	starts   StartObserver  // observer, if it is one; nil otherwise
	logger   *slog.Logger   // nil: slog.Default(), at each line
	sampler  *stuck.Sampler // samples the executor while callbacks run (watchdog.go)
	spell    spell          // the sampler's memory; only its look touches it
	inline   bool           // the executor is InlineExecutor: runs in deadline order across shards

	fired    atomic.Int64
	panics   atomic.Int64
	rejected atomic.Int64
	wakeups  atomic.Int64 // the driver's, from its sleep: Stats.Wakeups
	warned   atomic.Bool  // the first rejected timer has been logged
}

// New returns a running TimingWheel: its driver goroutine runs timers as they
// come due until Stop. With [WithManualClock] it returns one that only
// AdvanceClock drives. It returns an error wrapping [ErrInvalidOption] if an
// option is out of range or nil.
func New(opts ...Option) (*TimingWheel, error) {
	c := config{tick: DefaultTick, size: DefaultWheelSize, shards: DefaultShards(), exec: PoolExecutor(DefaultMaxWorkers)}
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
		shards:   make([]shard, c.shards),
		start:    time.Now(),
		onPanic:  c.onPanic,
		logger:   c.logger,
		observer: c.observer,
		starts:   startObserver(c.observer),
		inline:   c.exec.kind == inlineKind,
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
	}
	for i := range tw.shards {
		sh := &tw.shards[i]
		sh.w.init(c.tick, c.size)
		sh.w.home, sh.tw = sh, tw
		sh.next.Store(int64(never))
	}
	tw.sleepUntil.Store(int64(never))
	tw.sampler = stuck.New(tw.look, tw.quiet)
	if tw.inline {
		tw.exec = &inline{run: tw.run, wake: tw.sampler.Wake, resume: tw.resume}
	} else {
		tw.exec = newPool(c.exec.workers, tw.run, tw.sampler.Wake)
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
	switch state(tw.state.Load()) {
	case running:
		return nil
	case stopped:
		return ErrStopped
	}
	tw.state.Store(int32(running))
	tw.done = make(chan struct{})
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	tw.sleepMu.Lock()
	tw.sleep = sleep
	tw.sleepMu.Unlock()
	go tw.drive(sleep)
	return nil
}

// Err returns [ErrStopped] once the wheel has been stopped, and nil before.
func (tw *TimingWheel) Err() error {
	tw.mustBeNew()
	if tw.stopped() {
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
// After Stop, AfterFunc, ScheduleFunc and Reset refuse their timers visibly
// (see [Timer.Rejected]), Start and Err return [ErrStopped], and the driver
// goroutine exits. The functions given to AfterStop start, each in its own
// goroutine. Contexts made by WithTimeout and WithDeadline are not handed
// back: they keep their deadlines on runtime timers; nor are those whose
// Handler is a [Drainer], whose Drain Stop calls instead. A package that arms
// timers on a wheel it does not own learns of the stop through AfterStop and
// ends its own work there; running what Stop hands back for it would fire
// those timers before their deadlines.
func (tw *TimingWheel) Stop() (pending []func()) {
	tw.mustBeNew()
	tw.mu.Lock()
	if tw.stopped() {
		tw.mu.Unlock()
		return nil
	}
	tw.state.Store(int32(stopped))
	close(tw.quit)
	var left leftover
	for i := range tw.shards {
		tw.shards[i].drain(left.sort)
	}
	hooks := tw.afterStop
	tw.afterStop = nil
	tw.inflight.Add(len(hooks))
	tw.mu.Unlock()
	defer func() { // also when a Drain panics
		for f := range hooks {
			go tw.runAfterStop(*f)
		}
	}()
	left.settle()
	return left.pending
}

// leftover sorts the timers a stopping wheel still held: the callbacks Stop
// hands back, the contexts that keep their deadlines elsewhere, and the
// Drainers told that their timers will never fire. It is filled under tw.mu
// and settled after it is released, since Fire and Drain are user code.
type leftover struct {
	pending []func()
	keep    []*timer
	drained []Drainer
}

func (l *leftover) sort(t *timer) {
	d, drains := t.h.(Drainer)
	switch f, ok := t.h.(HandlerFunc); {
	case t.keepsDeadline:
		l.keep = append(l.keep, t)
	case drains:
		l.drained = append(l.drained, d)
	case ok:
		l.pending = append(l.pending, f)
	default:
		l.pending = append(l.pending, t.h.Fire)
	}
}

// settle fires the contexts' expiries and drains the Drainers. A Drain
// that panics does not keep the others from being told: the first panic
// goes on once every one has been.
func (l *leftover) settle() {
	for _, t := range l.keep {
		t.h.Fire() // a context's expire: it moves the deadline to a runtime timer
	}
	var first any
	for _, d := range l.drained {
		if r := drainRecovering(d); r != nil && first == nil {
			first = r
		}
	}
	if first != nil {
		panic(first)
	}
}

// drainRecovering tells d and returns what its Drain panicked with, if it did.
func drainRecovering(d Drainer) (r any) {
	defer func() { r = recover() }()
	d.Drain()
	return nil
}

// AfterStop arranges to call f in its own goroutine once the wheel is
// stopped, by Stop or Shutdown; if it is stopped already, f starts at once.
// Shutdown waits for f to return, as for a callback. Calling the returned stop
// detaches f: it returns true if that prevented f from starting, and false if
// f has started (or the wheel is stopped), in the shape of
// context.AfterFunc: a user of a shared wheel learns with it that the wheel
// stopped under it. A nil f is a misuse and panics.
func (tw *TimingWheel) AfterStop(f func()) (stop func() bool) {
	tw.mustBeNew()
	if f == nil {
		panic("timingwheel: AfterStop called with a nil func")
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.stopped() {
		tw.inflight.Add(1)
		go tw.runAfterStop(f)
		return func() bool { return false }
	}
	return tw.afterStop.add(f, &tw.mu)
}

func (tw *TimingWheel) runAfterStop(f func()) {
	defer tw.inflight.Done()
	defer tw.recoverPanic("an AfterStop function")
	f()
}

// Shutdown stops the wheel and waits for its callbacks; never call it from a
// callback (or an [Observer]), which it would wait for: called from one (of
// this wheel or another, as the call stack tells), it stops the wheel as
// Stop does, waits for nothing and returns [ErrShutdownInCallback] at once.
// Call Stop there.
//
// Elsewhere, Shutdown stops the wheel as Stop does and then waits, until ctx
// is done, for the callbacks already handed to the executor and the
// AfterStop functions to return and for the driver goroutine to exit
// (http.Server.Shutdown's convention). It returns the pending callbacks, as
// Stop. If ctx is done first, its error wraps ctx's
// (errors.Is(err, context.DeadlineExceeded) tells) and names the callbacks
// still running, by their funcs (or Handler types), with how many are queued
// and how many AfterStop functions run; it logs the same at level Warn.
// Later calls hand back nothing but wait the same way.
func (tw *TimingWheel) Shutdown(ctx context.Context) (pending []func(), err error) {
	pending = tw.Stop()
	if inCallback.OnStack() {
		return pending, ErrShutdownInCallback
	}
	if tw.done != nil {
		select {
		case <-tw.done:
		case <-ctx.Done():
			return pending, tw.heldUp(ctx)
		}
	}
	if err := tw.inflight.Wait(ctx); err != nil {
		return pending, tw.heldUp(ctx)
	}
	return pending, nil
}

// heldUp is Shutdown's error once ctx is done: it wraps ctx's error, names
// what still runs, and says the same to the logger.
func (tw *TimingWheel) heldUp(ctx context.Context) error {
	l := tw.exec.load(true)
	hooks := max(tw.inflight.Count()-int64(l.busy+l.queued), 0) // AfterStop functions
	running := names(l.running)
	err := fmt.Errorf("timingwheel: Shutdown: %w with %d callbacks running (%s), %d queued and %d AfterStop functions running", ctx.Err(), l.busy, running, l.queued, hooks)
	recovery.Logger(tw.logger).Warn("timingwheel: Shutdown's context ended with callbacks still running; they still run to their end",
		"err", ctx.Err(), "running", running, "queued", l.queued, "after_stop_running", hooks)
	return err
}

// inCallback names the frames that every callback, Observer call and
// AfterStop function runs under, on every executor: run, with a
// StartObserver's call before the callback; fire, the callback itself,
// which runs without run when that call ended its goroutine (started); and
// tellObserver, the Observer's calls on the driver, which Shutdown would
// wait for too.
var inCallback = inflight.FramesOf((*TimingWheel).run, (*TimingWheel).fire, (*TimingWheel).tellObserver, (*TimingWheel).runAfterStop)

// stopped reports whether Stop has begun.
func (tw *TimingWheel) stopped() bool {
	sched.At("wheel: state load")
	return state(tw.state.Load()) == stopped
}

// Len returns the number of pending timers. It takes each shard's lock in
// turn, so with timers armed and stopped meanwhile it is a sum of counts
// taken at slightly different times.
func (tw *TimingWheel) Len() int {
	tw.mustBeNew()
	n := 0
	for i := range tw.shards {
		n += tw.shards[i].len()
	}
	return n
}

// Shards returns the number of shards the wheel was made with (see
// [WithShards]).
func (tw *TimingWheel) Shards() int {
	tw.mustBeNew()
	return len(tw.shards)
}

// mustBeNew panics with a message that says what to do on a TimingWheel that
// was not made by New, before any lock is taken.
func (tw *TimingWheel) mustBeNew() {
	if tw == nil || tw.shards == nil {
		panic("timingwheel: TimingWheel must be created with New")
	}
}

// Stats is a snapshot of a TimingWheel's counters, and of what its executor
// is doing: callbacks that block show here (Busy at the executor's bound, a
// growing Queued and OldestQueued) before any timer is visibly late.
type Stats struct {
	Pending  int   // timers waiting to fire, as Len
	Fired    int64 // timers whose time came and were handed to the executor
	Panics   int64 // callbacks that panicked (recovered)
	Rejected int64 // timers scheduled after Stop, which never run
	// Wakeups counts the driver goroutine's wake-ups from its sleep: at the
	// deadline it slept for, or woken sooner for a timer armed to fire
	// before it. Each costs a thread wake-up and pushes a runnable goroutine
	// out of its P's next slot; a wheel whose timers are mostly stopped
	// should wake about as often as timers fire, not once a tick.
	// AdvanceClock's waits are not counted.
	Wakeups int64

	Busy   int // callbacks running now: at most the pool's bound, or 1 inline
	Queued int // callbacks handed to the executor and not yet started
	// OldestQueued is how long past its deadline the first queued callback
	// is (the one the executor starts next); 0 if none is queued.
	OldestQueued time.Duration
}

// Stats returns the wheel's counters. It holds each shard's lock in turn only
// to read Pending, as Len does, and the pool's lock to read Busy and Queued.
func (tw *TimingWheel) Stats() Stats {
	l := tw.exec.load(false)
	s := Stats{
		Pending:  tw.Len(),
		Fired:    tw.fired.Load(),
		Panics:   tw.panics.Load(),
		Rejected: tw.rejected.Load(),
		Wakeups:  tw.wakeups.Load(),
		Busy:     l.busy,
		Queued:   l.queued,
	}
	if l.queued > 0 {
		s.OldestQueued = max(time.Duration(tw.now()-l.head), 0)
	}
	return s
}

// reject counts a timer refused because the wheel is stopped and marks it,
// so that Timer.Rejected tells. The caller holds the mu of t's shard, and
// calls warn after releasing it.
func (tw *TimingWheel) reject(t *timer) {
	t.rejected = true
	tw.rejected.Add(1)
}

// warn logs the wheel's first refused timer, once, so that a retry scheduled
// during shutdown never vanishes without a trace. It is called without mu:
// the log's writer is the user's.
func (tw *TimingWheel) warn() {
	if !tw.warned.Swap(true) {
		recovery.Logger(tw.logger).Warn("timingwheel: a timer was scheduled on a stopped wheel and will never run; " +
			"Timer.Rejected tells which, Stats.Rejected and timingwheel_rejected_timers_total count them (logged once per wheel)")
	}
}

// wakeFor makes the driver (or a waiting AdvanceClock) look at the shards
// by at if it would look later; see sleepUntil. The driver's sleep is
// brought forward where it is: sleepUntil lowered and its timer re-armed,
// under sleepMu, so that the timer is never armed later than sleepUntil.
// A token would wake it at once, a thread woken only to plan again, and
// pushed a runnable goroutine out of its P's next slot; after a Stop moved
// the wake-up on (postpone), every re-arm would have cost one. AdvanceClock,
// which sleeps on a timer of its own, is sent the token.
func (tw *TimingWheel) wakeFor(at instant) {
	sched.At("wheel: sleepUntil load")
	if int64(at) >= tw.sleepUntil.Load() {
		return
	}
	tw.sleepMu.Lock()
	sleep := tw.sleep
	if sleep != nil && int64(at) < tw.sleepUntil.Load() {
		tw.sleepUntil.Store(int64(at))
		tw.armSleep(at)
	}
	tw.sleepMu.Unlock()
	if sleep == nil {
		sched.At("wheel: wake send")
		select {
		case tw.wake <- struct{}{}:
		default:
		}
	}
}
