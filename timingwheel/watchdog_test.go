package timingwheel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// blockOn is a callback that waits until release is closed.
func blockOn(release chan struct{}) func() { return func() { <-release } }

// Stats shows callbacks that block (issue 31): with a pool of two workers and
// three callbacks due at 1 ms that block, two run and one waits; the waiting
// one's age grows with the clock, and a 1 ms timer armed meanwhile queues
// behind them.
func TestStatsShowBusyAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(2)))
		release := make(chan struct{})
		for range 3 {
			tw.AfterFunc(time.Millisecond, blockOn(release))
		}
		require.Equal(t, timingwheel.Stats{Pending: 3}, tw.Stats())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		s := tw.Stats()
		require.Equal(t, 2, s.Busy)
		require.Equal(t, 1, s.Queued)
		require.Equal(t, 2*time.Second-time.Millisecond, s.OldestQueued, "due at 1 ms, still queued at 2 s")

		ran := make(chan struct{})
		tw.AfterFunc(time.Millisecond, func() { close(ran) })
		time.Sleep(time.Second)
		synctest.Wait()
		s = tw.Stats()
		require.Equal(t, 2, s.Queued, "the retry waits behind them")
		require.Equal(t, 3*time.Second-time.Millisecond, s.OldestQueued)

		close(release)
		<-ran
		synctest.Wait()
		s = tw.Stats()
		require.Zero(t, s.Busy)
		require.Zero(t, s.Queued)
		require.Zero(t, s.OldestQueued)
		require.EqualValues(t, 4, s.Fired)
	})
}

// Inline, the driver is the one worker: a blocking callback is Busy 1, and
// the callbacks of its batch wait behind it.
func TestStatsShowBusyInline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One shard: the two timers come out in the order they were armed.
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.InlineExecutor()), timingwheel.WithShards(1))
		release := make(chan struct{})
		tw.AfterFunc(time.Millisecond, blockOn(release))
		tw.AfterFunc(time.Millisecond, func() {})
		time.Sleep(time.Second)
		synctest.Wait()
		s := tw.Stats()
		require.Equal(t, 1, s.Busy)
		require.Equal(t, 1, s.Queued)
		require.Equal(t, time.Second-time.Millisecond, s.OldestQueued)
		close(release)
		synctest.Wait()
		s = tw.Stats()
		require.Zero(t, s.Busy)
		require.Zero(t, s.Queued)
	})
}

// When every worker has been inside a callback for StuckAfter with none
// returning, the wheel logs one line, naming the callbacks, to the logger
// given with WithLogger; at most one a minute; none before StuckAfter, none
// while a worker is free, and none once they return. The watchdog exits when
// the executor is idle (the bubble would not end otherwise).
func TestStuckCallbacksAreLogged(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			logger, logged := logcapture.Logger()
			// One shard: the two timers due at 60 s below come out of it in
			// the order they were armed (from two shards, equal deadlines
			// come in shard order).
			tw := testkit.Wheel(t, timingwheel.WithExecutor(exec), timingwheel.WithLogger(logger), timingwheel.WithShards(1))
			release := make(chan struct{})
			block := blockOn(release)
			// The pool's watchdog started with the first callbacks, at 1 ms,
			// and samples at 1 ms past each second: it sees every worker
			// busy first at 60.001 s and logs at 65.001 s, when the callback
			// queued at 60 s is 5.001 s late. Inline, it starts at 60 s and
			// logs at 66 s.
			workers, late := 4, "5.001s" // executors' pool
			if exec == timingwheel.InlineExecutor() {
				workers, late = 1, "6s"
			}
			for range workers - 1 {
				tw.AfterFunc(time.Millisecond, block)
			}
			// At 60 s the last worker enters one and a callback queues
			// behind it. Armed now, both are due in one batch: two
			// AfterFunc(0) calls at 60 s could reach the inline driver in
			// two, the second still in the wheel, not queued, once the
			// driver is inside the first.
			tw.AfterFunc(time.Minute, block)
			tw.AfterFunc(time.Minute, func() {})
			time.Sleep(time.Minute - time.Nanosecond)
			synctest.Wait()
			require.Empty(t, logged.String(), "a worker is still free")
			time.Sleep(time.Nanosecond) // now every worker is inside one

			time.Sleep(timingwheel.StuckAfter - time.Second)
			synctest.Wait()
			require.Empty(t, logged.String(), "not yet StuckAfter")
			time.Sleep(2 * time.Second)
			synctest.Wait()
			require.Len(t, logged.Lines(), 1)
			line := logged.Lines()[0]
			require.Contains(t, line, "level=WARN")
			require.Regexp(t, `(all 4 callback workers have been inside callbacks|a callback has run on the driver \(InlineExecutor\)) for 5s`, line)
			require.Regexp(t, `running="[14]× \S+blockOn\S*"`, line)
			require.Contains(t, line, "queued=1")
			require.Contains(t, line, "oldest_queued_late="+late)

			time.Sleep(time.Minute - 2*time.Second)
			synctest.Wait()
			require.Len(t, logged.Lines(), 1, "at most one a minute")
			time.Sleep(5 * time.Second)
			synctest.Wait()
			require.Len(t, logged.Lines(), 2, "and again a minute later")

			close(release)
			time.Sleep(time.Hour)
			synctest.Wait()
			require.Len(t, logged.Lines(), 2, "none once they return")
		})
	})
}

