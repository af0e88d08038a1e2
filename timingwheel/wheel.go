package timingwheel

import (
	"math"
	"math/bits"
	"time"
	"unsafe"

	"github.com/purgatory-go/purgatory/bucket"
	"github.com/purgatory-go/purgatory/delayqueue"
	"github.com/purgatory-go/purgatory/internal/cacheline"
	"github.com/purgatory-go/purgatory/internal/minheap"
)

type slot = bucket.Bucket[timer, *timer]

// wheel is the hierarchical timing wheel as pure data (Kafka's TimingWheel). It
// takes time as an argument and never reads the clock, so it can be tested
// exhaustively without waiting.
//
// Time inside the wheel is counted in ticks since the TimingWheel's start, and
// a timer's deadline is an instant (clock.go). A timer waits in the bucket of
// the tick its deadline falls in, and that bucket is flushed when its tick
// begins, a little before the deadlines in it: a flushed timer whose deadline
// has not come yet moves to near, a min-heap of exact deadlines within the
// current tick, and runs when the clock reaches its own deadline. So a timer
// is never early (Kafka and the Go ports round down to the tick and fire up to
// a tick early) and never rounded up either (which costs half a tick on
// average): it is as punctual as the driver's sleep.
//
// Level i has buckets of size^i ticks each and spans size^(i+1) ticks; higher
// levels are created on demand. All levels share one delay queue, ordered by
// the tick each bucket's time begins, and a bucket is offered to it only when
// its expiration changes (once per lap), so the queue holds at most one item
// per bucket.
//
// A wheel is not safe for concurrent use; the shard that holds it guards it
// with the shard's mutex (shard.go).
type wheel struct {
	tick   time.Duration // length of one tick
	size   int64         // buckets per level
	mask   int64         // size-1 if size is a power of two (the default), else 0: see bucketOf
	levels []*level
	queue  *delayqueue.Queue[*slot] // by tick
	// near holds the timers whose deadline falls in the current tick or has
	// passed: linked in near (so Stop unlinks them in O(1)) and ordered by
	// deadline in nearHeap, each entry keyed by the deadline its timer had
	// when it was pushed (stale entries: see timer's states).
	near     slot
	nearHeap minheap.Heap[*timer]
	count    int // timers inLevel or inNear: the pending ones
	// home is the shard that holds the wheel: the shard every timer linked
	// here names. (nil in the pure wheel's tests, whose timers name none.)
	home *shard
}

type level struct {
	levelState
	// The levels of different shards are allocated next to each other; this
	// keeps one shard's current, which its driver writes, off the line that
	// another shard's adds read (internal/cacheline's rule).
	_ [cacheline.Size - unsafe.Sizeof(levelState{})%cacheline.Size]byte
}

type levelState struct {
	tick     int64 // ticks per bucket
	shift    int   // log2(tick) if tick is a power of two, else -1: see bucketOf
	interval int64 // ticks the level spans: tick*size, saturated at MaxInt64
	current  int64 // start of the current bucket, a multiple of tick
	buckets  []slot
}

func newWheel(tick time.Duration, size int) *wheel {
	w := new(wheel)
	w.init(tick, size)
	return w
}

// init makes w an empty wheel in place (a shard holds its wheel by value).
func (w *wheel) init(tick time.Duration, size int) {
	w.tick, w.size = tick, int64(size)
	if size&(size-1) == 0 {
		w.mask = int64(size) - 1
	}
	w.queue = delayqueue.New[*slot]()
	w.near.Init()
	w.addLevel()
}

func (w *wheel) addLevel() {
	lv := &level{levelState: levelState{tick: 1}}
	if n := len(w.levels); n > 0 {
		below := w.levels[n-1]
		lv.tick = below.interval
		lv.current = below.current - below.current%lv.tick
	}
	lv.shift = -1
	if lv.tick&(lv.tick-1) == 0 {
		lv.shift = bits.TrailingZeros64(uint64(lv.tick))
	}
	lv.interval = math.MaxInt64
	if lv.tick <= math.MaxInt64/w.size {
		lv.interval = lv.tick * w.size
	}
	lv.buckets = make([]slot, w.size)
	for i := range lv.buckets {
		lv.buckets[i].Init()
	}
	w.levels = append(w.levels, lv)
}

