package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newEntry returns a Timer expiring at exp (ns since start) that belongs to no
// TimingWheel, for tests of the pure wheel.
func newEntry(exp time.Duration) *timer {
	t := &timer{}
	t.when = instant(exp)
	return t
}

// runUntilEmpty drives w the way the driver does: sleep until the wheel's
// next deadline, then poll. It returns when each timer was handed out, and
// fails if one is handed out twice.
func runUntilEmpty(t *testing.T, w *wheel, now instant) map[*timer]instant {
	t.Helper()
	fired := map[*timer]instant{}
	for {
		next, ok := w.next()
		if !ok {
			return fired
		}
		now = max(now, next)
		for _, j := range w.poll(now, nil) {
			require.Equal(t, j.t.when, j.when, "handed with its deadline")
			_, twice := fired[j.t]
			require.False(t, twice, "timer handed out twice")
			fired[j.t] = now
		}
	}
}

// Kafka's TimingWheelTest: add a valid entry, an already-expired one and one
// that falls in the current bucket.
func TestWheelAdd(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	w.advanceClock(10) // current time: tick 10

	valid := newEntry(15 * time.Millisecond)
	w.insert(valid, valid.when)
	require.True(t, valid.pending())
	require.Equal(t, inLevel, valid.state, "a later tick waits in a bucket")
	require.EqualValues(t, 12, w.levels[1].buckets[3].Expiration(), "level 1's bucket of ticks 12-15")

	// Kafka treats the whole current bucket as expired and fires up to a tick
	// early; here every deadline in the current tick (or before it) waits in
	// near for its own time.
	expired := newEntry(9 * time.Millisecond)
	atNow := newEntry(10 * time.Millisecond)
	inTick := newEntry(10*time.Millisecond + 1)
	for _, e := range []*timer{expired, atNow, inTick} {
		at, ok := w.insert(e, e.when)
		require.True(t, ok, "near wakes the driver")
		require.EqualValues(t, e.when, at, "at the deadline itself")
		require.Equal(t, inNear, e.state)
	}
	require.EqualValues(t, 4, w.count)

	require.ElementsMatch(t, []job{{expired, expired.when}, {atNow, atNow.when}}, w.poll(instant(10*time.Millisecond), nil))
	require.Empty(t, w.poll(instant(10*time.Millisecond), nil))
	require.Equal(t, []job{{inTick, inTick.when}}, w.poll(instant(10*time.Millisecond+1), nil), "not a nanosecond early")
	next, ok := w.next()
	require.True(t, ok)
	require.Equal(t, instant(12*time.Millisecond), next, "then level 1's bucket")
}

func TestWheelStoppedEntryNeverFires(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	keep, stop := newEntry(30*time.Millisecond), newEntry(30*time.Millisecond)
	w.insert(keep, keep.when)
	w.insert(stop, stop.when)
	require.True(t, w.stop(stop))
	fired := runUntilEmpty(t, w, 0)
	_, kept := fired[keep]
	_, stopped := fired[stop]
	require.True(t, kept)
	require.False(t, stopped, "a removed entry fired")
}

func TestWheelAdvanceClock(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	w.advanceClock(0)
	require.EqualValues(t, 0, w.levels[0].current, "advancing within a tick leaves the current time")
	w.advanceClock(1)
	require.EqualValues(t, 1, w.levels[0].current, "advancing to the next tick moves it")
	w.advanceClock(0)
	require.EqualValues(t, 1, w.levels[0].current, "time never goes backwards")
}

func TestWheelOverflowCreatedOnceAndReused(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	require.Len(t, w.levels, 1)
	a := newEntry(5 * time.Millisecond) // beyond level 0's 4 ticks
	w.insert(a, a.when)
	require.Len(t, w.levels, 2)
	overflow := w.levels[1]
	b := newEntry(12 * time.Millisecond)
	w.insert(b, b.when)
	require.Len(t, w.levels, 2, "a second entry reuses the overflow level")
	require.Same(t, overflow, w.levels[1])
	require.EqualValues(t, 4, overflow.tick, "overflow tick is the lower level's interval")
	require.EqualValues(t, 16, overflow.interval)
}

