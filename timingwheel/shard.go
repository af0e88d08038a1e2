package timingwheel

import (
	"runtime"
	"sync/atomic"

	"github.com/purgatory-go/purgatory/internal/cacheline"
	"github.com/purgatory-go/purgatory/internal/procid"
	"github.com/purgatory-go/purgatory/internal/sched"
)

// A TimingWheel is split into shards so that goroutines on different cores
// that arm and stop timers do not serialize on one lock, nor pass one cache
// line between their cores on every operation (issue 28). Each shard is a
// whole wheel: its own lock, levels created on demand and delay queue of
// buckets.
//
// Which shard a timer lives on, the move rule: AfterFunc, NewTimer,
// InitTimer, ScheduleFunc and the contexts place a timer on the shard of the
// P (the runtime's processor) the calling goroutine runs on, as Go's runtime
// keeps its timers per P. Reset of a timer that is not pending (idle, or
// handed to the executor) first moves it to the caller's shard (arm, move),
// as the runtime's timers follow the P that re-adds them, so a timer made in
// one loop and armed by every handler does not keep their cores passing one
// shard's lock and buckets between them. A pending timer never moves: Reset
// reschedules it where it is, and Stop stops it wherever it lives. t.sh
// changes only under the mu of the shard it names.
//
// Three places depend on the rule:
//
//  1. timer.lock, the one way to lock a timer's shard (Stop, Reset,
//     Rejected, a recurrence's run): it locks the shard t.sh names, and
//     follows t if it moved meanwhile.
//  2. wheel.poll, popping a stale entry of near's heap: the entry's timer
//     may have moved since it was pushed, so poll reads its sh first and
//     its other fields only if it still lives here (wheel.home).
//  3. recurrence.rearm: the next run is armed on the shard of the run that
//     ends, under the lock timer.lock took, not through arm: a recurring
//     timer moves only when Reset arms it.
//
// What moving costs and pays, measured on the 2-core machine by W7 with a
// build that never moves (medians of 7 alternated processes): the owned
// timer, Reset+Stop on records made by one goroutine and armed by others,
// does 1.03x at one goroutine without the move (its P lookup and check), and
// 0.49x at two (both goroutines' timers stay on the first one's shard and
// share its lock: 1.1 cores busy instead of 2.0); the purgatory, whose
// operations are placed by the goroutine that arms them, 0.995x and 0.99x.
// W2's AfterFunc places each timer as it arms it and never reaches the move.
//
// One driver serves every shard. It never takes the shards' locks in turn to
// find out when to wake (the mistake tokio reverted, tokio-rs/tokio#7226):
// each shard publishes in next when it must next be polled, the driver reads
// those words without a lock and polls only the shards that are due, and a
// timer armed that makes its shard due sooner than the driver will look
// brings the driver's sleep forward (the handshake is at
// TimingWheel.sleepUntil).

// shard is one of a TimingWheel's wheels, padded by internal/cacheline's
// rule: each is written by the goroutines of its own P.
type shard struct {
	shardState
	_ [cacheline.Size - 32]byte // shardState is 160 bytes: TestShardLayout
}

type shardState struct {
	mu sched.WheelMutex // guards w and the place of every timer whose sh is this shard
	w  wheel            // held by value: wheels allocated one after another would share lines
	// next is the instant the driver must next poll this shard (never if
	// nothing is pending). Written under mu: lowered by register, set by
	// collect; read without mu by the driver.
	next atomic.Int64
	tw   *TimingWheel // immutable
}

// DefaultShards returns the number of shards New makes without [WithShards]:
// GOMAXPROCS at the time of the call.
func DefaultShards() int { return runtime.GOMAXPROCS(0) }

// local returns the shard for a timer armed by the calling goroutine: the
// shard of the P it runs on.
func (tw *TimingWheel) local() *shard {
	if len(tw.shards) == 1 {
		return &tw.shards[0]
	}
	p := procid.Hint()
	if p >= len(tw.shards) {
		p %= len(tw.shards) // fewer shards than Ps, or GOMAXPROCS grew
	}
	return &tw.shards[p]
}

// lock locks the shard t lives on and returns it. t's place, state and
// deadline are guarded by that shard's mu; t.sh changes only under the mu of
// the shard it names (move), so once t.sh still names the shard just locked,
// it stays so until the unlock. It is the one copy of this loop: arm and
// Stop once carried it inlined, and calling it instead measured the same
// (BenchmarkOwnedResetStop 0.99x, BenchmarkAfterFuncStop 1.02x, medians of 9
// alternated processes, within their spread).
func (t *timer) lock() *shard {
	for {
		sched.At("wheel: timer's shard load")
		sh := t.sh.Load()
		sh.mu.Lock()
		if t.sh.Load() == sh {
			return sh
		}
		sh.mu.Unlock() // moved meanwhile: follow it
	}
}

// register puts t in the shard's wheel at when, and, if t makes the shard due
// sooner than it was, publishes that and wakes the driver if it would look
// too late. The caller holds mu.
func (sh *shard) register(t *timer, when instant) {
	if at, ok := sh.w.insert(t, when); ok && int64(at) < sh.next.Load() {
		sh.next.Store(int64(at))
		sh.tw.wakeFor(at)
	}
}

// stop takes t out of the shard's wheel and reports whether it was pending.
// If t's deadline in near was what the shard's next waited for, next moves
// on to what is due after it, and moved says so, with old, the instant next
// had: the caller, once it has let go of mu, moves the driver's wake-up on
// from old (TimingWheel.postpone). A stop costs two loads and a compare
// more; the new next is looked up only when it can have moved.
//
// A bucket that a stop empties keeps its place in the delay queue until the
// driver next plans (dropEmpty), so a driver already asleep for it wakes
// once for nothing: at most once per bucket it slept for, about once a
// second for timeouts of a second, all stopped. Moving that wake-up too
// would take the bucket out of the queue at the stop and offer it again at
// the next arm, a heap pop, a push and an allocation on every Reset+Stop of
// a lone timer. The caller holds mu.
func (sh *shard) stop(t *timer) (pending bool, old instant, moved bool) {
	head := t.state == inNear && int64(t.when) == sh.next.Load()
	if pending = sh.w.stop(t); !pending || !head {
		return pending, 0, false
	}
	old = instant(sh.next.Load())
	at := sh.w.due()
	if at <= old {
		return true, old, false
	}
	sh.next.Store(int64(at))
	return true, old, true
}

// collect takes out of the shard what is due at now, appending it to due, and
// publishes when the shard must next be polled.
func (sh *shard) collect(now instant, due []job) []job {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.tw.stopped() {
		return due
	}
	due = sh.w.poll(now, due)
	sh.next.Store(int64(sh.w.due()))
	return due
}

// drain empties the shard of a stopped wheel, calling fn with each pending
// timer (idle when fn sees it), under mu. Whoever arms a timer checks under
// the mu of its shard that the wheel is not stopped, so a timer armed on this
// shard before the wheel stopped is here to be drained, and none after.
func (sh *shard) drain(fn func(*timer)) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.w.drain(fn)
	sh.next.Store(int64(never))
}

// len returns how many timers wait in the shard.
func (sh *shard) len() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.w.count
}
