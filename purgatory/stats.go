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
// (a snapshot taken while operations move may be off by the few in flight).
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

// counters are the purgatory's atomic counters.
type counters struct {
	watched, delayed, added atomic.Int64
	ended                   [len(outcomes)]atomic.Int64 // by Outcome; Pending's stays 0
	panics                  atomic.Int64
	inflight                inflight.Counter // expiry and context callbacks running, for Shutdown
}

func (c *counters) record(o Outcome) {
	c.delayed.Add(-1)
	c.ended[o].Add(1)
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Watched: int(c.watched.Load()),
		Delayed: int(c.delayed.Load()),
		Added:   c.added.Load(),
		Panics:  c.panics.Load(),
	}
	for o := range Outcomes() {
		*outcomes[o].field(&s) = c.ended[o].Load()
	}
	return s
}
