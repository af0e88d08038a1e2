package timingwheel

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/purgatory-go/purgatory/internal/procid"
)

// A TimingWheel is split into shards so that goroutines on different cores
// that arm and stop timers do not serialize on one lock, nor pass one cache
// line between their cores on every operation (issue 28). Each shard is a
// whole wheel: its own lock, levels created on demand and delay queue of
// buckets. A timer is armed on the shard of the P (the runtime's processor)
// its arming goroutine runs on, as Go's runtime keeps its timers per P, and
// is stopped wherever it lives.
//
// One driver serves every shard. It never takes the shards' locks in turn to
// find out when to wake (the mistake tokio reverted, tokio-rs/tokio#7226):
// each shard publishes in next when it must next be polled, the driver reads
// those words without a lock and polls only the shards that are due, and a
// schedule that makes its shard due sooner than the driver will look sends it
// a token (the handshake is at TimingWheel.sleepUntil).

// shard is one of a TimingWheel's wheels, padded so that two shards share no
// cache line: each is written by the goroutines of its own P.
type shard struct {
	shardState
	_ [80]byte // to a multiple of cacheLine: TestShardLayout
}

type shardState struct {
	mu sync.Mutex // guards w and the place of every timer whose sh is this shard
	w  wheel      // held by value: wheels allocated one after another would share lines
	// next is the instant the driver must next poll this shard (never if
	// nothing is pending). Written under mu: lowered by schedule, set by
	// poll; read without mu by the driver.
	next atomic.Int64
	tw   *TimingWheel // immutable
}

// cacheLine is the spacing that keeps what two cores write off one cache
// line, and off the neighbouring line the processor fetches with it.
const cacheLine = 128

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
// it stays so until the unlock.
func (t *timer) lock() *shard {
	for {
		sh := t.sh.Load()
		sh.mu.Lock()
		if t.sh.Load() == sh {
			return sh
		}
		sh.mu.Unlock() // moved meanwhile: follow it
	}
}

// schedule puts t in the shard's wheel, and, if t makes the shard due sooner
// than it was, publishes that and wakes the driver if it would look too late.
// The caller holds mu.
func (sh *shard) schedule(t *timer) {
	if at, ok := sh.w.schedule(t); ok && int64(at) < sh.next.Load() {
		sh.next.Store(int64(at))
		sh.tw.wakeFor(at)
	}
}

// poll takes out of the shard what is due at now, appending it to due, and
// publishes when the shard must next be polled.
func (sh *shard) poll(now instant, due []job) []job {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.tw.stopped() {
		return due
	}
	due = sh.w.poll(now, due)
	next, ok := sh.w.next()
	if !ok {
		next = never
	}
	sh.next.Store(int64(next))
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
