package timingwheel_test

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/crashout"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

func TestMain(m *testing.M) {
	crashout.Keep() // a fuzz worker's crash, kept where .ci/run can print it
	goleak.VerifyTestMain(m)
}

// executors runs a test once with each built-in executor.
func executors(t *testing.T, test func(t *testing.T, exec timingwheel.Executor)) {
	t.Run("pool", func(t *testing.T) { test(t, timingwheel.PoolExecutor(4)) })
	t.Run("inline", func(t *testing.T) { test(t, timingwheel.InlineExecutor()) })
}

// Kafka's TimerTest.testAlreadyExpiredTask: timers with past deadlines run at
// once.
func TestAlreadyExpired(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec))
			var ran atomic.Int32
			for d := -5; d < 0; d++ {
				tw.AfterFunc(time.Duration(d)*time.Millisecond, func() { ran.Add(1) })
			}
			tw.AfterFunc(0, func() { ran.Add(1) })
			synctest.Wait()
			require.EqualValues(t, 6, ran.Load())
			require.Zero(t, tw.Len())
		})
	})
}

// Kafka's TimerTest.testTaskExpiration: every task runs exactly once, never
// before its delay, at most a tick after it.
func TestTaskExpiration(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec))
			var delays []int
			for d := range 5 {
				delays = append(delays, d)
			}
			for d := 10; d < 100; d++ {
				delays = append(delays, d, d)
			}
			for d := 100; d < 500; d++ {
				delays = append(delays, d)
			}
			runs := make([]atomic.Int32, len(delays))
			begin := time.Now()
			for i, d := range delays {
				delay := time.Duration(d) * time.Millisecond
				tw.AfterFunc(delay, func() {
					runs[i].Add(1)
					elapsed := time.Since(begin)
					assert.GreaterOrEqual(t, elapsed, delay, "task %d ran early", i)
					assert.LessOrEqual(t, elapsed, delay+time.Millisecond, "task %d ran late", i)
				})
			}
			time.Sleep(time.Second)
			synctest.Wait()
			for i := range runs {
				require.EqualValues(t, 1, runs[i].Load(), "task %d (delay %d ms)", i, delays[i])
			}
			require.Zero(t, tw.Len())
		})
	})
}

// Kafka's SystemTimerReaperTest: the driver fires timers with nobody calling
// AdvanceClock, and Stop ends it (goleak checks the goroutine is gone).
func TestDriverFiresWithoutAdvanceClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New()
		require.NoError(t, err)
		begin := time.Now()
		fired := make(chan time.Duration, 3)
		for _, d := range []time.Duration{100, 200, 300} {
			tw.AfterFunc(d*time.Millisecond, func() { fired <- time.Since(begin) })
		}
		for _, want := range []time.Duration{100, 200, 300} {
			require.Equal(t, want*time.Millisecond, <-fired)
		}
		require.Empty(t, tw.Stop())
	})
}

func TestNeverEarlyRandomDelays(t *testing.T) {
	for _, tick := range []time.Duration{time.Millisecond, 3 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithTick(tick), timingwheel.WithWheelSize(8))
			const n = 5000
			var early, late, ran atomic.Int32
			for i := range n {
				// Deadlines off the tick grid, scheduled at times off the grid.
				delay := time.Duration(i*7919%2_000_000)*time.Microsecond + time.Duration(i%13)*time.Nanosecond
				if i%50 == 0 {
					time.Sleep(time.Duration(i%7) * 137 * time.Microsecond)
				}
				at := time.Now()
				tw.AfterFunc(delay, func() {
					ran.Add(1)
					switch elapsed := time.Since(at); {
					case elapsed < delay:
						early.Add(1)
					case elapsed > delay+tick:
						late.Add(1)
					}
				})
			}
			time.Sleep(3 * time.Second)
			synctest.Wait()
			require.EqualValues(t, n, ran.Load())
			require.Zero(t, early.Load(), "timers fired before their deadline")
			require.Zero(t, late.Load(), "timers fired more than a tick late")
		})
	}
}

func TestStopAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		var runs atomic.Int32
		tm := tw.AfterFunc(time.Second, func() { runs.Add(1) })
		require.Equal(t, 1, tw.Len())
		require.True(t, tm.Stop(), "first Stop prevents the run")
		require.False(t, tm.Stop(), "second Stop prevents nothing")
		require.Zero(t, tw.Len())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Zero(t, runs.Load())

		require.False(t, tm.Reset(time.Second), "a stopped timer was not pending")
		require.True(t, tm.Reset(2*time.Second), "a reset timer is pending")
		begin := time.Now()
		time.Sleep(2*time.Second - 1)
		synctest.Wait()
		require.Zero(t, runs.Load(), "Reset moved the deadline")
		time.Sleep(time.Nanosecond) // the last nanosecond before the deadline
		synctest.Wait()
		require.EqualValues(t, 1, runs.Load())
		require.Equal(t, 2*time.Second, time.Since(begin))
		require.False(t, tm.Stop(), "Stop after the run returns false")

		require.False(t, tm.Reset(time.Millisecond), "a fired timer was not pending")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 2, runs.Load(), "Reset re-arms a fired timer")
	})
}

func TestConcurrentStopWinsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		for i := range 200 {
			var ran atomic.Int32
			tm := tw.AfterFunc(time.Duration(i%3)*time.Millisecond, func() { ran.Add(1) })
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					if tm.Stop() {
						wins.Add(1)
					}
				})
			}
			wg.Wait()
			require.LessOrEqual(t, wins.Load(), int32(1), "Stop returned true twice")
			time.Sleep(5 * time.Millisecond) // a run that was not stopped has happened by now
			synctest.Wait()
			require.EqualValues(t, 1, wins.Load()+ran.Load(), "stopped and also ran, or neither")
		}
	})
}

func TestNilAndZeroTimer(t *testing.T) {
	var nilTimer *timingwheel.Timer
	require.False(t, nilTimer.Stop())
	require.False(t, nilTimer.Reset(time.Second))
	var zero timingwheel.Timer
	require.False(t, zero.Stop())
	require.False(t, zero.Reset(time.Second))
}

func TestExtremeDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		var ran atomic.Bool
		far := tw.AfterFunc(math.MaxInt64, func() { ran.Store(true) })
		near := tw.AfterFunc(math.MinInt64, func() {})
		synctest.Wait()
		require.Equal(t, 1, tw.Len())
		require.True(t, far.Reset(math.MaxInt64))
		require.True(t, far.Stop())
		require.False(t, near.Stop(), "a timer with the most negative delay has run")
		require.False(t, ran.Load())
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, opt := range map[string]timingwheel.Option{
		"zero tick":          timingwheel.WithTick(0),
		"negative tick":      timingwheel.WithTick(-time.Millisecond),
		"tick below 1µs":     timingwheel.WithTick(999 * time.Nanosecond),
		"wheel size 0":       timingwheel.WithWheelSize(0),
		"wheel size 1":       timingwheel.WithWheelSize(1),
		"negative size":      timingwheel.WithWheelSize(-4),
		"huge wheel size":    timingwheel.WithWheelSize(timingwheel.MaxWheelSize + 1),
		"pool of 0 workers":  timingwheel.WithExecutor(timingwheel.PoolExecutor(0)),
		"zero Executor":      timingwheel.WithExecutor(timingwheel.Executor{}),
		"negative pool size": timingwheel.WithExecutor(timingwheel.PoolExecutor(-1)),
	} {
		t.Run(name, func(t *testing.T) {
			tw, err := timingwheel.New(opt)
			require.ErrorIs(t, err, timingwheel.ErrInvalidOption)
			require.Nil(t, tw)
		})
	}
	for _, opt := range []timingwheel.Option{
		timingwheel.WithTick(timingwheel.MinTick),
		timingwheel.WithWheelSize(timingwheel.MinWheelSize),
		timingwheel.WithWheelSize(timingwheel.MaxWheelSize),
		timingwheel.WithPanicHandler(nil),
	} {
		tw, err := timingwheel.New(opt)
		require.NoError(t, err)
		tw.Stop()
	}
}

func TestMisusePanics(t *testing.T) {
	tw, err := timingwheel.New()
	require.NoError(t, err)
	defer tw.Stop()
	require.PanicsWithValue(t, "timingwheel: AfterFunc called with a nil func", func() { tw.AfterFunc(time.Second, nil) })
	require.PanicsWithValue(t, "timingwheel: ScheduleFunc called with a nil Scheduler or func", func() { tw.ScheduleFunc(nil, func() {}) })
	require.PanicsWithValue(t, "timingwheel: Every called with a non-positive interval", func() { timingwheel.Every(0) })
	require.NoError(t, tw.Start(), "Start on a running wheel is harmless")
	require.Panics(t, func() { tw.AdvanceClock(0) }, "AdvanceClock on a running wheel")
}

func TestStopHandsBackAndRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New()
		require.NoError(t, err)
		require.NoError(t, tw.Start(), "Start twice is harmless")
		var ran atomic.Int32
		pendingTimer := tw.AfterFunc(time.Hour, func() { ran.Add(1) })
		tw.AfterFunc(2*time.Hour, func() { ran.Add(10) })

		pending := tw.Stop()
		require.Len(t, pending, 2, "Stop hands back every pending callback")
		require.Nil(t, tw.Stop(), "a second Stop has nothing more to hand back")
		require.Zero(t, tw.Len())
		require.False(t, pendingTimer.Stop(), "a handed-back timer is no longer pending")

		late := tw.AfterFunc(time.Millisecond, func() { ran.Add(100) })
		require.True(t, late.Rejected(), "the returned timer says it will never run")
		require.False(t, late.Stop())
		require.False(t, late.Reset(time.Millisecond))
		require.False(t, pendingTimer.Rejected(), "scheduled before Stop, handed back by it")
		require.False(t, pendingTimer.Reset(time.Millisecond))
		require.True(t, pendingTimer.Rejected(), "Reset on a stopped wheel is refused visibly too")
		require.EqualValues(t, 3, tw.Stats().Rejected, "AfterFunc and two Resets")
		require.ErrorIs(t, tw.Start(), timingwheel.ErrStopped)
		require.False(t, tw.AdvanceClock(time.Second))

		time.Sleep(3 * time.Hour)
		synctest.Wait()
		require.Zero(t, ran.Load(), "nothing runs after Stop")
		for _, f := range pending {
			f()
		}
		require.EqualValues(t, 11, ran.Load(), "the caller can run what was handed back")
	})
}

func TestStopNeverStarted(t *testing.T) {
	tw, err := timingwheel.New(timingwheel.WithManualClock())
	require.NoError(t, err)
	tw.AfterFunc(time.Hour, func() {})
	require.Len(t, tw.Stop(), 1)
}

func TestManualAdvanceClock(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw, err := timingwheel.New(timingwheel.WithExecutor(exec), timingwheel.WithManualClock())
			require.NoError(t, err)
			defer tw.Stop()
			begin := time.Now()
			var ran atomic.Int32
			tw.AfterFunc(0, func() { ran.Add(1) })
			require.Zero(t, ran.Load(), "AfterFunc never runs the callback on the caller's goroutine")
			tw.AfterFunc(50*time.Millisecond, func() { ran.Add(1) })

			require.True(t, tw.AdvanceClock(0), "the due timer is found without waiting")
			synctest.Wait()
			require.EqualValues(t, 1, ran.Load())
			require.False(t, tw.AdvanceClock(10*time.Millisecond), "nothing due within 10 ms")
			require.True(t, tw.AdvanceClock(time.Second))
			synctest.Wait()
			require.EqualValues(t, 2, ran.Load())
			require.Equal(t, 50*time.Millisecond, time.Since(begin))
		})
	})
}

func TestReentrantCallbacks(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec))
			var chain atomic.Int32
			var next func()
			next = func() {
				// Re-adding during a flush is RussellLuo/timingwheel#53's deadlock.
				if chain.Add(1) < 100 {
					tw.AfterFunc(0, next)
				}
			}
			tw.AfterFunc(time.Millisecond, next)

			victim := tw.AfterFunc(time.Hour, func() { t.Error("stopped timer ran") })
			moved := make(chan time.Duration, 1)
			begin := time.Now()
			movedTimer := tw.AfterFunc(time.Hour, func() { moved <- time.Since(begin) })
			tw.AfterFunc(5*time.Millisecond, func() {
				assert.True(t, victim.Stop(), "Stop from a callback")
				assert.True(t, movedTimer.Reset(10*time.Millisecond), "Reset from a callback")
			})
			require.Equal(t, 15*time.Millisecond, <-moved)
			synctest.Wait()
			require.EqualValues(t, 100, chain.Load())
		})
	})
}

func TestResetOwnTimerFromCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		var runs atomic.Int32
		var tm atomic.Pointer[timingwheel.Timer] // set after AfterFunc returns
		tm.Store(tw.AfterFunc(time.Millisecond, func() {
			if runs.Add(1) < 3 {
				tm.Load().Reset(time.Millisecond)
			}
		}))
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 3, runs.Load())
	})
}