func TestWheelAdvanceCascadesToOverflowTick(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	far := newEntry(40 * time.Millisecond) // level 2: ticks of 16, spans 64
	w.insert(far, far.when)
	require.Len(t, w.levels, 3)
	w.advanceClock(21)
	require.EqualValues(t, 21, w.levels[0].current)
	require.EqualValues(t, 20, w.levels[1].current, "level 1 moves to its own tick")
	require.EqualValues(t, 16, w.levels[2].current, "level 2 moves to its own tick")
}

func TestWheelCurrentOfNewLevelIsAligned(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	w.advanceClock(7)
	e := newEntry(30 * time.Millisecond)
	w.insert(e, e.when)
	require.EqualValues(t, 4, w.levels[1].current, "a new overflow level starts at its tick boundary")
}

// TestWheelSweep checks every delay across the first three level boundaries,
// from several starting times, for two (tick, size) settings: driven as the
// driver drives it, each entry fires exactly at its deadline (or at the start,
// if that was already past), neither early nor rounded to a tick.
func TestWheelSweep(t *testing.T) {
	for _, cfg := range []struct {
		tick time.Duration
		size int
	}{{time.Millisecond, 4}, {7 * time.Microsecond, 16}, {time.Millisecond, 5}} { // 5: bucketOf divides
		t.Run(fmt.Sprintf("tick=%v,size=%d", cfg.tick, cfg.size), func(t *testing.T) {
			span := cfg.tick * time.Duration(cfg.size*cfg.size*cfg.size+cfg.size+2)
			step := cfg.tick / 3
			for _, startTicks := range []time.Duration{0, 1, 3, time.Duration(cfg.size) + 1, time.Duration(cfg.size * cfg.size)} {
				w := newWheel(cfg.tick, cfg.size)
				start := startTicks*cfg.tick + cfg.tick/2 // the clock is mid-tick
				w.advanceClock(int64(start / cfg.tick))   // the tick that has started at start
				var timers []*timer
				for d := time.Duration(0); d <= span; d += step {
					tm := newEntry(start + d)
					w.insert(tm, tm.when)
					timers = append(timers, tm)
				}
				require.EqualValues(t, len(timers), w.count)
				fired := runUntilEmpty(t, w, instant(start))
				require.Len(t, fired, len(timers), "every timer fires once")
				for _, tm := range timers {
					exp := tm.when
					at := fired[tm]
					require.Equal(t, max(exp, instant(start)), at, "expiration %v (start %v)", exp, start)
				}
				require.Zero(t, w.count)
			}
		})
	}
}

// TestWheelLateDriver: when the driver wakes long after buckets were due, every
// due timer fires at that wake-up, none before its deadline.
func TestWheelLateDriver(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	var timers []*timer
	for d := time.Duration(1); d < 200*time.Millisecond; d += 333 * time.Microsecond {
		tm := newEntry(d)
		w.insert(tm, tm.when)
		timers = append(timers, tm)
	}
	due := w.poll(instant(100*time.Millisecond), nil)
	for _, tm := range due {
		require.LessOrEqual(t, time.Duration(tm.when), 100*time.Millisecond)
	}
	for _, tm := range timers {
		if time.Duration(tm.when) <= 100*time.Millisecond {
			require.False(t, tm.pending(), "a due timer was left in the wheel")
		} else {
			require.True(t, tm.pending(), "a timer not yet due left the wheel")
		}
	}
}

func TestWheelExtremeExpirations(t *testing.T) {
	w := newWheel(MinTick, MinWheelSize)
	far := newEntry(1<<63 - 1)
	w.insert(far, far.when)
	require.True(t, far.pending())
	require.Empty(t, w.poll(1<<62, nil))
	require.True(t, far.pending(), "the farthest timer stays pending")

	w = newWheel(time.Millisecond, MaxWheelSize)
	far = newEntry(1<<63 - 1)
	w.insert(far, far.when)
	require.True(t, far.pending())
}

