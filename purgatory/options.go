package purgatory

import (
	"errors"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// ErrInvalidOption is wrapped by every error New returns for a bad option.
var ErrInvalidOption = errors.New("purgatory: invalid option")

// DefaultShards is the default number of watch-list shards, as in Kafka.
const DefaultShards = 512

// An Option configures a Purgatory in [New].
type Option func(*config)

type config struct {
	wheel    *timingwheel.TimingWheel
	shards   int
	onPanic  func(recovered any)
	observer Observer
}

// An Observer is told facts per operation that a [Stats] snapshot cannot give.
// It is called on the goroutine that ended the operation, with no library lock
// held, before OnComplete runs, and must return quickly. The metrics package
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
// The caller starts tw and stops it after closing every purgatory that uses it;
// a panic in OnComplete or OnExpiration on the expiry path then goes to tw's
// panic handler.
func WithTimingWheel(tw *timingwheel.TimingWheel) Option {
	return func(c *config) { c.wheel = tw }
}

// WithShards sets the number of watch-list shards (default [DefaultShards]).
// More shards let more goroutines work on different keys without contending.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithPanicHandler receives panics recovered from OnComplete and OnExpiration
// when they run on the purgatory's own timing wheel (expiry). Without it such
// panics are recovered and counted by the wheel. Callbacks that run on the
// caller's goroutine (TryCompleteElseWatch, CheckAndComplete, ForceComplete,
// Close) are not recovered: their panics reach the caller. It has no effect
// with WithTimingWheel.
func WithPanicHandler(h func(recovered any)) Option {
	return func(c *config) { c.onPanic = h }
}
