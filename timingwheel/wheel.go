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
// Time inside the wheel is counted in ticks since the TimingWheel's start; an
// timer's deadline (Timer.exp) is in nanoseconds since that start. An expiration is turned
// into ticks by rounding UP, and an entry runs only once the clock has reached
// that tick. That is the whole of "never early": Kafka and the Go ports round
// down and so fire up to one tick before the deadline.
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
	// ready holds timers that were already due when scheduled. It is offered to
	// the queue at expiration 0, so the consumer runs them next, never the caller.
	ready *slot
	count atomic.Int64 // entries in all buckets: the pending timers
	due   []*Timer     // scratch for expire; reused by the single consumer
	readd func(*entry) // w.cascade, bound once so that Flush does not allocate
}

type level struct {
	tick     int64 // ticks per bucket
	interval int64 // ticks the level spans: tick*size, saturated at MaxInt64
	current  int64 // start of the current bucket, a multiple of tick
	buckets  []*slot
}

func newWheel(tick time.Duration, size int) *wheel {
	w := &wheel{
		tick:  tick,
		size:  int64(size),
		queue: delayqueue.New[*slot](),
	}
	w.ready = bucket.New[*Timer](&w.count)
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

// ticks converts an expiration in nanoseconds into the first tick at or after it.
func (w *wheel) ticks(expiration int64) int64 {
	if expiration <= 0 {
		return 0
	}
	return min((expiration-1)/int64(w.tick)+1, maxTicks)
}

// duration converts ticks into nanoseconds, saturating.
func (w *wheel) duration(ticks int64) time.Duration {
	if ticks > math.MaxInt64/int64(w.tick) {
		return math.MaxInt64
	}
	return time.Duration(ticks) * w.tick
}

// add puts e into the bucket of the lowest level that spans its expiration. It
// returns false, leaving e unlinked, if e is due at the wheel's current time.
func (w *wheel) add(e *entry) bool {
	t := w.ticks(e.Value.exp)
	if t <= w.levels[0].current {
		return false
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
				w.queue.Offer(b, w.duration(exp))
			}
			return true
		}
	}
}

// schedule adds e to the wheel, or to the ready bucket if it is already due.
func (w *wheel) schedule(e *entry) {
	if w.add(e) {
		return
	}
	w.ready.Add(e)
	if w.ready.SetExpiration(0) {
		w.queue.Offer(w.ready, 0)
	}
}

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

// expire advances the clock to b's expiration and flushes b: each entry moves to
// a finer level, or is appended to due if its time has come. It returns due.
func (w *wheel) expire(b *slot, due []*Timer) []*Timer {
	if exp := b.Expiration(); exp != bucket.NoExpiration {
		w.advanceClock(exp)
	}
	w.due = due
	b.Flush(w.readd)
	due, w.due = w.due, nil
	return due
}

func (w *wheel) cascade(e *entry) {
	if !w.add(e) {
		w.due = append(w.due, e.Value)
	}
}

// poll expires every bucket that is due at now, appending the timers whose time
// has come to due, and returns due.
func (w *wheel) poll(now time.Duration, due []*Timer) []*Timer {
	for {
		b, ok := w.queue.Poll(now)
		if !ok {
			return due
		}
		due = w.expire(b, due)
	}
}

// drain empties every bucket, calling fn with each pending entry.
func (w *wheel) drain(fn func(*entry)) {
	w.ready.Flush(fn)
	for _, lv := range w.levels {
		for _, b := range lv.buckets {
			b.Flush(fn)
		}
	}
}
