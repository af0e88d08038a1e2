package timingwheel

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// armOn arms tm, which must not be pending, on shard i, as a goroutine on
// that shard's P would, and reports whether it was refused.
func armOn(tm *Timer, i int, d time.Duration) {
	t := &tm.t
	sh := t.lock()
	if to := &sh.tw.shards[i]; to != sh {
		sh = t.move(sh, to)
	}
	sh.register(t, sh.tw.deadline(d))
	sh.mu.Unlock()
}

// shardOf returns the index of the shard tm lives on.
func shardOf(tm *Timer) int {
	sh := tm.t.sh.Load()
	for i := range sh.tw.shards {
		if &sh.tw.shards[i] == sh {
			return i
		}
	}
	panic("not a shard of its wheel")
}

// One AdvanceClock advances every shard: timers spread over four shards run
// in deadline order on the inline executor, exactly when due, and Len and
// Stop count and hand back the timers of all of them.
func TestShardsAdvanceTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(WithManualClock(), WithShards(4), WithExecutor(InlineExecutor()))
		require.NoError(t, err)
		var order []int
		for i := range 40 {
			tm := tw.NewTimer(func() { order = append(order, i) })
			armOn(tm, (i*7)%4, time.Duration(i+1)*time.Millisecond) // deadlines interleave across shards
			require.Equal(t, (i*7)%4, shardOf(tm))
		}
		require.Equal(t, 40, tw.Len())
		time.Sleep(20 * time.Millisecond)
		require.True(t, tw.AdvanceClock(0))
		require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, order,
			"every timer due by 20 ms, across shards, in deadline order")
		require.Equal(t, 20, tw.Len())
		require.Len(t, tw.Stop(), 20, "Stop hands back the pending timers of every shard")
		require.Zero(t, tw.Len())
	})
}

// A timer armed on a shard the driver is not waiting for wakes it: the
// driver sleeps an hour for shard 0, and a timer armed later on shard 3
// still runs at its deadline (the handshake at TimingWheel.sleepUntil).
func TestArmOnAnotherShardWakesTheDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(WithShards(4))
		require.NoError(t, err)
		defer tw.Stop()
		armOn(tw.NewTimer(func() {}), 0, time.Hour)
		synctest.Wait() // the driver sleeps until the hour
		start := time.Now()
		var ranAt time.Duration
		armOn(tw.NewTimer(func() { ranAt = time.Since(start) }), 3, 10*time.Millisecond)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 10*time.Millisecond, ranAt, "on time, not at the hour")
	})
}

// Reset of a pending timer reschedules it on its own shard, from any
// goroutine; Reset of an idle one moves it to the caller's shard; Stop finds
// it wherever it lives.
func TestResetKeepsPendingMovesIdle(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	tw, err := New(WithShards(8), WithManualClock())
	require.NoError(t, err)
	defer tw.Stop()
	tm := tw.NewTimer(func() {})
	far := 0
	if tw.local() == &tw.shards[0] {
		far = 1
	}
	armOn(tm, far, time.Hour)
	require.True(t, tm.Reset(time.Minute), "pending")
	require.Equal(t, far, shardOf(tm), "a pending timer stays on its shard")

	require.True(t, tm.Stop())
	require.Equal(t, far, shardOf(tm))
	// Reset it again from goroutines until one runs on another shard than
	// far throughout the call (the P can change under a goroutine, so a
	// call whose shard changed meanwhile says nothing).
	moved := false
	for range 1000 {
		var wg sync.WaitGroup
		wg.Go(func() {
			before := tw.local()
			tm.Reset(time.Hour)
			if tw.local() == before && before != &tw.shards[far] {
				moved = tm.t.sh.Load() == before
				assert.True(t, moved, "an idle timer moves to the shard of the goroutine that arms it")
			}
			tm.Stop()
		})
		wg.Wait()
		if moved {
			break
		}
	}
	require.True(t, moved, "no goroutine ran on another P than shard %d's in 1,000 tries", far)
	require.Zero(t, tw.Len())
}