// Buckets every timer has left are dropped from the queue, so the driver is
// not woken for them: a thousand timers of a thousand ticks, all stopped,
// leave nothing to wake for; one stopped among live ones leaves the live
// one's bucket next. A dropped bucket is offered again by the next timer
// added to it, which fires on time. A poll moves the clocks to its tick, so
// a timer added after a long quiet lands in the lowest level that spans it.
func TestWheelDropsEmptyBuckets(t *testing.T) {
	w := newWheel(time.Millisecond, 1024)
	var ts []*timer
	for i := range 1000 {
		e := newEntry(time.Duration(i+1) * time.Millisecond)
		w.insert(e, e.when)
		ts = append(ts, e)
	}
	next, ok := w.next()
	require.True(t, ok)
	require.Equal(t, instant(time.Millisecond), next)
	for _, e := range ts {
		require.True(t, w.stop(e))
	}
	_, ok = w.next()
	require.False(t, ok, "nothing pending: no bucket left to wake for")
	_, _, queued := w.queue.Head()
	require.False(t, queued, "every emptied bucket dropped")

	// A stopped timer ahead of a live one: the live one's bucket is next.
	early, late := newEntry(5*time.Millisecond), newEntry(9*time.Millisecond)
	w.insert(early, early.when)
	w.insert(late, late.when)
	w.stop(early)
	next, ok = w.next()
	require.True(t, ok)
	require.Equal(t, instant(9*time.Millisecond), next, "the stopped timer's bucket is not waited for")

	// The dropped bucket of tick 5 is offered again, and its timer fires on
	// time, never early.
	again := newEntry(5*time.Millisecond + 300)
	at, ok := w.insert(again, again.when)
	require.True(t, ok, "offered again: the driver must wake sooner")
	require.Equal(t, instant(5*time.Millisecond), at)
	fired := runUntilEmpty(t, w, 0)
	require.Equal(t, map[*timer]instant{again: again.when, late: late.when}, fired)

	// An hour of quiet with a poll at its end: the clocks are at that tick,
	// and a timer a second later waits on the first level.
	hour := instant(time.Hour)
	require.Empty(t, w.poll(hour, nil))
	require.EqualValues(t, w.tickOf(hour), w.levels[0].current)
	later := newEntry(time.Hour + time.Second)
	w.insert(later, later.when)
	require.Equal(t, inLevel, later.state)
	require.True(t, w.levels[0].buckets[w.tickOf(later.when)%1024].Expiration() == w.tickOf(later.when), "on level 0, in its own tick's bucket")
	require.Equal(t, map[*timer]instant{later: later.when}, runUntilEmpty(t, w, hour))
}

// Entries of near's heap whose timers were stopped, reset or handed since
// are not waited for: next skips to the first live deadline, and drops the
// stale entries it passed. A timer reset to a later deadline in near is
// waited for at its new deadline only.
func TestWheelNextSkipsStaleNearEntries(t *testing.T) {
	w := newWheel(time.Millisecond, 1024)
	a, b, c := newEntry(300*time.Microsecond), newEntry(400*time.Microsecond), newEntry(600*time.Microsecond)
	for _, e := range []*timer{a, b, c} {
		w.insert(e, e.when)
		require.Equal(t, inNear, e.state, "within the current tick")
	}
	w.stop(a)
	w.insert(b, 800*instant(time.Microsecond)) // Reset, as arm does it: a new entry, the old one stale
	next, ok := w.next()
	require.True(t, ok)
	require.Equal(t, c.when, next, "a's entry and b's old one are not waited for")
	require.Len(t, w.nearHeap, 2, "the two stale entries at the head dropped: c's and b's new one left")

	w.stop(c)
	next, ok = w.next()
	require.True(t, ok)
	require.Equal(t, b.when, next)
	w.stop(b)
	_, ok = w.next()
	require.False(t, ok, "nothing pending, nothing to wake for")
	require.Empty(t, w.nearHeap)
}

// bucketOf's shift and mask (a power of two for size) and its division (any
// other size) agree with tick / lv.tick and that modulo size, on every level.
func TestBucketOf(t *testing.T) {
	for _, size := range []int{4, 5, 1024, 1000} {
		w := newWheel(time.Millisecond, size)
		for len(w.levels) < 4 {
			w.addLevel()
		}
		rng := rand.New(rand.NewPCG(uint64(size), 1))
		for _, lv := range w.levels {
			require.Equal(t, lv.tick&(lv.tick-1) == 0, lv.shift >= 0, "size %d, level tick %d", size, lv.tick)
			if size&(size-1) == 0 {
				require.GreaterOrEqual(t, lv.shift, 0, "size %d: every level's tick is a power of two", size)
			}
			for range 1000 {
				tick := rng.Int64N(1 << 50)
				v, i := w.bucketOf(lv, tick)
				require.Equal(t, tick/lv.tick, v, "size %d, level tick %d, tick %d", size, lv.tick, tick)
				require.Equal(t, v%int64(size), i, "size %d, level tick %d, tick %d", size, lv.tick, tick)
			}
		}
	}
}