// Progress is not stuck: callbacks that each block for a second, one after
// another, on every worker, never trip the watchdog.
func TestSlowButMovingCallbacksAreNotStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logged := logcapture.Logger()
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(1)), timingwheel.WithLogger(logger))
		for i := range 30 {
			tw.AfterFunc(time.Duration(i)*time.Millisecond, func() { time.Sleep(time.Second) })
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, logged.String())
		require.Zero(t, tw.Stats().Queued)
	})
}

// Shutdown returns when its context ends while a callback blocks (as
// http.Server.Shutdown does while a handler blocks), on both executors, and
// the watchdog, which keeps watching through the shutdown, exits once the
// callback returns.
func TestShutdownWithABlockingCallback(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			logger, logged := logcapture.Logger()
			tw, err := timingwheel.New(timingwheel.WithExecutor(exec), timingwheel.WithLogger(logger))
			require.NoError(t, err)
			release := make(chan struct{})
			for range 4 {
				tw.AfterFunc(time.Millisecond, blockOn(release))
			}
			time.Sleep(time.Second)
			synctest.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			begin := time.Now()
			_, err = tw.Shutdown(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, 30*time.Second, time.Since(begin))
			require.Len(t, logged.Lines(), 2, "stuck, logged during the shutdown; and the shutdown's end")
			require.Contains(t, logged.Lines()[0], "for 5s")
			require.Contains(t, logged.Lines()[1], "Shutdown's context ended with callbacks still running")
			close(release)
			_, err = tw.Shutdown(context.Background())
			require.NoError(t, err)
		})
	})
}

// WithLogger takes the wheel's log lines: a recovered panic goes there, at
// level Error with its stack, and not to the standard logger; a nil logger
// is refused.
func TestWithLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		std := logcapture.Capture(t)
		logger, logged := logcapture.Logger()
		tw := testkit.Wheel(t, timingwheel.WithLogger(logger))
		tw.AfterFunc(time.Millisecond, func() { panic("boom") })
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, logged.Lines(), 1)
		require.Contains(t, logged.String(), `level=ERROR msg="timingwheel: recovered a panic from a timer's callback" panic=boom stack=`)
		require.Contains(t, logged.String(), "watchdog_test.go", "the stack shows where it panicked")
		require.Empty(t, std.String())
	})
	_, err := timingwheel.New(timingwheel.WithLogger(nil))
	require.ErrorIs(t, err, timingwheel.ErrInvalidOption)
	require.ErrorContains(t, err, "WithLogger(nil)")
}

// A short Shutdown names what held it (issue 37): with a 10 ms context and
// callbacks that block, on both executors, the error wraps ctx's and names
// the callbacks' funcs, how many run and how many wait; the logger gets the
// same at once, not only at StuckAfter. An AfterStop function that blocks is
// counted too.
func TestShortShutdownNamesWhatHoldsIt(t *testing.T) {
	executors(t, func(t *testing.T, exec timingwheel.Executor) {
		synctest.Test(t, func(t *testing.T) {
			logger, logged := logcapture.Logger()
			tw, err := timingwheel.New(timingwheel.WithExecutor(exec), timingwheel.WithLogger(logger))
			require.NoError(t, err)
			release := make(chan struct{})
			block := blockOn(release)
			tw.AfterFunc(time.Millisecond, block)
			tw.AfterFunc(time.Millisecond, block)
			tw.AfterStop(block)
			time.Sleep(time.Second)
			synctest.Wait()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			_, err = tw.Shutdown(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			want := `^timingwheel: Shutdown: context deadline exceeded with 2 callbacks running \(2× \S+blockOn\S*\), 0 queued and 1 AfterStop functions running$`
			if exec == timingwheel.InlineExecutor() {
				want = `^timingwheel: Shutdown: context deadline exceeded with 1 callbacks running \(1× \S+blockOn\S*\), 1 queued and 1 AfterStop functions running$`
			}
			require.Regexp(t, want, err.Error())
			require.Len(t, logged.Lines(), 1, "logged at once")
			require.Contains(t, logged.Lines()[0], `level=WARN msg="timingwheel: Shutdown's context ended with callbacks still running`)
			require.Regexp(t, `running="[12]× \S+blockOn\S*"`, logged.Lines()[0])
			close(release)
			_, err = tw.Shutdown(context.Background())
			require.NoError(t, err)
		})
	})
}