// TestShardsStress drives timers on every shard from 16 goroutines at once,
// with deadlines short enough that Stop and Reset race the firing, and stops
// the wheel in mid-run. Shared timers are re-armed and stopped by whichever
// goroutine draws them: every arming then ends exactly once (it ran, a Stop
// returned true for it, a Reset that returned true replaced it, or the
// wheel's Stop handed it back). And timers made by AfterFunc are each stopped
// by another goroutine than the one that armed it: each runs or is stopped
// or handed back, exactly one of the three, so none runs after a Stop that
// returned true.
func TestShardsStress(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	tw, err := New(WithShards(8), WithExecutor(PoolExecutor(16)))
	require.NoError(t, err)

	const goroutines, sharedN = 16, 64
	rounds := 4000
	if testing.Short() {
		rounds = 500
	}
	type account struct {
		tm                  *Timer
		runs, stops, resets atomic.Int64 // runs, and Stops and Resets that returned true
		calls               atomic.Int64 // Resets, the refused ones included
	}
	shared := make([]*account, sharedN)
	for i := range shared {
		a := &account{}
		a.tm = tw.NewTimer(func() { a.runs.Add(1) })
		shared[i] = a
	}
	// An arming of its own for each AfterFunc: what became of it.
	type arming struct {
		ran, stopped, handed atomic.Int32
	}
	var refusedOwn atomic.Int64 // AfterFunc timers the stopped wheel refused
	var handing atomic.Bool     // the wheel's Stop has handed back its pending timers, which the test runs
	var armings []*arming
	var armingsMu sync.Mutex
	toStop := make(chan struct {
		tm *Timer
		ar *arming
	}, 64)

	var shardsUsed [8]atomic.Bool
	var stopOnce sync.Once
	var handedBack int64
	stopWheel := func() {
		pending := tw.Stop()
		handedBack = int64(len(pending))
		handing.Store(true)
		for _, f := range pending {
			f()
		}
	}
	var wg, stoppers sync.WaitGroup
	for range 4 {
		stoppers.Go(func() {
			for s := range toStop {
				if s.tm.Stop() {
					s.ar.stopped.Add(1)
				}
			}
		})
	}
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for r := range rounds {
				if g == 0 && r == rounds*3/4 {
					stopOnce.Do(stopWheel) // mid-run: the rest is refused or finds nothing
				}
				a := shared[rng.IntN(sharedN)]
				d := time.Duration(rng.IntN(300)) * time.Microsecond
				switch rng.IntN(4) {
				case 0, 1: // re-arm a shared timer, from whichever goroutine drew it
					a.calls.Add(1)
					if a.tm.Reset(d) {
						a.resets.Add(1)
					}
					shardsUsed[shardOf(a.tm)].Store(true)
				case 2: // stop one, usually armed by another goroutine
					if a.tm.Stop() {
						a.stops.Add(1)
					}
				default: // a timer of its own, stopped by another goroutine
					ar := &arming{}
					tm := tw.AfterFunc(d, func() {
						if handing.Load() {
							ar.handed.Add(1)
						} else {
							ar.ran.Add(1)
						}
					})
					if tm.Rejected() { // only this goroutine arms it: exact
						refusedOwn.Add(1)
						continue
					}
					armingsMu.Lock()
					armings = append(armings, ar)
					armingsMu.Unlock()
					toStop <- struct {
						tm *Timer
						ar *arming
					}{tm, ar}
				}
			}
		})
	}
	wg.Wait()
	close(toStop)
	stoppers.Wait()
	stopOnce.Do(stopWheel)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = tw.Shutdown(ctx) // waits for every callback handed over
	require.NoError(t, err)

	// A shared timer's Resets were armings unless refused; the wheel counts
	// the refusals, the AfterFunc ones among them.
	var calls, ended, handedOwn int64
	for _, a := range shared {
		calls += a.calls.Load()
		ended += a.runs.Load() + a.stops.Load() + a.resets.Load()
	}
	for i, ar := range armings {
		ran, stopped, handed := ar.ran.Load(), ar.stopped.Load(), ar.handed.Load()
		require.EqualValues(t, 1, ran+stopped+handed, "AfterFunc timer %d: ran %d times, stopped %d, handed back %d", i, ran, stopped, handed)
		handedOwn += int64(handed)
	}
	armed := calls - (tw.Stats().Rejected - refusedOwn.Load())
	// The handed-back shared timers ran a.runs.Add too (their callbacks were
	// run by stopWheel), so they are in ended already.
	require.Equal(t, armed, ended,
		"every arming of a shared timer ends once: ran, stopped, replaced, or handed back by the wheel's Stop (%d handed back in all, %d of them AfterFunc's)", handedBack, handedOwn)
	var used int
	for i := range shardsUsed {
		if shardsUsed[i].Load() {
			used++
		}
	}
	require.GreaterOrEqual(t, used, 2, "timers were armed on %d shard(s) only", used)
	t.Logf("%d armings of shared timers and %d AfterFunc timers over %d shards; %d handed back", armed, len(armings), used, handedBack)
}
