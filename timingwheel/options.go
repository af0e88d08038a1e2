package timingwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrInvalidOption is wrapped by every error New returns for a bad option.
var ErrInvalidOption = errors.New("timingwheel: invalid option")

// Limits on the options.
const (
	MinTick      = time.Microsecond
	MinWheelSize = 2
	MaxWheelSize = 1 << 16
	MaxShards    = 1 << 10
)

// Defaults for the options.
const (
	DefaultTick = time.Millisecond
	// DefaultWheelSize was chosen by BenchmarkWheelSize (wheel_bench_test.go;
	// its figures are in the repository's docs/benchmarks.md): the smallest
	// size at the bottom of the cost per timer. With a 1 ms tick, 1024 buckets
	// keep every sub-second delay on the first level (no cascade) and up to
	// 17 minutes on the second, for 40 KiB per level and shard.
	DefaultWheelSize = 1024
)

// An Option configures a TimingWheel in [New].
type Option func(*config)

type config struct {
	manual    bool
	tick      time.Duration
	size      int
	shards    int
	exec      Executor
	onPanic   func(recovered any)
	observer  Observer
	logger    *slog.Logger
	loggerSet bool
}

// WithManualClock makes New return a wheel without a driver goroutine, which
// runs timers only when AdvanceClock is called (Kafka's advanceClock loop), or
// once Start gives it a driver.
func WithManualClock() Option { return func(c *config) { c.manual = true } }

// WithTick sets the length of one tick of the finest level (default 1 ms, at
// least [MinTick]). Deadlines are not rounded to it: the tick sets how finely
// the wheel sorts timers before their deadline nears, and how often the
// driver may wake for buckets.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithWheelSize sets the number of buckets per level (default [DefaultWheelSize],
// from [MinWheelSize] to [MaxWheelSize]). Larger wheels cascade less and cost
// more memory per level: each level holds size buckets of 40 bytes each, in
// each shard (see [WithShards]), and each bucket an array of 8 bytes per timer
// it holds, kept from one lap to the next.
func WithWheelSize(n int) Option { return func(c *config) { c.size = n } }

// WithShards sets the number of shards, the independent wheels a TimingWheel
// is made of (default [DefaultShards]: GOMAXPROCS; from 1 to [MaxShards]).
// Each has its own lock, levels and delay queue, and a timer is armed on the
// shard of the P (the runtime's processor) its arming goroutine runs on, so
// that goroutines on different cores do not contend; shards beyond
// GOMAXPROCS go unused unless GOMAXPROCS grows. Each costs its finest level
// (wheel size × 40 bytes: 40 KiB by default) from New, and each coarser
// level as much again once a timer needs it; one driver goroutine serves
// them all. One shard is today's single wheel: least memory, one lock.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithExecutor chooses where callbacks run (default [PoolExecutor] of
// [DefaultMaxWorkers]).
func WithExecutor(e Executor) Option { return func(c *config) { c.exec = e } }

// WithPanicHandler sets the function that receives the value of every panic
// recovered from a callback. It runs on the goroutine that ran the callback,
// inside the deferred recovery, so runtime/debug.Stack still shows where the
// callback panicked. Without a handler, each panic is logged once with its
// stack, at level Error, to the wheel's logger (see [WithLogger]), as
// net/http logs a handler's panic. Either way it is counted in [Stats].Panics. A panic in the handler
// itself is logged, and never kills the goroutine that runs other timers. A
// panicking [Observer] is reported the same way. A callback or Observer that
// calls runtime.Goexit (t.FailNow, say) ends the goroutine it runs on, but
// loses no timer: the wheel carries on with what that goroutine had left on
// a new one.
func WithPanicHandler(h func(recovered any)) Option { return func(c *config) { c.onPanic = h } }

// An Observer is told facts per timer that a [Stats] snapshot cannot give. It
// is called on the driver goroutine (or AdvanceClock's), outside the wheel's
// lock, before the timers it reports are handed to the executor, and must
// return quickly. The metrics package provides one that feeds a histogram.
type Observer interface {
	// TimerFired reports how long after its deadline a timer was handed to
	// the executor: the wheel's own lateness, never negative.
	TimerFired(lateness time.Duration)
}

// A StartObserver is an [Observer] that is also told when each callback
// starts. Give one to WithObserver: the wheel finds the method by a type
// assertion, once, in New, so an Observer without it works as before.
type StartObserver interface {
	Observer
	// CallbackStarted reports how long after its deadline a timer's
	// callback started to run: the wheel's lateness (TimerFired's) plus the
	// time it waited for the executor, behind other callbacks. It is called
	// on the goroutine about to run the callback, which then runs even if
	// this panics, and must return quickly.
	CallbackStarted(lateness time.Duration)
}

func startObserver(o Observer) StartObserver {
	s, _ := o.(StartObserver)
	return s
}

// WithObserver sets an Observer (which may be a [StartObserver]). Without
// one, the wheel reads no extra clock and does no extra work per timer; a
// StartObserver costs one clock read per callback.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithLogger sets the logger the wheel writes its few log lines to: a
// recovered panic without a panic handler, the first timer refused by a
// stopped wheel, and callbacks that hold up the executor (see [StuckAfter]).
// Without it they go to slog.Default(), read at each line. A nil l is an
// error.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger, c.loggerSet = l, true } }

func (c *config) validate() error {
	switch {
	case c.tick < MinTick:
		return fmt.Errorf("%w: tick %v is below the minimum %v", ErrInvalidOption, c.tick, MinTick)
	case c.size < MinWheelSize || c.size > MaxWheelSize:
		return fmt.Errorf("%w: wheel size %d is outside [%d, %d]", ErrInvalidOption, c.size, MinWheelSize, MaxWheelSize)
	case c.shards < 1 || c.shards > MaxShards:
		return fmt.Errorf("%w: %d shards is outside [1, %d]", ErrInvalidOption, c.shards, MaxShards)
	case c.loggerSet && c.logger == nil:
		return fmt.Errorf("%w: WithLogger(nil); pass a *slog.Logger, or leave the option out for slog.Default()", ErrInvalidOption)
	case c.exec.kind == unset:
		return fmt.Errorf("%w: WithExecutor was given the zero Executor; make one with timingwheel.PoolExecutor(n) or timingwheel.InlineExecutor()", ErrInvalidOption)
	case c.exec.kind == poolKind && c.exec.workers < 1:
		return fmt.Errorf("%w: PoolExecutor(%d): a pool needs at least 1 worker", ErrInvalidOption, c.exec.workers)
	}
	return nil
}
