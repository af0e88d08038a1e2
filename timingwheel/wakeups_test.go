package timingwheel_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// wakeups returns how often tw's driver has woken so far, once every
// goroutine of the bubble has settled.
func wakeups(tw *timingwheel.TimingWheel) int64 {
	synctest.Wait()
	return tw.Stats().Wakeups
}

// oneShard returns a running wheel of one shard, its driver asleep: with
// several, which shard a timer lands on depends on the P the test runs on.
// The tests arm their timers at once: the levels' clocks move only when the
// driver polls, so after a quiet spell a timer lands in a coarser bucket
// and the driver wakes once more to cascade it.
func oneShard(t *testing.T) *timingwheel.TimingWheel {
	tw, err := timingwheel.New(timingwheel.WithShards(1))
	require.NoError(t, err)
	t.Cleanup(func() { tw.Stop() })
	require.EqualValues(t, 0, wakeups(tw), "an idle wheel sleeps")
	return tw
}

// firedAt returns a callback that records how long after start it ran.
func firedAt(start time.Time, at *atomic.Int64) func() {
	return func() { at.Store(int64(time.Since(start))) }
}

// Stats.Wakeups counts the driver's wake-ups: none for arming a timer (its
// sleep is re-armed where it sleeps), one at the deadline, none after.
func TestWakeupsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := oneShard(t)
		fired := make(chan struct{})
		tw.AfterFunc(10*time.Millisecond, func() { close(fired) })
		require.EqualValues(t, 0, wakeups(tw), "brought forward where it sleeps: no wake-up to plan again")
		<-fired
		require.EqualValues(t, 1, wakeups(tw), "its deadline")
		time.Sleep(time.Hour)
		require.EqualValues(t, 1, wakeups(tw), "idle again")
	})
}

// The driver does not wake for a deadline whose timer was stopped before it
// planned its sleep: with three timers within the first tick and the middle
// one stopped while it sleeps for the first, it wakes at the first and the
// last (2), not at the stopped one's deadline between them.
func TestNoWakeupForAStaleDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := oneShard(t)
		var fired atomic.Int32
		tw.AfterFunc(300*time.Microsecond, func() { fired.Add(1) })
		stopped := tw.AfterFunc(400*time.Microsecond, func() { fired.Add(1) })
		tw.AfterFunc(600*time.Microsecond, func() { fired.Add(1) })
		synctest.Wait()
		require.True(t, stopped.Stop())
		time.Sleep(time.Millisecond)
		require.EqualValues(t, 2, fired.Load())
		require.EqualValues(t, 2, wakeups(tw), "300 µs and 600 µs; not 400 µs")
	})
}

// A Stop of the deadline the driver sleeps for moves its wake-up on to the
// next deadline, which still fires exactly on time; a Stop of the last one
// leaves it asleep until woken. (Deadlines within the wheel's current tick,
// in near: see TestEmptiedBucketWakesOnce for the others.)
func TestStopMovesTheWakeup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := oneShard(t)
		start := time.Now()
		var at atomic.Int64
		first := tw.AfterFunc(300*time.Microsecond, func() { t.Error("stopped, yet it ran") })
		tw.AfterFunc(600*time.Microsecond, firedAt(start, &at))
		synctest.Wait()
		require.True(t, first.Stop())
		time.Sleep(600 * time.Microsecond)
		synctest.Wait()
		require.EqualValues(t, 600*time.Microsecond, at.Load(), "on time, never early")
		require.EqualValues(t, 1, wakeups(tw), "600 µs only")

		last := tw.AfterFunc(300*time.Microsecond, func() { t.Error("stopped, yet it ran") })
		synctest.Wait()
		require.True(t, last.Stop())
		time.Sleep(time.Hour)
		require.EqualValues(t, 1, wakeups(tw), "nothing left: asleep until woken")
	})
}

// A timer armed and stopped again and again, as a request timeout of
// requests answered within a tick, wakes the driver not once: each Stop
// moves the wake-up on and each arm brings it forward where it sleeps. (With
// a token per arm that needs the driver sooner, moving the wake-up on would
// have cost one wake-up per arm.) A timer left armed then fires on time.
func TestStopAndRearmWakeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := oneShard(t)
		timeout := tw.AfterFunc(time.Hour, func() { t.Error("stopped, yet it ran") })
		timeout.Stop()
		for range 100 { // 500 µs: every deadline within the first tick
			timeout.Reset(300 * time.Microsecond)
			time.Sleep(5 * time.Microsecond) // answered within the timeout
			require.True(t, timeout.Stop())
		}
		require.EqualValues(t, 0, wakeups(tw), "none for 100 timeouts stopped in time")

		start := time.Now()
		var at atomic.Int64
		tw.AfterFunc(300*time.Microsecond, firedAt(start, &at))
		time.Sleep(time.Millisecond)
		require.EqualValues(t, 300*time.Microsecond, at.Load())
		require.EqualValues(t, 1, wakeups(tw))
	})
}

// A bucket that a Stop empties after the driver planned its sleep for it
// still wakes the driver, once, at the bucket's start: moving that wake-up
// would take the bucket out of the delay queue at every such Stop and offer
// it again at the next arm (shard.stop says why not). This pins the cost
// chosen; a change that moves it too must change this test.
func TestEmptiedBucketWakesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := oneShard(t)
		timeout := tw.AfterFunc(1500*time.Microsecond, func() { t.Error("stopped, yet it ran") })
		synctest.Wait() // the driver sleeps until its bucket, at 1 ms
		require.True(t, timeout.Stop())
		time.Sleep(time.Hour)
		require.EqualValues(t, 1, wakeups(tw), "at 1 ms, for a bucket emptied since")
	})
}

// A timer armed to fire before the driver would look brings its sleep
// forward: it fires exactly at its deadline, and the later one at its own,
// one wake-up each.
func TestArmSoonerBringsTheSleepForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := oneShard(t)
		start := time.Now()
		var early, late atomic.Int64
		tw.AfterFunc(time.Second, firedAt(start, &late))
		synctest.Wait()
		tw.AfterFunc(300*time.Microsecond, firedAt(start, &early))
		time.Sleep(2 * time.Second)
		require.EqualValues(t, 300*time.Microsecond, early.Load())
		require.EqualValues(t, time.Second, late.Load())
		require.EqualValues(t, 2, wakeups(tw))
	})
}

// No wake-up is lost while the driver's sleep is brought forward, moved on
// and re-armed from many goroutines at once: four goroutines arm timers of 0
// to 3 ms at random and stop a third of them, and every timer that runs
// runs exactly at its deadline (in the bubble the driver wakes exactly when
// its timer says, so a wake-up planned too late shows as a late run).
func TestNoWakeupLostUnderChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New(timingwheel.WithShards(2))
		require.NoError(t, err)
		defer tw.Stop()
		start := time.Now()
		var ran, late atomic.Int64
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 51))
				for range 500 {
					d := time.Duration(rng.IntN(3000)) * time.Microsecond
					due := time.Since(start) + d
					timer := tw.AfterFunc(d, func() {
						ran.Add(1)
						if off := time.Since(start) - due; off != 0 {
							late.Add(1)
							t.Errorf("ran %v after its deadline", off)
						}
					})
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
					if rng.IntN(3) == 0 {
						timer.Stop()
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Second)
		require.Greater(t, ran.Load(), int64(1000), "most timers ran")
		require.Zero(t, late.Load())
	})
}
