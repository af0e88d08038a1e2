package timingwheel

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/bucket"
	"github.com/purgatory-go/purgatory/delayqueue"
)

type (
	entry = bucket.Entry[*Timer]
	slot  = bucket.Bucket[*Timer]
)

// maxTicks caps expirations so that every level's arithmetic stays inside int64.
// With the smallest allowed tick (1µs) it is about 146,000 years away.
const maxTicks = math.MaxInt64 / 2

// wheel is the hierarchical timing wheel as pure data (Kafka's TimingWheel). It
// takes time as an argument and never reads the clock, so it can be tested
// exhaustively without waiting.
//
// Time inside the wheel is counted in ticks since the TimingWheel's start; a
// timer's deadline (Timer.exp) is in nanoseconds since that start. A timer
// waits in the bucket of the tick its deadline falls in, and that bucket is
// flushed when its tick begins, a little before the deadlines in it: a
// flushed timer whose deadline has not come yet moves to near, a min-heap of
// exact deadlines within the current tick, and runs when the clock reaches
// its own deadline. So a timer is never early (Kafka and the Go ports round
// down to the tick and fire up to a tick early) and never rounded up either
// (which costs half a tick on average): it is as punctual as the driver's
// sleep.
//
// Level i has buckets of size^i ticks each and spans size^(i+1) ticks; higher
// levels are created on demand. All levels share one delay queue, and a bucket
// is offered to it only when its expiration changes (once per lap), so the queue
// holds at most one item per bucket.
//
// A wheel is not safe for concurrent use; TimingWheel guards it with its mutex.
type wheel struct {
	tick   time.Duration // length of one tick
	size   int64         // buckets per level
	levels []*level
	queue  *delayqueue.Queue[*slot]
	// near holds the timers whose deadline falls in the current tick or has
	// passed: linked in nearList (so Stop unlinks them in O(1)) and ordered
	// by deadline in nearHeap, whose entries a Stop or Reset leaves stale.
	nearList *slot
	nearHeap nearHeap
	count    atomic.Int64 // entries in all buckets: the pending timers
	readd    func(*entry) // w.cascade, bound once so that Flush does not allocate
	// now and due are expire's: cascade hands a timer that is already due
	// straight to due, without a round through near.
	now time.Duration
	due []*Timer
}

type level struct {
	tick     int64 // ticks per bucket
	interval int64 // ticks the level spans: tick*size, saturated at MaxInt64
	current  int64 // start of the current bucket, a multiple of tick
	buckets  []*slot
}

// nearEntry is a timer in near with the deadline it had when it was pushed: if
// the timer has left near or been given another deadline since, it is stale.
type nearEntry struct {
	exp int64
	t   *Timer
}

// nearHeap is a binary min-heap by exp, typed so that a push allocates
// nothing (container/heap would box every entry).
type nearHeap []nearEntry

func (h *nearHeap) push(e nearEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent].exp <= s[i].exp {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *nearHeap) pop() nearEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = nearEntry{}
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].exp < s[least].exp {
			least = l
		}
		if r < len(s) && s[r].exp < s[least].exp {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}

func newWheel(tick time.Duration, size int) *wheel {
	w := &wheel{
		tick:  tick,
		size:  int64(size),
		queue: delayqueue.New[*slot](),
	}
	w.nearList = bucket.New[*Timer](&w.count)
	w.readd = w.cascade
	w.addLevel()
	return w
}

func (w *wheel) addLevel() {
	lv := &level{tick: 1}
	if n := len(w.levels); n > 0 {
		below := w.levels[n-1]
		lv.tick = below.interval
		lv.current = below.current - below.current%lv.tick
	}
	lv.interval = math.MaxInt64
	if lv.tick <= math.MaxInt64/w.size {
		lv.interval = lv.tick * w.size
	}
	lv.buckets = make([]*slot, w.size)
	for i := range lv.buckets {
		lv.buckets[i] = bucket.New[*Timer](&w.count)
	}
	w.levels = append(w.levels, lv)
}

// tickOf returns the tick a deadline in nanoseconds falls in.
func (w *wheel) tickOf(exp int64) int64 {
	if exp <= 0 {
		return 0
	}
	return min(exp/int64(w.tick), maxTicks)
}

