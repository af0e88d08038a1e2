package purgatory

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"runtime"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// ErrInvalidOption is wrapped by every error New returns for a bad option.
var ErrInvalidOption = errors.New("purgatory: invalid option")

// DefaultShards returns the number of watch-list shards New makes without
// [WithShards]: 64 for each of GOMAXPROCS at the time of the call, rounded up
// to a power of two, and at most 512, Kafka's number.
//
// Each watch and each walk looks its key up in its shard's map, and the maps'
// own lines (a header and a table per shard) are cache misses once there are
// more shards than a core's cache keeps: on a small machine, fewer shards
// than Kafka's cost less CPU per request at 10,000 keys and more
// (docs/benchmarks.md). Two goroutines running at once contend for a shard
// only when their keys share one: about 1 in 64 × GOMAXPROCS of their calls.
func DefaultShards() int {
	return min(1<<bits.Len(uint(64*runtime.GOMAXPROCS(0)-1)), maxDefaultShards)
}

// maxDefaultShards bounds DefaultShards: Kafka's number of shards.
const maxDefaultShards = 512

// An Option configures a Purgatory in [New].
type Option func(*config)

type config struct {
	wheel      *timingwheel.TimingWheel
	wheelSet   bool
	shards     int
	onPanic    func(recovered any)
	observer   Observer
	maxDelayed int
	logger     *slog.Logger
	loggerSet  bool
}

// An Observer is told facts per operation that a [Stats] snapshot cannot give.
// It is called on the goroutine that ended the operation, with no library lock
// held, before OnComplete runs (which runs even if the Observer panics), and
// must return quickly. The metrics package
// provides one that feeds a histogram.
type Observer interface {
	// OperationEnded reports how an operation ended and how long it spent in
	// the purgatory, from TryCompleteElseWatch to its end.
	OperationEnded(outcome Outcome, elapsed time.Duration)
}

// WithObserver sets an Observer. Without one, the purgatory reads no clock per
// operation.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithTimingWheel makes the purgatory use tw for its timeouts instead of a
// wheel of its own, so that several purgatories can share one, as Kafka's do.
// New returns an error if tw has been stopped; a wheel made
// timingwheel.WithManualClock runs the timeouts when its owner advances it. The
// caller stops tw after closing every purgatory that uses it. Panics in the
// operations' callbacks on the expiry path are the purgatory's to report
// (WithPanicHandler), not tw's.
func WithTimingWheel(tw *timingwheel.TimingWheel) Option {
	return func(c *config) { c.wheel, c.wheelSet = tw, true }
}

// WithShards sets the number of watch-list shards (default [DefaultShards]()).
// More shards let more goroutines work on different keys without contending.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithPanicHandler receives the value of every panic recovered from a callback
// (OnComplete, OnExpiration, the Observer) that ran on a goroutine the library
// owns: a timeout on the wheel, a context's AfterFunc, Close's sweep. It runs
// on that goroutine inside the deferred recovery, so runtime/debug.Stack still
// shows where the callback panicked; a panic in the handler itself is logged.
// Without a handler, each such panic is logged once with its stack, at level
// Error, to the purgatory's logger ([WithLogger]). Either way the panic is counted in Stats.Panics, and
// the operation has ended. Panics on the caller's own goroutine
// (TryCompleteElseWatch, CheckAndComplete, CancelForKey, ForceComplete) are
// not recovered: they reach the caller.
func WithPanicHandler(h func(recovered any)) Option {
	return func(c *config) { c.onPanic = h }
}

// WithMaxDelayed bounds the operations waiting at once (Delayed) to n, for a
// service that would rather answer at once than fall behind on everything
// when more requests arrive than it can watch. Over the bound,
// TryCompleteElseWatch still tries an operation once; if it cannot complete,
// the operation is not watched and no timeout starts: it ends at once with
// Outcome Shed, and OnComplete runs on the calling goroutine (OnExpiration
// does not). A broker answers such a request now with what it has, or with a
// retriable error, so that nothing is lost, nothing is answered twice, and
// the operations already waiting keep their timeouts. Zero, the default,
// means no bound; New returns an error for a negative n. The bound is
// checked without a lock: goroutines adding at the same moment may each pass
// it, so it can be exceeded by as many as add concurrently. To wait for room
// rather than shed, call [Purgatory.Admit] before each add.
func WithMaxDelayed(n int) Option { return func(c *config) { c.maxDelayed = n } }

// WithLogger sets the logger the purgatory writes its few log lines to: a
// recovered panic without a panic handler, and a callback that has run longer
// than [StuckAfter]. A wheel the purgatory makes for itself logs there too.
// Without it they go to slog.Default(), read at each line. A nil l is an
// error.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger, c.loggerSet = l, true } }

// validate returns an error wrapping ErrInvalidOption for the first option
// out of range.
func (c *config) validate() error {
	switch {
	case c.shards < 1:
		return fmt.Errorf("%w: %d shards; need at least 1", ErrInvalidOption, c.shards)
	case c.maxDelayed < 0:
		return fmt.Errorf("%w: WithMaxDelayed(%d); pass a positive bound, or leave the option out for none", ErrInvalidOption, c.maxDelayed)
	case c.loggerSet && c.logger == nil:
		return fmt.Errorf("%w: WithLogger(nil); pass a *slog.Logger, or leave the option out for slog.Default()", ErrInvalidOption)
	case c.wheelSet && c.wheel == nil:
		return fmt.Errorf("%w: WithTimingWheel(nil); pass a wheel made with timingwheel.New, or leave the option out", ErrInvalidOption)
	}
	return nil
}

// timingWheel returns the wheel given with WithTimingWheel, or a new one of
// the purgatory's own (owns), logging to WithLogger's logger. A stopped wheel
// would never expire anything: it is an error. (A wheel made WithManualClock
// is the caller's to drive.)
func (c *config) timingWheel() (tw *timingwheel.TimingWheel, owns bool, err error) {
	if c.wheel != nil {
		if err := c.wheel.Err(); err != nil {
			return nil, false, fmt.Errorf("purgatory: the wheel given with WithTimingWheel has been stopped; its timeouts would never run: %w", err)
		}
		return c.wheel, false, nil
	}
	var opts []timingwheel.Option
	if c.logger != nil {
		opts = append(opts, timingwheel.WithLogger(c.logger))
	}
	tw, err = timingwheel.New(opts...)
	return tw, err == nil, err
}
