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
// An operation is a struct that embeds [Op], best as its first field with the
// fields TryComplete reads right after it, and implements three methods:
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
// TryComplete decides: when it returns true the library completes the
// operation with a compare-and-swap, with Outcome Completed, so exactly-once
// is the library's rather than every implementation's to remember (Kafka's
// tryComplete calls forceComplete itself), and OnComplete learns how it ended
// from Op.Outcome. The library runs one try of an operation at a time (a try
// bit in the operation's state word, and Op.Locker if set), and a try that
// passes always wins: a timeout, ForceComplete, the context, Close or
// CancelForKey that comes during it leaves its outcome for the try, which
// ends the operation with that outcome only if it returns false. So
// TryComplete may take what it completes with. Embedding keeps the
// bookkeeping (state, timer, watch-list places) inside the user's own
// allocation, and the small Operation interface keeps the user's methods
// ordinary methods. ForceComplete is a function taking the operation, rather
// than a method of Op, so that it can run OnComplete even before the
// operation is added.
//
// # Hand-offs
//
// Some waits complete every waiter an event satisfies (Kafka's fetch: every
// fetch whose bytes have arrived); others hand one item to one waiter (a
// queue's blocking receive, a pool's wait for a free connection, a
// semaphore acquired with a timeout). For those, TryComplete takes the item
// (pops it, under the queue's lock) and returns true, and the producer calls
// [Purgatory.HandOff] after each push: it tries the key's waiters in the
// order they came and stops at the first that finds nothing, so a push costs
// a try or two however many wait, and the item goes to the waiter that has
// waited longest. An item taken by a try is never lost to that waiter's
// timeout racing it.
//
// First come, first served covers the waiters HandOff reaches in its walk.
// It does not cover a waiter whose try is running on another goroutine at
// that moment (it is passed over; that goroutine tries once more), nor a
// waiter's own first tries in TryCompleteElseWatch: a new waiter can take an
// item ahead of older ones that HandOff has not reached yet, unless pushes
// (with their HandOff) and adds share one lock. The queue in docs/api.md
// shows both.
//
// # Timeouts
//
// Op.Timeout must be set: zero is taken for a forgotten field and
// TryCompleteElseWatch panics on it, unless Op.Context has a deadline, which
// then bounds the wait. [NoTimeout] waits without one. Every other value is
// taken as it is, from math.MinInt64 up: a negative Timeout is a deadline
// already passed (the operation expires as soon as the wheel, or a parked
// waiter, runs), and one whose deadline lies beyond the wheel's range never
// expires; the same holds for Wait's timeout. An operation ended by
// Close has its own Outcome, Closed, and runs OnComplete but not OnExpiration:
// a rolling restart is not a burst of timeouts.
//
// # Re-entrancy
//
// Every method may be called from inside any callback. In particular
// TryComplete may call CheckAndComplete or HandOff, even on its own key, and
// TryCompleteElseWatch or ForceComplete: a try of an operation that is already
// being tried does not wait, it asks the goroutine trying it to try once more;
// a walk of a key that is being walked does not wait either, it asks that walk
// for one more pass; and ForceComplete of the operation being tried leaves
// Forced for that try. So nothing deadlocks and no completion event is missed.
// Go's locks are not re-entrant, so the one exception is Op.Locker:
// TryComplete of an operation with a Locker must not cause a try of another
// operation with the same Locker (by CheckAndComplete on a key that watches
// it) on the same goroutine. OnComplete and OnExpiration run with no library
// lock held and may call anything, Close included.
//
// # Panics
//
// Every call into user code (TryComplete, OnComplete, OnExpiration, Recycle,
// the Observer, the panic handler) may panic. Afterwards no library lock and
// no operation's lock is held, the counters balance, and every operation still
// ends exactly once:
//
//   - On the caller's own goroutine the panic continues to the caller. A
//     panic in TryComplete during TryCompleteElseWatch undoes the call (the
//     operation is left unwatched, unarmed and uncounted), unless another
//     path had left its outcome for that try: the operation then ends with
//     that outcome, its callbacks running, before the panic continues.
//     During CheckAndComplete it leaves the operation pending (or ends it
//     with an outcome left for the try), with its timeout running, and the
//     key's other operations are still tried; during HandOff it stops the
//     hand-off there. A panic in OnComplete or the Observer comes after the
//     operation has ended and been counted; OnComplete and then
//     OnExpiration run even if the one before them panicked. The callbacks of
//     an outcome left for a try run on the trying goroutine, and a panic in
//     them reaches that goroutine's caller.
//   - On a goroutine the library owns (a timeout, a context's AfterFunc,
//     Close's sweep) the panic is recovered, counted in Stats.Panics, and
//     passed to the WithPanicHandler function or, with none, logged once with
//     its stack to the purgatory's logger (WithLogger; slog.Default()). Close
//     always finishes.
//
// # Callbacks that block
//
// OnComplete (and OnExpiration) must not block: each runs inside the call
// that ended the operation and holds it up. CheckAndComplete, HandOff,
// Advance, TryCompleteElseWatch, ForceComplete and ForceCompleteForKey wait
// for the callbacks they run, which include those of outcomes that timeouts,
// contexts and Close left for their tries; so does Close for the ones it
// runs, while Shutdown runs Close's sweep on a goroutine of its own and
// returns when its context ends; an expiry holds a timing-wheel worker, and
// once every worker is held no timeout of the wheel fires. A TryComplete that
// blocks holds up the outcomes left for it as well as its key's walk. A
// callback that has run longer than [StuckAfter] is logged, naming the
// operation's type, its outcome and the call it holds up.
//
// # Memory and cost
//
// Watch lists are sharded ([DefaultShards]: 64 per GOMAXPROCS, at most 512)
// so callers working on different keys do not contend. An operation ended by
// any path stops counting in Watched at once, and a key's list reclaims its
// place when the key is next walked or once its ended operations outnumber
// its live ones, so a list never holds more than twice what its live
// operations need, and watch-list memory needs no purge pass (Kafka's purge
// interval). Timeouts run on a [timingwheel.TimingWheel]: O(1) to start and
// to stop.
package purgatory
