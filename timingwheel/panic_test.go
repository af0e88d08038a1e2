package timingwheel_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// With no handler, a panicking callback is logged once with its stack (as
// net/http logs a handler's panic), counted, and the other timers still run.
func TestPanicIsLoggedByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logged := logcapture.Capture(t)
		tw := testkit.Wheel(t)
		var ran atomic.Int32
		tw.AfterFunc(time.Millisecond, func() { panic("callback failed") })
		tw.AfterFunc(time.Millisecond, func() { ran.Add(1) })
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 1, ran.Load())
		require.EqualValues(t, 1, tw.Stats().Panics)
		out := logged.String()
		require.Equal(t, 1, strings.Count(out, "callback failed"), out)
		require.Contains(t, out, "timingwheel: recovered a panic from a timer's callback")
		require.Contains(t, out, "TestPanicIsLoggedByDefault", "with the stack of the panic")
	})
}

// A panicking handler or Observer is logged and never kills the goroutine
// that runs the other timers.
func TestPanickingHandlerAndObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logged := logcapture.Capture(t)
		for _, exec := range []timingwheel.Executor{timingwheel.InlineExecutor(), timingwheel.PoolExecutor(1)} {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec),
				timingwheel.WithPanicHandler(func(any) { panic("handler failed") }),
				timingwheel.WithObserver(panicky{}))
			var ran atomic.Int32
			tw.AfterFunc(time.Millisecond, func() { panic("callback failed") })
			for range 3 {
				tw.AfterFunc(2*time.Millisecond, func() { ran.Add(1) })
			}
			time.Sleep(3 * time.Millisecond)
			synctest.Wait()
			require.EqualValues(t, 3, ran.Load(), "the timers after the panics still ran")
			require.EqualValues(t, 3, tw.Stats().Panics, "the callback's and the observer's twice")
		}
		out := logged.String()
		require.Contains(t, out, "handler failed")
		require.Contains(t, out, "observer failed")
	})
}

type panicky struct{}

func (panicky) TimerFired(time.Duration) { panic("observer failed") }

// Case 7 of the trust issue: a zero TimingWheel says it must be created with
// New, every time; it used to leave its lock held, so the second call hung.
func TestZeroTimingWheel(t *testing.T) {
	var tw timingwheel.TimingWheel
	const msg = "timingwheel: TimingWheel must be created with New"
	for range 2 {
		require.PanicsWithValue(t, msg, func() { tw.AfterFunc(time.Second, func() {}) })
		require.PanicsWithValue(t, msg, func() { tw.ScheduleFunc(timingwheel.Every(time.Second), func() {}) })
		require.PanicsWithValue(t, msg, func() { _ = tw.Start() })
		require.PanicsWithValue(t, msg, func() { tw.Stop() })
		require.PanicsWithValue(t, msg, func() { tw.AdvanceClock(0) })
		require.PanicsWithValue(t, msg, func() { tw.Len() })
	}
	_, err := timingwheel.New(timingwheel.WithTick(time.Millisecond), nil)
	require.ErrorIs(t, err, timingwheel.ErrInvalidOption)
	require.ErrorContains(t, err, "option 1 is nil")
}

// A callback that calls runtime.Goexit (t.FailNow inside one, say) ends the
// pool's worker it runs on, but not the worker's place under the bound: with
// a pool of one, the callback due with it and a later one still run, once
// each, Stats shows nothing busy, and Shutdown returns. (The worker stayed
// counted, busy, before: one place fewer for good, and with a pool of one no
// timer ran again.)
func TestGoexitInACallbackKeepsThePoolsPlace(t *testing.T) {
	for _, workers := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(workers)), timingwheel.WithShards(1))
			var exited, with, later atomic.Int32
			tw.AfterFunc(time.Millisecond, func() { exited.Add(1); runtime.Goexit() })
			tw.AfterFunc(time.Millisecond, func() { with.Add(1) })
			tw.AfterFunc(time.Second, func() { later.Add(1) })
			time.Sleep(2 * time.Second)
			synctest.Wait()
			require.EqualValues(t, 1, exited.Load(), "%d workers", workers)
			require.EqualValues(t, 1, with.Load(), "%d workers: the callback due with it", workers)
			require.EqualValues(t, 1, later.Load(), "%d workers: a later callback", workers)
			s := tw.Stats()
			require.Zero(t, s.Busy)
			require.Zero(t, s.Queued)
			_, err := tw.Shutdown(context.Background())
			require.NoError(t, err)
		})
	}
}

