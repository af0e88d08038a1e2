package purgatory

import (
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/inflight"
)

// Stats is a snapshot of a purgatory's counters. Every operation added is
// either still Delayed or counted under exactly one outcome:
//
//	Added == Delayed + Completed + Forced + Expired + ContextDone + Cancelled + Closed + Shed
//
// The equation holds in every snapshot, since Delayed is derived from the
// others. An operation counts as Delayed, and as Watched once per key, from
// when TryCompleteElseWatch takes it until its outcome is counted, which is
// after it has left its timer and lists and before its callbacks run.
type Stats struct {
	Watched     int   // (operation, key) watches: Kafka's PurgatorySize
	Delayed     int   // added and not yet ended: Kafka's NumDelayedOperations
	Added       int64 // operations passed to TryCompleteElseWatch and bound here
	Completed   int64 // completed by TryComplete (in TryCompleteElseWatch or CheckAndComplete)
	Forced      int64 // completed by ForceComplete
	Expired     int64 // ended by their timeout
	ContextDone int64 // ended because their Context was done
	Cancelled   int64 // removed by CancelForKey
	Closed      int64 // ended by Close
	Shed        int64 // ended at once, over WithMaxDelayed's bound
	// Panics counts panics recovered from callbacks that ran on a goroutine
	// the library owns (timeouts, contexts, Close's sweep). Panics on the
	// caller's own goroutine reach the caller and are not counted.
	Panics int64
}

// Ended returns how many operations ended with outcome o; zero for Pending
// or an unknown outcome.
func (s Stats) Ended(o Outcome) int64 {
	if o <= Pending || int(o) >= len(outcomes) {
		return 0
	}
	return *outcomes[o].field(&s)
}

// core is what every operation of a purgatory reaches through one pointer
// (Op.core): the settings New fixed and the counters the operations move,
// kept apart: nothing writes settings after New, and counters holds only
// counters.
type core struct {
	settings settings
	counters counters
	room     room // where Admit waits
}

// settings are fixed by New and only read afterwards.
type settings struct {
	observer   Observer            // nil: no clock is read per operation
	epoch      time.Time           // Op.start is measured from here
	onPanic    func(recovered any) // nil: recovered panics are logged
	maxDelayed int                 // 0: no bound; see WithMaxDelayed
}

// counters are the purgatory's atomic counters, laid out by who writes them.
// An operation is counted twice: added by the goroutine that adds it, and
// ended by the one that ends it, usually another, on another core. A cache
// line that both sides wrote would move between their cores on every
// operation, so each side's counters sit on cache lines of their own
// (BenchmarkWatchCompleteParallel: 12 to 14 % less time per operation than
// with the counters together), and Delayed and Watched are derived rather than
// counted: an operation added and not yet ended is delayed, and is watched
// once per key. extra, the keys past each operation's first, is written by
// both sides, but only for operations watched under several keys.
type counters struct {
	added    atomic.Int64 // bound, less those withdrawn
	_        [cacheLine]byte
	ended    [len(outcomes)]atomic.Int64 // by Outcome; Pending's stays 0
	_        [cacheLine]byte
	extra    atomic.Int64 // watches past each operation's first key, less their drops
	_        [cacheLine]byte
	panics   atomic.Int64
	inflight inflight.Counter // expiry and context callbacks running, for Shutdown
}

// cacheLine is the padding that keeps two groups of counters off one cache
// line, whatever the alignment of the struct.
const cacheLine = 64

func (c *counters) record(o Outcome) { c.ended[o].Add(1) }

// delayed is the number of operations added and not yet ended. It reads the
// ended counts before the added one: an operation that ended was added
// before, so the difference never falls below the operations still delayed.
func (c *counters) delayed() int64 {
	var ended int64
	for i := range c.ended {
		ended += c.ended[i].Load()
	}
	return c.added.Load() - ended
}

// watched is the number of (operation, key) watches: each delayed operation
// once, plus its further keys. (An operation is counted from when it is bound
// until it ends, so the few being added or ending count as watched.)
func (c *counters) watched(delayed int64) int64 { return delayed + c.extra.Load() }

func (c *counters) snapshot() Stats {
	s := Stats{Panics: c.panics.Load()}
	var ended int64
	for o := range Outcomes() {
		n := c.ended[o].Load()
		*outcomes[o].field(&s) = n
		ended += n
	}
	s.Added = c.added.Load() // after the ends, as delayed reads them
	s.Delayed = int(s.Added - ended)
	s.Watched = int(c.watched(int64(s.Delayed)))
	return s
}
