package purgatory

import (
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/cacheline"
	"github.com/purgatory-go/purgatory/internal/inflight"
	"github.com/purgatory-go/purgatory/internal/procid"
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
	room     room      // where Admit waits
	dog      *watchdog // the callbacks running, sampled while any run
}

// settings are fixed by New and only read afterwards.
type settings struct {
	observer   Observer            // nil: no clock is read per operation
	epoch      time.Time           // Op.more.start is measured from here
	onPanic    func(recovered any) // nil: recovered panics are logged
	maxDelayed int                 // 0: no bound; see WithMaxDelayed
	logger     *slog.Logger        // nil: slog.Default(), at each line
	name       string              // the purgatory's, for its log lines
}

// counters are the purgatory's atomic counters, striped by P (the runtime's
// processor) so that no cache line is written by every operation (issue 28):
// a goroutine counts what it adds and what it ends on the stripe of the P it
// runs on, and the reads (Stats, Delayed, Watched, WithMaxDelayed's bound)
// sum the stripes. An operation is counted twice, added by the goroutine that
// adds it and ended by the one that ends it; each lands on its own core's
// stripe, so neither moves a cache line between cores, and Delayed and
// Watched are derived rather than counted: an operation added and not yet
// ended is delayed, and is watched once per key.
type counters struct {
	stripes  []stripe // immutable slice, one per P at New
	panics   atomic.Int64
	inflight inflight.Counter // expiry and context callbacks running, for Shutdown
}

// stripe is one P's share of the counts. The sums are what mean something: a
// stripe's own added less its own ended may be negative, since an operation
// added on one P may end on another.
type stripe struct {
	added atomic.Int64                               // bound, less those withdrawn
	ended [len(outcomes)]atomic.Int64                // by Outcome; Pending's stays 0
	extra atomic.Int64                               // watches past each operation's first key, less their drops
	_     [cacheline.Size - (len(outcomes)+2)*8]byte // internal/cacheline's rule
}

func newCounters() counters {
	return counters{stripes: make([]stripe, max(runtime.GOMAXPROCS(0), 1))}
}

// local returns the stripe of the P the caller runs on.
func (c *counters) local() *stripe { return c.on(procid.Hint()) }

// on returns P p's stripe (procid.Hint's), for a caller that looked its P
// up once for several uses: each look costs about 3 ns.
func (c *counters) on(p int) *stripe {
	if p >= len(c.stripes) {
		p %= len(c.stripes) // GOMAXPROCS grew since New
	}
	return &c.stripes[p]
}

func (c *counters) add(n int64)      { c.local().added.Add(n) }
func (c *counters) addExtra(n int64) { c.local().extra.Add(n) }

// recordOn counts an end with outcome o on P p's stripe.
func (c *counters) recordOn(p int, o Outcome) { c.on(p).ended[o].Add(1) }

// delayed is the number of operations added and not yet ended. It reads the
// ended counts before the added ones: an operation that ended was added
// before, so the difference never falls below the operations still delayed.
func (c *counters) delayed() int64 {
	var ended, added int64
	for i := range c.stripes {
		for j := range c.stripes[i].ended {
			ended += c.stripes[i].ended[j].Load()
		}
	}
	for i := range c.stripes {
		added += c.stripes[i].added.Load()
	}
	return added - ended
}

// watched is the number of (operation, key) watches: each delayed operation
// once, plus its further keys. (An operation is counted from when it is bound
// until it ends, so the few being added or ending count as watched.)
func (c *counters) watched(delayed int64) int64 {
	var extra int64
	for i := range c.stripes {
		extra += c.stripes[i].extra.Load()
	}
	return delayed + extra
}

func (c *counters) snapshot() Stats {
	s := Stats{Panics: c.panics.Load()}
	var ended int64
	for o := range Outcomes() {
		var n int64
		for i := range c.stripes {
			n += c.stripes[i].ended[o].Load()
		}
		*outcomes[o].field(&s) = n
		ended += n
	}
	for i := range c.stripes { // after the ends, as delayed reads them
		s.Added += c.stripes[i].added.Load()
	}
	s.Delayed = int(s.Added - ended)
	s.Watched = int(c.watched(int64(s.Delayed)))
	return s
}
