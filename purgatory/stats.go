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

// Ended returns how many operations ended with outcome o; zero for Pending
// or an unknown outcome.
func (s Stats) Ended(o Outcome) int64 {
	switch o {
	case Completed:
		return s.Completed
	case Forced:
		return s.Forced
	case Expired:
		return s.Expired
	case ContextDone:
		return s.ContextDone
	case Cancelled:
		return s.Cancelled
	}
	return 0
}

type counters struct {
	watched, delayed, added atomic.Int64
	ended                   [Cancelled + 1]atomic.Int64 // by Outcome; Pending's stays 0

	observer Observer  // nil: no clock is read per operation
	epoch    time.Time // Op.start is measured from here
}

func (c *counters) record(o Outcome) {
	c.delayed.Add(-1)
	c.ended[o].Add(1)
}

func (c *counters) snapshot() Stats {
	return Stats{
		Watched:     int(c.watched.Load()),
		Delayed:     int(c.delayed.Load()),
		Added:       c.added.Load(),
		Completed:   c.ended[Completed].Load(),
		Forced:      c.ended[Forced].Load(),
		Expired:     c.ended[Expired].Load(),
		ContextDone: c.ended[ContextDone].Load(),
		Cancelled:   c.ended[Cancelled].Load(),
	}
}
