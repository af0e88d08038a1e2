// Package purgatory holds delayed operations until they can complete or their
// timeout passes: Kafka's DelayedOperationPurgatory, in Go.
//
// A broker-like service adds an operation that cannot answer yet (a produce
// request waiting for replicas to acknowledge, a fetch waiting for enough
// bytes) with TryCompleteElseWatch, watching it under the keys whose events can
// complete it. When an event lands on a key, CheckAndComplete(key) tries the
// operations watched there. Whichever happens first — completion, ForceComplete
// from outside, the timeout, the operation's context being done, or
// CancelForKey — ends the operation, exactly once.
//
// # The operation model
//
// An operation is a struct that embeds [Op] and implements three methods:
//
//	type produce struct {
//		purgatory.Op
//		acks, need atomic.Int32
//	}
//
//	func (p *produce) TryComplete() bool { return p.acks.Load() >= p.need.Load() }
//	func (p *produce) OnComplete()       { respond(p, p.Outcome()) }
//	func (p *produce) OnExpiration()     { expiredRequests.Inc() }
//
// Unlike Kafka, TryComplete only checks; it does not complete the operation
// itself. The library holds the operation's lock while it checks and completes
// the operation with a compare-and-swap when the check passes, so exactly-once
// is guaranteed by the library rather than by every implementation remembering
// to call forceComplete, and OnComplete learns how it ended from Op.Outcome.
// Embedding keeps the bookkeeping (state, lock, timer, watch-list nodes) inside
// the user's own allocation, and the small Operation interface keeps the user's
// methods ordinary methods. ForceComplete is a function taking the operation,
// rather than a method of Op, so that it can run OnComplete even before the
// operation is added.
//
// # Memory and cost
//
// Watch lists are sharded (512 shards by default) so callers working on
// different keys do not contend, and an operation completed by any path leaves
// every watch list at once, so Watched never counts completed operations and
// watch-list memory needs no purge pass (Kafka's purge interval). Timeouts run
// on a [timingwheel.TimingWheel]: O(1) to start and to stop.
package purgatory
