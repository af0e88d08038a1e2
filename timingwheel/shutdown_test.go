package timingwheel_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// Stop does not wait for a running callback (as time.Timer.Stop); Shutdown
// does, until its context is done; both hand back what was pending.
func TestStopDoesNotWaitShutdownDoes(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw, err := timingwheel.New(timingwheel.WithExecutor(exec))
			require.NoError(t, err)
			release := make(chan struct{})
			var finished atomic.Bool
			tw.AfterFunc(time.Millisecond, func() {
				<-release
				finished.Store(true)
			})
			tw.AfterFunc(time.Hour, func() {})
			time.Sleep(time.Millisecond)
			synctest.Wait() // the first callback is running, blocked

			require.Len(t, tw.Stop(), 1, "Stop hands back the pending one")
			require.False(t, finished.Load(), "and returns while the other still runs")
			require.ErrorIs(t, tw.Err(), timingwheel.ErrStopped)

			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			pending, err := tw.Shutdown(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded, "the callback outlived ctx")
			require.Empty(t, pending, "a second stop has nothing more to hand back")

			close(release)
			pending, err = tw.Shutdown(context.Background())
			require.NoError(t, err)
			require.Empty(t, pending)
			require.True(t, finished.Load(), "Shutdown returned after the callback")
		})
	})
}

// Shutdown from inside a callback cannot wait for that callback: it stops the
// wheel and returns ErrShutdownInCallback at once, on both executors, instead
// of waiting until its context is done.
func TestShutdownFromCallback(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec))
			got := make(chan error, 1)
			var pending []func()
			begin := time.Now()
			tw.AfterFunc(time.Millisecond, func() {
				var err error
				pending, err = tw.Shutdown(context.Background()) // would wait forever
				got <- err
			})
			tw.AfterFunc(time.Hour, func() {})
			require.ErrorIs(t, <-got, timingwheel.ErrShutdownInCallback)
			require.Equal(t, time.Millisecond, time.Since(begin), "returned at once")
			require.Len(t, pending, 1, "and stopped the wheel as Stop does")
			require.ErrorIs(t, tw.Err(), timingwheel.ErrStopped)
		})
	})
}

// A wheel made WithManualClock runs nothing until AdvanceClock, and Start
// gives it a driver after all.
func TestManualClockThenStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New(timingwheel.WithManualClock())
		require.NoError(t, err)
		defer tw.Stop()
		var ran atomic.Int32
		tw.AfterFunc(time.Millisecond, func() { ran.Add(1) })
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Zero(t, ran.Load(), "no driver: nothing runs by itself")
		require.NoError(t, tw.Start())
		synctest.Wait()
		require.EqualValues(t, 1, ran.Load())
		require.Panics(t, func() { tw.AdvanceClock(0) }, "a running wheel is the driver's")
	})
}

// NewTimer gives a timer that a callback can re-arm through the variable that
// holds it, with no data race (the race detector checks).
func TestNewTimerRearmsItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		var runs atomic.Int32
		done := make(chan struct{})
		var tm *timingwheel.Timer
		tm = tw.NewTimer(func() {
			if runs.Add(1) < 3 {
				tm.Reset(10 * time.Millisecond)
				return
			}
			close(done)
		})
		require.False(t, tm.Stop(), "an unarmed timer is not pending")
		require.Zero(t, tw.Len())
		begin := time.Now()
		require.False(t, tm.Reset(0))
		<-done
		require.Equal(t, 20*time.Millisecond, time.Since(begin))
		require.Panics(t, func() { tw.NewTimer(nil) })
	})
}

// shuttingDown is an Observer whose first TimerFired calls Shutdown on its
// wheel, on the driver, and sends what it returned.
type shuttingDown struct {
	tw   *timingwheel.TimingWheel
	once sync.Once
	got  chan error
}

func (s *shuttingDown) TimerFired(time.Duration) {
	s.once.Do(func() {
		_, err := s.tw.Shutdown(context.Background()) // would wait for the driver it runs on
		s.got <- err
	})
}

// Shutdown called from an Observer on the driver is called from a callback:
// it stops the wheel and returns ErrShutdownInCallback at once, where it
// would wait for the driver it runs on (before, until its context ended).
func TestShutdownFromAnObserver(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			obs := &shuttingDown{got: make(chan error, 1)}
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec), timingwheel.WithObserver(obs))
			obs.tw = tw
			begin := time.Now()
			tw.AfterFunc(time.Millisecond, func() {})
			require.ErrorIs(t, <-obs.got, timingwheel.ErrShutdownInCallback)
			require.Equal(t, time.Millisecond, time.Since(begin), "returned at once")
			require.ErrorIs(t, tw.Err(), timingwheel.ErrStopped)
		})
	})
}
