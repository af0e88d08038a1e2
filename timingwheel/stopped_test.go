package timingwheel_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// A context with a deadline is done by its deadline, never before, whether
// the wheel stops after the context is made or was stopped before; Stop does
// not hand its timer back, and cancel still stops it.
func TestContextDeadlineOnAStoppedWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		begin := time.Now()
		before, cancelBefore := tw.WithTimeout(context.Background(), time.Second)
		defer cancelBefore()
		cancelled, cancel := tw.WithTimeout(context.Background(), time.Second)
		require.Empty(t, tw.Stop(), "contexts keep their deadlines; nothing to hand back")
		after, cancelAfter := tw.WithTimeout(context.Background(), 2*time.Second)
		defer cancelAfter()
		cancel()

		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		require.NoError(t, before.Err(), "not a nanosecond early")
		time.Sleep(time.Nanosecond) // the deadline itself
		synctest.Wait()
		require.ErrorIs(t, before.Err(), context.DeadlineExceeded)
		require.Equal(t, time.Second, time.Since(begin))
		require.ErrorIs(t, cancelled.Err(), context.Canceled, "cancel won before the deadline")
		require.NoError(t, after.Err())
		<-after.Done()
		require.Equal(t, 2*time.Second, time.Since(begin))
		require.ErrorIs(t, context.Cause(after), context.DeadlineExceeded)
	})
}

// Work handed to a stopped wheel is refused visibly: the timer says so, the
// counter (exported as timingwheel_rejected_timers_total) counts each, and the
// wheel's first one is logged, once.
func TestRejectedWorkIsVisible(t *testing.T) {
	log := logcapture.Capture(t)
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		armed := tw.AfterFunc(time.Hour, func() {})
		require.False(t, armed.Rejected())
		tw.Stop()
		retry := tw.AfterFunc(time.Millisecond, func() { t.Error("ran on a stopped wheel") })
		require.True(t, retry.Rejected())
		every := tw.ScheduleFunc(timingwheel.Every(time.Second), func() { t.Error("ran on a stopped wheel") })
		require.True(t, every.Rejected())
		unarmed := tw.NewTimer(func() {})
		require.False(t, unarmed.Reset(time.Second))
		require.True(t, unarmed.Rejected())
		require.EqualValues(t, 3, tw.Stats().Rejected)
		time.Sleep(time.Hour)
		synctest.Wait()
	})
	require.Equal(t, 1, strings.Count(log.String(), "scheduled on a stopped wheel"), "logged once per wheel: %s", log)
	require.False(t, (*timingwheel.Timer)(nil).Rejected())
}

// Two callbacks due together, the first waiting for the second, both run on
// the pool: a blocked callback does not hold up one due beside it while the
// bound allows another worker. (Before, one worker served up to 64 callbacks
// due together, and this deadlocked every time.)
func TestCallbacksDueTogetherDoNotWaitBehindABlockedOne(t *testing.T) {
	for _, n := range []int{2, 10, 100} {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t)
			release := make(chan struct{})
			var ran atomic.Int32
			for i := range n {
				tw.AfterFunc(5*time.Millisecond, func() {
					if i == n-1 {
						close(release) // the last one due frees all the others
					} else {
						<-release
					}
					ran.Add(1)
				})
			}
			time.Sleep(5 * time.Millisecond)
			synctest.Wait()
			require.EqualValues(t, n, ran.Load(), "%d callbacks due together", n)
		})
	}
}

// The bound still holds: with one worker, callbacks due together run one
// after another, and a blocked one holds up the next until it returns.
func TestPoolBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(1)))
		release := make(chan struct{})
		var second atomic.Bool
		tw.AfterFunc(time.Millisecond, func() { <-release })
		tw.AfterFunc(time.Millisecond, func() { second.Store(true) })
		time.Sleep(time.Hour)
		synctest.Wait()
		require.False(t, second.Load(), "one worker, and it is blocked")
		close(release)
		synctest.Wait()
		require.True(t, second.Load())
	})
}

// AfterStop's functions start when the wheel stops, Shutdown waits for them,
// a detached one never starts, one given to a stopped wheel starts at once,
// and a panicking one is reported like a callback.
func TestAfterStopFunctions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics atomic.Int32
		tw := testkit.Wheel(t, timingwheel.WithPanicHandler(func(any) { panics.Add(1) }))
		release := make(chan struct{})
		var ran, detachedRan atomic.Int32
		tw.AfterStop(func() { <-release; ran.Add(1) })
		tw.AfterStop(func() { panic("boom") })
		detach := tw.AfterStop(func() { detachedRan.Add(1) })
		require.True(t, detach())
		require.False(t, detach(), "detached already")
		synctest.Wait()
		require.Zero(t, ran.Load(), "nothing before Stop")

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := tw.Shutdown(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded, "Shutdown waits for the blocked function")
		close(release)
		_, err = tw.Shutdown(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 1, ran.Load())
		require.EqualValues(t, 1, panics.Load())
		require.Zero(t, detachedRan.Load())

		late := make(chan struct{})
		require.False(t, tw.AfterStop(func() { close(late) })(), "already started")
		<-late
		require.Panics(t, func() { tw.AfterStop(nil) })
	})
}

// The zero Executor is not taken for a pool of zero workers.
func TestZeroExecutorMessage(t *testing.T) {
	_, err := timingwheel.New(timingwheel.WithExecutor(timingwheel.Executor{}))
	require.ErrorIs(t, err, timingwheel.ErrInvalidOption)
	require.ErrorContains(t, err, "zero Executor; make one with timingwheel.PoolExecutor(n) or timingwheel.InlineExecutor()")
	_, err = timingwheel.New(timingwheel.WithExecutor(timingwheel.PoolExecutor(0)))
	require.ErrorContains(t, err, "PoolExecutor(0): a pool needs at least 1 worker")
}
