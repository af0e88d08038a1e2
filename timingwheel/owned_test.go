package timingwheel_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// session is a caller's record that owns its Timer and is its Handler.
type session struct {
	idle  timingwheel.Timer
	fired atomic.Int32
	at    atomic.Int64 // when it fired, in fake time
}

func (s *session) Fire() {
	s.fired.Add(1)
	s.at.Store(time.Now().UnixNano())
}

// A Timer the caller owns behaves as one AfterFunc returns, case by case next
// to time.Timer: armed by Reset, never early, Stop and Reset report whether
// it was pending, and it can be armed again after it fired.
func TestOwnedTimerAsTimeTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		var s session
		tw.InitTimer(&s.idle, &s)
		var stdFired atomic.Int32
		std := time.AfterFunc(time.Hour, func() { stdFired.Add(1) })
		std.Stop()

		require.Equal(t, std.Stop(), s.idle.Stop(), "Stop before it is armed")
		require.Equal(t, std.Reset(10*time.Millisecond), s.idle.Reset(10*time.Millisecond), "Reset of an idle timer")
		start := time.Now()
		time.Sleep(10*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.Zero(t, s.fired.Load(), "not a nanosecond early")
		require.Equal(t, stdFired.Load(), s.fired.Load())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.EqualValues(t, 1, s.fired.Load())
		require.Equal(t, stdFired.Load(), s.fired.Load())
		require.Equal(t, start.Add(10*time.Millisecond).UnixNano(), s.at.Load(), "at its deadline")

		require.Equal(t, std.Stop(), s.idle.Stop(), "Stop after it fired")
		require.Equal(t, std.Reset(time.Second), s.idle.Reset(time.Second), "Reset after it fired")
		require.Equal(t, std.Reset(2*time.Second), s.idle.Reset(2*time.Second), "Reset while pending")
		require.Equal(t, std.Stop(), s.idle.Stop(), "Stop while pending")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.EqualValues(t, 1, s.fired.Load(), "a stopped timer does not fire")
		require.Equal(t, stdFired.Load(), s.fired.Load())
	})
}

// Arming and stopping a Timer the caller owns allocates nothing.
func TestOwnedTimerAllocatesNothing(t *testing.T) {
	tw := testkit.Wheel(t)
	var s session
	tw.InitTimer(&s.idle, &s)
	allocs := testing.AllocsPerRun(1000, func() {
		s.idle.Reset(time.Hour)
		s.idle.Stop()
	})
	require.Zero(t, allocs)
}

func TestInitTimerMisuse(t *testing.T) {
	tw := testkit.Wheel(t)
	var s session
	testkit.Misuse(t, "timingwheel: ", "nil Timer or Handler", func() { tw.InitTimer(nil, &s) })
	testkit.Misuse(t, "timingwheel: ", "nil Timer or Handler", func() { tw.InitTimer(&s.idle, nil) })
	tw.InitTimer(&s.idle, &s)
	testkit.Misuse(t, "timingwheel: ", "already initialised", func() { tw.InitTimer(&s.idle, &s) })
	testkit.Misuse(t, "timingwheel: ", "already initialised", func() { tw.InitTimer(tw.AfterFunc(time.Hour, func() {}), &s) })
	var zero timingwheel.Timer
	require.False(t, zero.Stop(), "a zero Timer is never pending")
	require.False(t, zero.Reset(time.Second))
	require.False(t, zero.Rejected())
}

// A Timer is no bigger than one allocation of 48 bytes (64 while its place in
// a bucket was two pointers to its neighbours): the layout the garbage
// collector scans.
func TestTimerSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(timingwheel.Timer{}), uintptr(48))
}

// A callback that blocks, alone in its batch, holds up neither the timers
// due with it nor later ones: the driver and the pool go on.
func TestBlockedCallbackHoldsUpNothingLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		release := make(chan struct{})
		var later, together atomic.Int32
		tw.AfterFunc(time.Millisecond, func() { <-release })
		tw.AfterFunc(time.Millisecond, func() { together.Add(1) })
		for i := range 5 {
			tw.AfterFunc(time.Duration(i+2)*time.Millisecond, func() { later.Add(1) })
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 1, together.Load())
		require.EqualValues(t, 5, later.Load(), "the wheel went on while a callback blocked")
		close(release)
	})
}

// With a bound of one worker, timers due in later batches wait for a blocked
// callback, and never two callbacks run at once.
func TestBoundAcrossBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(1)))
		release := make(chan struct{})
		var running, most, ran atomic.Int32
		enter := func() {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}
		tw.AfterFunc(time.Millisecond, func() { enter(); <-release; running.Add(-1); ran.Add(1) })
		for i := range 3 {
			tw.AfterFunc(time.Duration(i+2)*time.Millisecond, func() { enter(); running.Add(-1); ran.Add(1) })
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Zero(t, ran.Load(), "one worker, and it is blocked")
		close(release)
		synctest.Wait()
		require.EqualValues(t, 4, ran.Load())
		require.EqualValues(t, 1, most.Load())
	})
}
