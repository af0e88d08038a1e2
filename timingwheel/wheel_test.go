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

// runUntilEmpty drives w the way the driver does: sleep until the earliest
// bucket is due, then poll. It returns when each timer was handed out, and
// fails if one is handed out twice.
func runUntilEmpty(t *testing.T, w *wheel, now time.Duration) map[*Timer]time.Duration {
	t.Helper()
	fired := map[*Timer]time.Duration{}
	for {
		next, ok := w.queue.Peek()
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

// roundUp is when the reference model says an expiration fires: the first tick
// boundary at or after it.
func roundUp(exp, tick time.Duration) time.Duration {
	if exp <= 0 {
		return 0
	}
	return (exp + tick - 1) / tick * tick
}

// Kafka's TimingWheelTest: add a valid entry, an already-expired one and one
// that falls in the current bucket.
func TestWheelAdd(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	w.advanceClock(10) // current time: tick 10

	valid := newEntry(15 * time.Millisecond)
	require.True(t, w.add(&valid.e))
	require.NotNil(t, valid.e.Bucket())

	expired := newEntry(9 * time.Millisecond)
	require.False(t, w.add(&expired.e), "an entry before the current time is due at once")
	require.Nil(t, expired.e.Bucket())

	atNow := newEntry(10 * time.Millisecond)
	require.False(t, w.add(&atNow.e), "an entry at the current tick is due")

	// Kafka treats the whole current bucket as expired and fires up to a tick
	// early; here an expiration inside the current tick waits for the next one.
	inTick := newEntry(10*time.Millisecond + 1)
	require.True(t, w.add(&inTick.e), "an entry inside the current tick is not yet due")
	require.EqualValues(t, 11, inTick.e.Bucket().Expiration())

	require.EqualValues(t, 2, w.count.Load())
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
	require.True(t, w.add(&a.e))
	require.Len(t, w.levels, 2)
	overflow := w.levels[1]
	b := newEntry(12 * time.Millisecond)
	require.True(t, w.add(&b.e))
	require.Len(t, w.levels, 2, "a second entry reuses the overflow level")
	require.Same(t, overflow, w.levels[1])
	require.EqualValues(t, 4, overflow.tick, "overflow tick is the lower level's interval")
	require.EqualValues(t, 16, overflow.interval)
}

func TestWheelAdvanceCascadesToOverflowTick(t *testing.T) {
	w := newWheel(time.Millisecond, 4)
	far := newEntry(40 * time.Millisecond) // level 2: ticks of 16, spans 64
	require.True(t, w.add(&far.e))
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
	require.True(t, w.add(&e.e))
	require.EqualValues(t, 4, w.levels[1].current, "a new overflow level starts at its tick boundary")
}

// TestWheelSweep checks every delay across the first three level boundaries,
// from several starting times, for two (tick, size) settings: each entry fires
// exactly at the first tick boundary at or after its deadline, never early and
// less than one tick late.
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
					want := max(roundUp(exp, cfg.tick), start)
					require.Equal(t, want, at, "expiration %v (start %v)", exp, start)
					require.GreaterOrEqual(t, at, exp, "fired early")
					require.Less(t, at-exp, cfg.tick+max(start-exp, 0), "fired more than a tick late")
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
		if roundUp(time.Duration(tm.exp), time.Millisecond) <= 100*time.Millisecond {
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
