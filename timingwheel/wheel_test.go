package timingwheel

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newEntry returns a Timer expiring at exp (ns since start) that belongs to no
// TimingWheel, for tests of the pure wheel.
func newEntry(exp time.Duration) *Timer {
	t := &Timer{}
	t.e.Value = t
	t.exp = int64(exp)
	return t
}

// runUntilEmpty drives w the way the driver does: sleep until the wheel's
// next deadline, then poll. It returns when each timer was handed out, and
// fails if one is handed out twice.
func runUntilEmpty(t *testing.T, w *wheel, now time.Duration) map[*Timer]time.Duration {
	t.Helper()
	fired := map[*Timer]time.Duration{}
	for {
		next, ok := w.next()
		if !ok {
			return fired
		}
		now = max(now, next)
		for _, tm := range w.poll(now, nil) {
			_, twice := fired[tm]
			require.False(t, twice, "timer handed out twice")
			fired[tm] = now
		}
	}
}

// Kafka's TimingWheelTest: add a valid entry, an already-expired one and one
// that falls in the current bucket.
func TestWheelAdd(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	w.advanceClock(10) // current time: tick 10

	valid := newEntry(15 * time.Millisecond)
	w.add(&valid.e)
	require.NotNil(t, valid.e.Bucket())
	require.NotSame(t, w.nearList, valid.e.Bucket(), "a later tick waits in a bucket")
	require.EqualValues(t, 12, valid.e.Bucket().Expiration(), "level 1's bucket of ticks 12-15")

	// Kafka treats the whole current bucket as expired and fires up to a tick
	// early; here every deadline in the current tick (or before it) waits in
	// near for its own time.
	expired := newEntry(9 * time.Millisecond)
	atNow := newEntry(10 * time.Millisecond)
	inTick := newEntry(10*time.Millisecond + 1)
	for _, e := range []*Timer{expired, atNow, inTick} {
		at, ok := w.add(&e.e)
		require.True(t, ok, "near wakes the driver")
		require.EqualValues(t, e.exp, at, "at the deadline itself")
		require.Same(t, w.nearList, e.e.Bucket())
	}
	require.EqualValues(t, 4, w.count.Load())

	require.ElementsMatch(t, []*Timer{expired, atNow}, w.poll(10*time.Millisecond, nil))
	require.Empty(t, w.poll(10*time.Millisecond, nil))
	require.Equal(t, []*Timer{inTick}, w.poll(10*time.Millisecond+1, nil), "not a nanosecond early")
	next, ok := w.next()
	require.True(t, ok)
	require.Equal(t, 12*time.Millisecond, next, "then level 1's bucket")
}

func TestWheelStoppedEntryNeverFires(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	keep, stop := newEntry(30*time.Millisecond), newEntry(30*time.Millisecond)
	w.schedule(&keep.e)
	w.schedule(&stop.e)
	require.True(t, stop.e.Remove())
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
	w.add(&a.e)
	require.Len(t, w.levels, 2)
	overflow := w.levels[1]
	b := newEntry(12 * time.Millisecond)
	w.add(&b.e)
	require.Len(t, w.levels, 2, "a second entry reuses the overflow level")
	require.Same(t, overflow, w.levels[1])
	require.EqualValues(t, 4, overflow.tick, "overflow tick is the lower level's interval")
	require.EqualValues(t, 16, overflow.interval)
}

func TestWheelAdvanceCascadesToOverflowTick(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	far := newEntry(40 * time.Millisecond) // level 2: ticks of 16, spans 64
	w.add(&far.e)
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
	w.add(&e.e)
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
	}{{time.Millisecond, 4}, {7 * time.Microsecond, 16}} {
		t.Run(fmt.Sprintf("tick=%v,size=%d", cfg.tick, cfg.size), func(t *testing.T) {
			span := cfg.tick * time.Duration(cfg.size*cfg.size*cfg.size+cfg.size+2)
			step := cfg.tick / 3
			for _, startTicks := range []time.Duration{0, 1, 3, time.Duration(cfg.size) + 1, time.Duration(cfg.size * cfg.size)} {
				w := newWheel(cfg.tick, cfg.size)
				start := startTicks*cfg.tick + cfg.tick/2 // the clock is mid-tick
				w.advanceClock(int64(start / cfg.tick))   // the tick that has started at start
				var timers []*Timer
				for d := time.Duration(0); d <= span; d += step {
					tm := newEntry(start + d)
					w.schedule(&tm.e)
					timers = append(timers, tm)
				}
				require.EqualValues(t, len(timers), w.count.Load())
				fired := runUntilEmpty(t, w, start)
				require.Len(t, fired, len(timers), "every timer fires once")
				for _, tm := range timers {
					exp := time.Duration(tm.exp)
					at := fired[tm]
					require.Equal(t, max(exp, start), at, "expiration %v (start %v)", exp, start)
				}
				require.Zero(t, w.count.Load())
			}
		})
	}
}

// TestWheelLateDriver: when the driver wakes long after buckets were due, every
// due timer fires at that wake-up, none before its deadline.
func TestWheelLateDriver(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	var timers []*Timer
	for d := time.Duration(1); d < 200*time.Millisecond; d += 333 * time.Microsecond {
		tm := newEntry(d)
		w.schedule(&tm.e)
		timers = append(timers, tm)
	}
	due := w.poll(100*time.Millisecond, nil)
	for _, tm := range due {
		require.LessOrEqual(t, time.Duration(tm.exp), 100*time.Millisecond)
	}
	for _, tm := range timers {
		if time.Duration(tm.exp) <= 100*time.Millisecond {
			require.Nil(t, tm.e.Bucket(), "a due timer was left in the wheel")
		} else {
			require.NotNil(t, tm.e.Bucket(), "a timer not yet due left the wheel")
		}
	}
}

func TestWheelExtremeExpirations(t *testing.T) {
	w := newWheel(MinTick, MinWheelSize)
	far := newEntry(1<<63 - 1)
	w.schedule(&far.e)
	require.NotNil(t, far.e.Bucket())
	require.Empty(t, w.poll(1<<62, nil))
	require.NotNil(t, far.e.Bucket(), "the farthest timer stays pending")

	w = newWheel(time.Millisecond, MaxWheelSize)
	far = newEntry(1<<63 - 1)
	w.schedule(&far.e)
	require.NotNil(t, far.e.Bucket())
}
