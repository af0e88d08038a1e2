package timingwheel_test

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// runs counts each callback's runs, by index.
type runs []atomic.Int32

// once requires every callback to have run exactly once.
func (r runs) once(t *testing.T) {
	t.Helper()
	for i := range r {
		require.EqualValues(t, 1, r[i].Load(), "callback %d", i)
	}
}

// The driver runs a batch itself: while its first callback blocks, Stats
// shows it busy with the rest of its batch queued behind it, and Shutdown's
// error names the callback it runs. Once its turn is over the rest moves to
// the pool's workers and every callback runs once.
func TestDriverTurnShowsInStatsAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One shard: the timers come out in the order they were armed.
		tw := testkit.Wheel(t, timingwheel.WithShards(1))
		for i := range 100 { // quick batches: no takeover
			tw.AfterFunc(time.Duration(i)*time.Microsecond, func() {})
		}
		synctest.Wait()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		s := tw.Stats()
		require.EqualValues(t, 100, s.Fired)
		require.Zero(t, s.Takeovers)
		release := make(chan struct{})
		r := make(runs, 3)
		tw.AfterFunc(time.Millisecond, func() { <-release; r[0].Add(1) })
		tw.AfterFunc(time.Millisecond, func() { <-release; r[1].Add(1) })
		tw.AfterFunc(time.Millisecond, func() { r[2].Add(1) })
		time.Sleep(time.Millisecond + timingwheel.DriverTurn/2)
		synctest.Wait()
		s = tw.Stats()
		require.Equal(t, 1, s.Busy, "the driver, inside the first")
		require.Equal(t, 2, s.Queued, "the rest of its batch")
		require.Equal(t, timingwheel.DriverTurn/2, s.OldestQueued)
		require.EqualValues(t, 103, s.Fired)
		require.Zero(t, s.Takeovers)

		ctx, cancel := context.WithTimeout(context.Background(), timingwheel.DriverTurn/4)
		defer cancel()
		_, err := tw.Shutdown(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "1 callbacks running (1× github.com/purgatory-go/purgatory/timingwheel_test.TestDriverTurnShowsInStatsAndShutdown.func1.2), 2 queued")

		time.Sleep(timingwheel.DriverTurn)
		synctest.Wait()
		s = tw.Stats()
		require.Equal(t, 2, s.Busy, "the deposed driver, and a worker inside the second")
		require.EqualValues(t, 1, s.Takeovers)
		require.Zero(t, s.Queued)
		require.Zero(t, r[0].Load()+r[1].Load())
		require.EqualValues(t, 1, r[2].Load(), "the third ran on a worker")

		close(release)
		_, err = tw.Shutdown(context.Background())
		require.NoError(t, err)
		r.once(t)
		require.Zero(t, tw.Stats().Busy)
	})
}

// A callback that calls runtime.Goexit (t.FailNow inside one, say) ends the
// goroutine it runs on: the driver within its turn, a driver already
// deposed, or a pool worker. None of them loses a timer, the driving or a
// worker's place under the bound: the rest of the batch and later timers run
// once each, Stats shows nothing busy, and Shutdown returns.
func TestGoexitInACallback(t *testing.T) {
	for name, wait := range map[string]time.Duration{
		"on the driver in its turn":   0,
		"on a driver deposed":         2 * timingwheel.DriverTurn,
		"on a worker, behind a block": -1,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw := testkit.Wheel(t, timingwheel.WithShards(1), timingwheel.WithExecutor(timingwheel.PoolExecutor(2)))
				release := make(chan struct{})
				r := make(runs, 4)
				if wait < 0 { // the driver blocks; the Goexit is on a worker
					tw.AfterFunc(time.Millisecond, func() { <-release; r[3].Add(1) })
				} else {
					r[3].Add(1)
				}
				tw.AfterFunc(time.Millisecond, func() { time.Sleep(max(wait, 0)); r[0].Add(1); runtime.Goexit() })
				tw.AfterFunc(time.Millisecond, func() { r[1].Add(1) })
				tw.AfterFunc(time.Second, func() { r[2].Add(1) })
				time.Sleep(500 * time.Millisecond)
				synctest.Wait()
				require.EqualValues(t, 1, r[1].Load(), "the rest of the batch ran")
				close(release)
				time.Sleep(time.Second)
				synctest.Wait()
				r.once(t)
				s := tw.Stats()
				require.Zero(t, s.Busy)
				require.Zero(t, s.Queued)
				require.EqualValues(t, 1, s.Takeovers)
				_, err := tw.Shutdown(context.Background())
				require.NoError(t, err)
			})
		})
	}
}

// TestDriverTurnStress fires timers in real time in batches whose callbacks
// spin for up to a few turns, so that the guard deposes drivers while they
// take their next callback, and checks that every callback runs exactly once
// and that Shutdown waits for all of them. It checks no timing.
func TestDriverTurnStress(t *testing.T) {
	tw, err := timingwheel.New(timingwheel.WithExecutor(timingwheel.PoolExecutor(8)))
	require.NoError(t, err)
	n := 5000
	if os.Getenv("PURGATORY_LONG") == "1" { // the long suite
		n = 100000
	}
	r := make(runs, n)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for i := g; i < n; i += 4 {
				spin := time.Duration(rng.ExpFloat64() * float64(timingwheel.DriverTurn) / 20)
				tw.AfterFunc(time.Duration(rng.IntN(50))*time.Millisecond, func() {
					for start := time.Now(); time.Since(start) < spin; {
					}
					r[i].Add(1)
				})
			}
		})
	}
	wg.Wait()
	for tw.Len() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pending, err := tw.Shutdown(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)
	r.once(t)
}