// insert puts t into the wheel at when, out of its old place if it had one.
// It returns when the wheel must next be polled for t's sake if that is
// earlier than before (a bucket newly offered to the queue, or a deadline in
// near), and ok false otherwise.
func (w *wheel) insert(t *timer, when instant) (wake instant, ok bool) {
	if t.pending() {
		w.unlink(t)
	} else {
		w.count++
	}
	t.when = when
	return w.place(t)
}

// slotOf returns the bucket that holds t, which is pending: near, or the one
// place recorded. A timer holds no pointer to its bucket (bucket.Links is an
// index, and so is this), which keeps it 48 bytes and free of a pointer the
// collector would scan.
func (w *wheel) slotOf(t *timer) *slot {
	if t.state == inNear {
		return &w.near
	}
	return &w.levels[t.level].buckets[t.bucket]
}

// unlink takes t, which is pending, out of its bucket.
func (w *wheel) unlink(t *timer) { w.slotOf(t).Remove(t) }

// place puts t into the bucket of the lowest level that spans its deadline's
// tick, or into near if that tick has begun; see insert.
func (w *wheel) place(t *timer) (wake instant, ok bool) {
	tick := w.tickOf(t.when)
	if tick <= w.levels[0].current {
		w.near.Add(t)
		t.state = inNear
		w.nearHeap.Push(int64(t.when), t)
		return t.when, true
	}
	t.state = inLevel
	for i := 0; ; i++ {
		if i == len(w.levels) {
			w.addLevel()
		}
		lv := w.levels[i]
		// Climbing to level i means tick is at least a whole bucket of level
		// i ahead of its current time, so the timer never lands in the bucket
		// being expired.
		if tick-lv.current < lv.interval {
			v, j := w.bucketOf(lv, tick)
			b := &lv.buckets[j]
			b.Add(t)
			t.level, t.bucket = uint8(i), uint32(j)
			if start := v * lv.tick; b.SetExpiration(start) {
				w.queue.Offer(b, start)
				return w.startOf(start), true
			}
			return 0, false
		}
	}
}

// bucketOf returns the bucket of lv that tick falls in, v (tick / lv.tick,
// counted from the wheel's start), and its index in lv.buckets. With a power
// of two for size, every level's tick is one too, and a shift and a mask take
// the place of two divisions, each about 3.6 ns on the 2-core machine, on the
// path of every arm.
func (w *wheel) bucketOf(lv *level, tick int64) (v, i int64) {
	if lv.shift >= 0 {
		v = tick >> lv.shift
	} else {
		v = tick / lv.tick
	}
	if w.mask != 0 {
		return v, v & w.mask
	}
	return v, v % w.size
}

// stop takes t out of the wheel, making it idle, and reports whether it was
// pending.
func (w *wheel) stop(t *timer) bool {
	pending := t.pending()
	if pending {
		w.unlink(t)
		w.count--
	}
	t.state = idle
	return pending
}

// hand takes t, which is due, out of the count of pending timers and appends
// it to due, with its deadline.
func (w *wheel) hand(t *timer, due []job) []job {
	t.state = handed
	w.count--
	return append(due, job{t, t.when})
}

// advanceClock moves every level's current time to the bucket holding tick.
// Time never goes backwards: an earlier tick changes nothing.
func (w *wheel) advanceClock(tick int64) {
	for _, lv := range w.levels {
		if tick-lv.current < lv.tick {
			return // higher levels have coarser ticks: they cannot move either
		}
		lv.current = tick - tick%lv.tick
	}
}

// cascade advances the clock to b's tick and flushes b: each timer moves to a
// finer level or to near, or is appended to due if its deadline is at or
// before now. It returns due.
func (w *wheel) cascade(b *slot, now instant, due []job) []job {
	if start := b.Expiration(); start != bucket.NoExpiration {
		w.advanceClock(start)
	}
	b.Flush(func(t *timer) {
		if t.when <= now && w.tickOf(t.when) <= w.levels[0].current {
			due = w.hand(t, due) // already due: no round through near
			return
		}
		w.place(t)
	})
	return due
}

