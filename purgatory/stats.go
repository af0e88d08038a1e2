package purgatory

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a purgatory's counters. Every operation added is
// either still Delayed or counted under exactly one outcome:
//
//	Added == Delayed + Completed + Forced + Expired + ContextDone + Cancelled
//
// (a snapshot taken while operations move may be off by the few in flight).
type Stats struct {
	Watched     int   // (operation, key) watches: Kafka's PurgatorySize
	Delayed     int   // added and not yet ended: Kafka's NumDelayedOperations
	Added       int64 // operations passed to TryCompleteElseWatch and bound here
	Completed   int64 // completed by TryComplete (in TryCompleteElseWatch or CheckAndComplete)
	Forced      int64 // completed by ForceComplete
	Expired     int64 // completed by their timeout, or by Close
	ContextDone int64 // completed because their Context was done
	Cancelled   int64 // removed by CancelForKey
}

type counters struct {
	watched, delayed                                     atomic.Int64
	added, completed, forced, expired, ctxDone, canceled atomic.Int64

	observer Observer  // nil: no clock is read per operation
	epoch    time.Time // Op.start is measured from here
}

func (c *counters) record(o Outcome) {
	c.delayed.Add(-1)
	switch o {
	case Completed:
		c.completed.Add(1)
	case Forced:
		c.forced.Add(1)
	case Expired:
		c.expired.Add(1)
	case ContextDone:
		c.ctxDone.Add(1)
	case Cancelled:
		c.canceled.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Watched:     int(c.watched.Load()),
		Delayed:     int(c.delayed.Load()),
		Added:       c.added.Load(),
		Completed:   c.completed.Load(),
		Forced:      c.forced.Load(),
		Expired:     c.expired.Load(),
		ContextDone: c.ctxDone.Load(),
		Cancelled:   c.canceled.Load(),
	}
}
