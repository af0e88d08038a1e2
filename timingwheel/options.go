package timingwheel

import (
	"errors"
	"fmt"
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
	// DefaultWheelSize was chosen by BenchmarkWheelSize (wheel_bench_test.go).
	// Scheduling and expiring timers with delays in [1 ms, 1 s) cost, per timer
	// (one run, after deadlines became exact): 401 ns at 16 buckets, 353 at 64,
	// 364 at 256, 305 at 512, 273 at 1024 and 297 at 4096; add+remove among a
	// million parked timers was 26-31 ns at every size. With a 1 ms tick, 1024
	// buckets keep every sub-second delay on the first level (no cascade) and
	// up to 17 minutes on the second, for 64 KiB per level and shard.
	DefaultWheelSize = 1024
)

// An Option configures a TimingWheel in [New].
type Option func(*config)

type config struct {
	manual   bool
	tick     time.Duration
	size     int
	shards   int
	exec     Executor
	onPanic  func(recovered any)
	observer Observer
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
// more memory per level: each level holds size buckets of 64 bytes each, in
// each shard (see [WithShards]).
func WithWheelSize(n int) Option { return func(c *config) { c.size = n } }

// WithShards sets the number of shards, the independent wheels a TimingWheel
// is made of (default [DefaultShards]: GOMAXPROCS; from 1 to [MaxShards]).
// Each has its own lock, levels and delay queue, and a timer is armed on the
// shard of the P (the runtime's processor) its arming goroutine runs on, so
// that goroutines on different cores do not contend; shards beyond
// GOMAXPROCS go unused unless GOMAXPROCS grows. Each costs its finest level
// (wheel size × 64 bytes: 64 KiB by default) from New, and each coarser
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
// stack through the standard log package (as net/http does for a handler's
// panic). Either way it is counted in [Stats].Panics. A panic in the handler
// itself is logged, and never kills the goroutine that runs other timers. A
// panicking [Observer] is reported the same way.
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

// WithObserver sets an Observer. Without one, the wheel reads no extra clock
// and does no extra work per timer.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

func (c *config) validate() error {
	switch {
	case c.tick < MinTick:
		return fmt.Errorf("%w: tick %v is below the minimum %v", ErrInvalidOption, c.tick, MinTick)
	case c.size < MinWheelSize || c.size > MaxWheelSize:
		return fmt.Errorf("%w: wheel size %d is outside [%d, %d]", ErrInvalidOption, c.size, MinWheelSize, MaxWheelSize)
	case c.shards < 1 || c.shards > MaxShards:
		return fmt.Errorf("%w: %d shards is outside [1, %d]", ErrInvalidOption, c.shards, MaxShards)
	case c.exec.kind == unset:
		return fmt.Errorf("%w: WithExecutor was given the zero Executor; make one with timingwheel.PoolExecutor(n) or timingwheel.InlineExecutor()", ErrInvalidOption)
	case c.exec.kind == poolKind && c.exec.workers < 1:
		return fmt.Errorf("%w: PoolExecutor(%d): a pool needs at least 1 worker", ErrInvalidOption, c.exec.workers)
	}
	return nil
}