// Inline, a callback that calls runtime.Goexit ends the driver goroutine, but
// not the driving: the callback due with it runs next, in order, on the
// goroutine that drives from then on, and later timers run, once each. Under
// a manual clock the one due with it runs on a goroutine of its own.
func TestGoexitInAnInlineCallback(t *testing.T) {
	for _, manual := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			opts := []timingwheel.Option{timingwheel.WithExecutor(timingwheel.InlineExecutor()), timingwheel.WithShards(1)}
			if manual {
				opts = append(opts, timingwheel.WithManualClock())
			}
			tw := testkit.Wheel(t, opts...)
			var order []string
			var mu sync.Mutex
			note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			tw.AfterFunc(time.Millisecond, func() { note("exits"); runtime.Goexit() })
			tw.AfterFunc(time.Millisecond, func() { note("with") })
			tw.AfterFunc(time.Second, func() { note("later") })
			time.Sleep(2 * time.Second)
			if manual {
				go tw.AdvanceClock(0) // its goroutine is the one that ends
				synctest.Wait()
				tw.AdvanceClock(0)
			}
			synctest.Wait()
			mu.Lock()
			require.Equal(t, []string{"exits", "with", "later"}, order, "manual clock: %v", manual)
			mu.Unlock()
			s := tw.Stats()
			require.Zero(t, s.Busy)
			require.Zero(t, s.Queued)
			_, err := tw.Shutdown(context.Background())
			require.NoError(t, err)
		})
	}
}

// exiting is an Observer and StartObserver whose first call of the kind
// asked for calls runtime.Goexit.
type exiting struct {
	onFired, onStarted bool
	calls              atomic.Int32
}

func (e *exiting) TimerFired(time.Duration) {
	if e.onFired && e.calls.Add(1) == 1 {
		runtime.Goexit()
	}
}

func (e *exiting) CallbackStarted(time.Duration) {
	if e.onStarted && e.calls.Add(1) == 1 {
		runtime.Goexit()
	}
}

// An Observer that calls runtime.Goexit ends the goroutine it is told on:
// the driver, or a goroutine that runs callbacks (StartObserver). No timer
// is lost and none runs twice: the batch it was told about and later timers
// run once each, on either executor, and Shutdown returns.
func TestGoexitInAnObserver(t *testing.T) {
	for _, onFired := range []bool{true, false} {
		executors(t, func(t *testing.T, exec timingwheel.Executor) {
			synctest.Test(t, func(t *testing.T) {
				obs := &exiting{onFired: onFired, onStarted: !onFired}
				tw := testkit.Wheel(t, timingwheel.WithExecutor(exec), timingwheel.WithObserver(obs))
				var ran [3]atomic.Int32
				tw.AfterFunc(time.Millisecond, func() { ran[0].Add(1) })
				tw.AfterFunc(time.Millisecond, func() { ran[1].Add(1) })
				tw.AfterFunc(time.Second, func() { ran[2].Add(1) })
				time.Sleep(2 * time.Second)
				synctest.Wait()
				for i := range ran {
					require.EqualValues(t, 1, ran[i].Load(), "timer %d (Goexit in TimerFired: %v)", i, onFired)
				}
				require.Zero(t, tw.Stats().Busy)
				_, err := tw.Shutdown(context.Background())
				require.NoError(t, err)
			})
		})
	}
}

// The callback that a StartObserver's Goexit sends to a goroutine of its own
// is still a callback to Shutdown: called there, Shutdown stops the wheel
// and returns ErrShutdownInCallback instead of waiting for itself.
func TestShutdownFromACallbackAfterAnObserversGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t, timingwheel.WithObserver(&exiting{onStarted: true}))
		errs := make(chan error, 1)
		tw.AfterFunc(time.Millisecond, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := tw.Shutdown(ctx)
			errs <- err
		})
		require.ErrorIs(t, <-errs, timingwheel.ErrShutdownInCallback)
	})
}