// poll cascades every bucket whose tick has begun at now, then appends to due
// every timer in near whose deadline is at or before now, and returns due.
// It moves the levels' clocks to now's tick: every bucket begun by then has
// been flushed (those dropped empty included, which no cascade moved the
// clocks for), so a timer placed next lands in the lowest level that spans
// it, as if every bucket had been flushed in turn.
func (w *wheel) poll(now instant, due []job) []job {
	tick := w.tickOf(now)
	for {
		b, ok := w.queue.Poll(tick)
		if !ok {
			break
		}
		due = w.cascade(b, now, due)
	}
	w.advanceClock(tick)
	for len(w.nearHeap) > 0 && instant(w.nearHeap[0].Key) <= now {
		if n := w.nearHeap.Pop(); w.live(n) {
			w.near.Remove(n.Value)
			due = w.hand(n.Value, due)
		}
	}
	return due
}

// live reports whether an entry of near's heap still stands for its timer:
// the timer lives on this wheel's shard, is inNear, and has the deadline the
// entry was pushed with. Stop and Reset leave entries behind (see timer's
// states); a stale entry's timer may have moved to another shard since, so
// its fields are then that shard's to guard, and not ours to read: sh first.
func (w *wheel) live(n minheap.Entry[*timer]) bool {
	t := n.Value
	return t.sh.Load() == w.home && t.state == inNear && t.when == instant(n.Key)
}

// next returns when the wheel must next be polled: the earliest of the next
// bucket's tick and the earliest deadline in near. ok is false if nothing is
// pending. What no timer waits for any more is dropped first: the buckets
// every timer has left (dropEmpty) and the stale entries at the head of
// near's heap (dropStale), so that the driver never plans a wake-up for
// them.
func (w *wheel) next() (at instant, ok bool) {
	w.dropEmpty()
	w.dropStale()
	tick, ok := w.queue.Peek()
	at = w.startOf(tick)
	if len(w.nearHeap) > 0 {
		if n := instant(w.nearHeap[0].Key); !ok || n < at {
			at, ok = n, true
		}
	}
	return at, ok
}

// due is next, or never when nothing is pending: the instant a shard
// publishes.
func (w *wheel) due() instant {
	if at, ok := w.next(); ok {
		return at
	}
	return never
}

// dropEmpty takes out of the queue the buckets at its head that hold no
// timer, every one stopped or moved since, resetting their expiration as a
// flush does (a timer added later offers the bucket again), so that the
// driver does not wake for them. Timers that mostly stop before their
// deadline leave such a bucket per tick of the finest level: a purgatory's
// operations that complete in time, examples/redis's BLPOPs with 1 s
// timeouts, each served within a millisecond, which woke the driver about
// 1,000 times a second for nothing. A bucket that empties after the driver
// went to sleep still wakes it, once, and its poll drops those behind it.
// The levels' clocks do not move for a dropped bucket; poll moves them.
func (w *wheel) dropEmpty() {
	for {
		b, tick, ok := w.queue.Head()
		if !ok || !b.Empty() {
			return
		}
		w.queue.Poll(tick)
		b.SetExpiration(bucket.NoExpiration)
	}
}

// dropStale pops the entries at the head of near's heap that no longer
// stand for their timer (live): those of timers stopped, reset or handed
// since they were pushed. Without it a stopped timer's deadline woke the
// driver for nothing: a purgatory's operations completed within their first
// tick, and a pool's waits of 50 to 500 µs, each left one (issue 51). The
// entries behind a live head stay until they reach it.
func (w *wheel) dropStale() {
	for len(w.nearHeap) > 0 && !w.live(w.nearHeap[0]) {
		w.nearHeap.Pop()
	}
}

// drain empties every bucket, calling fn with each pending timer, which is
// idle when fn sees it.
func (w *wheel) drain(fn func(*timer)) {
	release := func(t *timer) {
		t.state = idle
		fn(t)
	}
	w.near.Flush(release)
	clear(w.nearHeap)
	w.nearHeap = w.nearHeap[:0]
	for _, lv := range w.levels {
		for i := range lv.buckets {
			lv.buckets[i].Flush(release)
		}
	}
	w.count = 0
}