func TestPanicIsolation(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var recovered []any
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec), timingwheel.WithPanicHandler(func(v any) {
				mu.Lock()
				recovered = append(recovered, v)
				mu.Unlock()
			}))
			var ran atomic.Int32
			for i := range 1000 {
				tw.AfterFunc(time.Duration(i%10)*time.Millisecond, func() {
					if i%100 == 0 {
						panic(i)
					}
					ran.Add(1)
				})
			}
			time.Sleep(20 * time.Millisecond)
			synctest.Wait()
			require.EqualValues(t, 990, ran.Load(), "every other callback ran")
			require.EqualValues(t, 10, tw.Stats().Panics)
			require.Len(t, recovered, 10)

			later := make(chan struct{})
			tw.AfterFunc(time.Second, func() { close(later) })
			<-later // the driver survived
		})
	})
}

func TestPanicWithoutHandlerIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		tw.AfterFunc(time.Millisecond, func() { panic(errors.New("boom")) })
		done := make(chan struct{})
		tw.AfterFunc(2*time.Millisecond, func() { close(done) })
		<-done
		synctest.Wait()
		require.EqualValues(t, 1, tw.Stats().Panics)
	})
}

// A slow callback must not hold up the driver or the other timers.
func TestSlowCallbackDoesNotBlockDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		release := make(chan struct{})
		tw.AfterFunc(time.Millisecond, func() { <-release })
		begin := time.Now()
		fired := make(chan time.Duration, 10)
		for i := range 10 {
			tw.AfterFunc(time.Duration(i+2)*time.Millisecond, func() { fired <- time.Since(begin) })
		}
		for i := range 10 {
			require.Equal(t, time.Duration(i+2)*time.Millisecond, <-fired)
		}
		close(release)
	})
}

// A burst of due timers must not start a goroutine per timer.
func TestBurstBoundsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, timers = 8, 20000
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(workers)))
		release := make(chan struct{})
		var started, finished atomic.Int32
		for range timers {
			tw.AfterFunc(time.Millisecond, func() {
				if started.Add(1) <= workers {
					<-release // hold every worker
				}
				finished.Add(1)
			})
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, workers, started.Load(), "only the workers started callbacks")
		// The process holds the test runner's few goroutines, the driver and
		// the workers; a goroutine per timer would be 20,000.
		require.Less(t, runtime.NumGoroutine(), workers+10)
		close(release)
		synctest.Wait()
		require.EqualValues(t, timers, finished.Load())
	})
}

func TestInlineExecutorRunsOnOneGoroutineInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.InlineExecutor()))
		var order []int
		var running atomic.Int32
		for i := range 50 {
			tw.AfterFunc(time.Duration(50-i)*time.Millisecond, func() {
				assert.EqualValues(t, 1, running.Add(1), "inline callbacks overlap")
				order = append(order, 50-i) // no lock needed: one goroutine
				running.Add(-1)
			})
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, order, 50)
		for i := range order {
			require.Equal(t, i+1, order[i], "callbacks run in deadline order")
		}
	})
}

func TestStopFromCallback(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			tw, err := timingwheel.New(timingwheel.WithExecutor(exec))
			require.NoError(t, err)
			tw.AfterFunc(time.Hour, func() {})
			returned := make(chan []func())
			tw.AfterFunc(time.Millisecond, func() { returned <- tw.Stop() })
			require.Len(t, <-returned, 1, "Stop from a callback hands back the pending timer")
			require.Nil(t, tw.Stop(), "Stop from outside afterwards waits and returns")
		})
	})
}

func TestLenCountsPending(t *testing.T) {
	tw, err := timingwheel.New(timingwheel.WithManualClock()) // nothing fires meanwhile
	require.NoError(t, err)
	defer tw.Stop()
	timers := make([]*timingwheel.Timer, 100)
	for i := range timers {
		timers[i] = tw.AfterFunc(time.Duration(i)*time.Minute, func() {})
	}
	require.Equal(t, 100, tw.Len())
	for i, tm := range timers[:40] {
		require.True(t, tm.Stop())
		require.Equal(t, 99-i, tw.Len())
	}
	require.Equal(t, 60, tw.Stats().Pending)
}
