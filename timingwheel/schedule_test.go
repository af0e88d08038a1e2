package timingwheel_test

import (
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

func TestScheduleFuncEvery(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec))
			begin := time.Now()
			runs := make(chan time.Duration, 10)
			tm := tw.ScheduleFunc(timingwheel.Every(10*time.Millisecond), func() { runs <- time.Since(begin) })
			for i := 1; i <= 5; i++ {
				require.Equal(t, time.Duration(i)*10*time.Millisecond, <-runs)
			}
			synctest.Wait() // the next run is armed once the callback has returned
			require.True(t, tm.Stop(), "Stop ends a pending schedule")
			time.Sleep(time.Second)
			synctest.Wait()
			require.Empty(t, runs)
			require.Zero(t, tw.Len())
		})
	})
}

func TestScheduleFuncStopFromInside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		var runs atomic.Int32
		var tm atomic.Pointer[timingwheel.Timer] // set after ScheduleFunc returns
		tm.Store(tw.ScheduleFunc(timingwheel.Every(time.Millisecond), func() {
			if runs.Add(1) == 3 {
				tm.Load().Stop()
			}
		}))
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 3, runs.Load(), "Stop during a run ends the schedule")
		require.Zero(t, tw.Len())
	})
}

// times is a Scheduler that gives fixed offsets from the first call, then ends.
type times struct {
	base    time.Time
	offsets []time.Duration
}

func (s *times) Next(prev time.Time) time.Time {
	if s.base.IsZero() {
		s.base = prev
	}
	for _, o := range s.offsets {
		if at := s.base.Add(o); at.After(prev) {
			return at
		}
	}
	return time.Time{}
}

func TestScheduleFuncEndsOnZeroTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		begin := time.Now()
		var at []time.Duration
		tw.ScheduleFunc(&times{offsets: []time.Duration{5 * time.Millisecond, 7 * time.Millisecond, 30 * time.Millisecond}},
			func() { at = append(at, time.Since(begin)) })
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []time.Duration{5 * time.Millisecond, 7 * time.Millisecond, 30 * time.Millisecond}, at)
		require.Zero(t, tw.Len())
	})
}

func TestScheduleFuncSkipsOverrunAndSurvivesPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		begin := time.Now()
		var at []time.Duration
		tw.ScheduleFunc(timingwheel.Every(10*time.Millisecond), func() {
			at = append(at, time.Since(begin))
			switch len(at) {
			case 1:
				time.Sleep(25 * time.Millisecond) // overruns the runs at 20 and 30
			case 2:
				panic("recurring callback panicked")
			}
		})
		time.Sleep(65 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, []time.Duration{10, 45, 55, 65}, scale(at, time.Millisecond),
			"after the overrun the schedule resumes 10 ms after it ended; a panic does not end it")
		require.EqualValues(t, 1, tw.Stats().Panics)
	})
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

func TestScheduleFuncNeverStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		tm := tw.ScheduleFunc(&times{}, func() { t.Error("ran") })
		require.Zero(t, tw.Len())
		require.False(t, tm.Stop())
	})
}

// TestScheduleFuncResetInThePast: a schedule Reset for a time already past
// runs at once and then a full interval after the Reset, beside a
// time.Timer that re-arms itself when it fires, whatever the past (FuzzClock
// found the next run coming at the saturated plan's interval: 12.25 ms early
// for math.MinInt64).
func TestScheduleFuncResetInThePast(t *testing.T) {
	const every = 19 * time.Millisecond
	for _, d := range []time.Duration{math.MinInt64, math.MinInt64 + 1, -time.Hour, -5 * time.Millisecond, -1, 0} {
		t.Run(d.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw := testkit.Wheel(t)
				time.Sleep(12250 * time.Microsecond)
				begin := time.Now()
				ours := make(chan time.Duration, 10)
				tm := tw.ScheduleFunc(timingwheel.Every(every), func() { ours <- time.Since(begin) })
				ref := make(chan time.Duration, 10)
				var rt *time.Timer
				rt = time.AfterFunc(every, func() { ref <- time.Since(begin); rt.Reset(every) })
				require.True(t, tm.Reset(d))
				require.True(t, rt.Reset(d))
				for range 3 {
					want := <-ref
					got := <-ours
					require.GreaterOrEqual(t, got, want, "never before the reference")
					require.LessOrEqual(t, got-want, time.Millisecond, "at most a tick after it")
				}
				tm.Stop()
				rt.Stop()
			})
		})
	}
}
