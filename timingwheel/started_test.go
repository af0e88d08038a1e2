package timingwheel_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// starts is a StartObserver that records both latenesses.
type starts struct {
	lateness
	started lateness
}

func (s *starts) CallbackStarted(d time.Duration) { s.started.TimerFired(d) }

// The time from deadline to a callback's start includes the wait behind other
// callbacks, which the hand-off lateness cannot see: two timers due at 1 ms
// are handed over on time, and the second starts 99 ms late, behind a first
// that takes 99 ms, on the driver (inline) or on the pool's only worker.
func TestStartObserverSeesTheWaitForTheExecutor(t *testing.T) {
	for name, exec := range map[string]timingwheel.Executor{
		"inline":        timingwheel.InlineExecutor(),
		"pool of one":   timingwheel.PoolExecutor(1),
		"pool of eight": timingwheel.PoolExecutor(8), // no wait: each has a worker
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &starts{}
				tw := testkit.Wheel(t, timingwheel.WithObserver(obs), timingwheel.WithExecutor(exec))
				tw.AfterFunc(time.Millisecond, func() { time.Sleep(99 * time.Millisecond) })
				tw.AfterFunc(time.Millisecond, func() {})
				time.Sleep(time.Second)
				synctest.Wait()
				require.Equal(t, []time.Duration{0, 0}, obs.ls, "handed over on time")
				want := []time.Duration{0, 99 * time.Millisecond}
				if name == "pool of eight" {
					want = []time.Duration{0, 0}
				}
				require.Equal(t, want, obs.started.ls)
			})
		})
	}
}

// With a manual clock, a timer due at 10 ms, advanced at 200 ms, starts
// 190 ms late, as it was handed over.
func TestStartObserverOfAManualClock(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			obs := &starts{}
			tw, err := timingwheel.New(timingwheel.WithManualClock(), timingwheel.WithObserver(obs), timingwheel.WithExecutor(exec))
			require.NoError(t, err)
			defer tw.Stop()
			tw.AfterFunc(10*time.Millisecond, func() {})
			time.Sleep(200 * time.Millisecond)
			require.True(t, tw.AdvanceClock(0))
			synctest.Wait()
			require.Equal(t, []time.Duration{190 * time.Millisecond}, obs.ls)
			require.Equal(t, []time.Duration{190 * time.Millisecond}, obs.started.ls)
		})
	})
}

// panicsOnStart is a StartObserver whose CallbackStarted panics.
type panicsOnStart struct{ lateness }

func (*panicsOnStart) CallbackStarted(time.Duration) { panic("start observer") }

// A panicking CallbackStarted is reported like a callback's panic, and the
// callback runs all the same.
func TestStartObserverPanics(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			var got []any
			tw := testkit.Wheel(t, timingwheel.WithObserver(&panicsOnStart{}), timingwheel.WithExecutor(exec),
				timingwheel.WithPanicHandler(func(r any) { got = append(got, r) }))
			ran := false
			tw.AfterFunc(time.Millisecond, func() { ran = true })
			time.Sleep(time.Second)
			synctest.Wait()
			require.True(t, ran)
			require.Equal(t, []any{"start observer"}, got)
			require.EqualValues(t, 1, tw.Stats().Panics)
		})
	})
}