// duration converts ticks into nanoseconds, saturating.
func (w *wheel) duration(ticks int64) time.Duration {
	if ticks > math.MaxInt64/int64(w.tick) {
		return math.MaxInt64
	}
	return time.Duration(ticks) * w.tick
}

// add puts e into the bucket of the lowest level that spans its deadline's
// tick, or into near if that tick has begun. It returns when the wheel must
// next be polled for e's sake if that is earlier than before (a bucket newly
// offered to the queue, or a deadline in near), and ok false otherwise.
func (w *wheel) add(e *entry) (wake time.Duration, ok bool) {
	t := w.tickOf(e.Value.exp)
	if t <= w.levels[0].current {
		w.nearList.Add(e)
		w.nearHeap.push(nearEntry{e.Value.exp, e.Value})
		return time.Duration(e.Value.exp), true
	}
	for i := 0; ; i++ {
		if i == len(w.levels) {
			w.addLevel()
		}
		lv := w.levels[i]
		// Climbing to level i means t is at least a whole bucket of level i
		// ahead of its current time, so the entry never lands in the bucket
		// being expired.
		if t-lv.current < lv.interval {
			v := t / lv.tick
			b := lv.buckets[v%w.size]
			b.Add(e)
			if exp := v * lv.tick; b.SetExpiration(exp) {
				at := w.duration(exp)
				w.queue.Offer(b, at)
				return at, true
			}
			return 0, false
		}
	}
}

// schedule adds e to the wheel; see add.
func (w *wheel) schedule(e *entry) (wake time.Duration, ok bool) { return w.add(e) }

// advanceClock moves every level's current time to the bucket holding tick t.
// Time never goes backwards: an earlier t changes nothing.
func (w *wheel) advanceClock(t int64) {
	for _, lv := range w.levels {
		if t-lv.current < lv.tick {
			return // higher levels have coarser ticks: they cannot move either
		}
		lv.current = t - t%lv.tick
	}
}

// expire advances the clock to b's expiration and flushes b: each entry moves
// to a finer level or to near, or is appended to due if its deadline is at or
// before now. It returns due.
func (w *wheel) expire(b *slot, now time.Duration, due []*Timer) []*Timer {
	if exp := b.Expiration(); exp != bucket.NoExpiration {
		w.advanceClock(exp)
	}
	w.now, w.due = now, due
	b.Flush(w.readd)
	due, w.due = w.due, nil
	return due
}

func (w *wheel) cascade(e *entry) {
	if t := e.Value; t.exp <= int64(w.now) && w.tickOf(t.exp) <= w.levels[0].current {
		w.due = append(w.due, t)
		return
	}
	w.add(e)
}

// poll expires every bucket whose tick has begun at now, then appends to due
// every timer in near whose deadline is at or before now, and returns due.
func (w *wheel) poll(now time.Duration, due []*Timer) []*Timer {
	for {
		b, ok := w.queue.Poll(now)
		if !ok {
			break
		}
		due = w.expire(b, now, due)
	}
	for len(w.nearHeap) > 0 && w.nearHeap[0].exp <= int64(now) {
		n := w.nearHeap.pop()
		if t := n.t; t.e.Bucket() == w.nearList && t.exp == n.exp {
			t.e.Remove()
			due = append(due, t)
		}
	}
	return due
}

// next returns when the wheel must next be polled: the earliest of the next
// bucket's tick and the earliest deadline in near. ok is false if nothing is
// pending.
func (w *wheel) next() (at time.Duration, ok bool) {
	at, ok = w.queue.Peek()
	if len(w.nearHeap) > 0 {
		if n := time.Duration(w.nearHeap[0].exp); !ok || n < at {
			at, ok = n, true
		}
	}
	return at, ok
}

// drain empties every bucket, calling fn with each pending entry.
func (w *wheel) drain(fn func(*entry)) {
	w.nearList.Flush(fn)
	clear(w.nearHeap)
	w.nearHeap = w.nearHeap[:0]
	for _, lv := range w.levels {
		for _, b := range lv.buckets {
			b.Flush(fn)
		}
	}
}
