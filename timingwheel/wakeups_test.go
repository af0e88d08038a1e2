package timingwheel_test

import (
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

// Stats.Wakeups counts the driver's wake-ups: none while idle, one for the
// token of a timer armed to fire before the driver would look, one at its
// deadline, and none after.
func TestWakeupsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New(timingwheel.WithShards(1))
		require.NoError(t, err)
		defer tw.Stop()
		time.Sleep(time.Second)
		require.EqualValues(t, 0, wakeups(tw), "an idle wheel sleeps")

		fired := make(chan struct{})
		tw.AfterFunc(10*time.Millisecond, func() { close(fired) })
		require.EqualValues(t, 1, wakeups(tw), "the token: the timer is due before the driver would look")
		<-fired
		require.EqualValues(t, 2, wakeups(tw), "its deadline")
		time.Sleep(time.Hour)
		require.EqualValues(t, 2, wakeups(tw), "idle again")
	})
}

// The driver does not wake for a deadline whose timer was stopped before it
// planned its sleep: with three timers within the first tick and the middle
// one stopped, it wakes for the token, the first and the last (3), not for
// the stopped one's deadline between them.
func TestNoWakeupForAStaleDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New(timingwheel.WithShards(1))
		require.NoError(t, err)
		defer tw.Stop()
		time.Sleep(time.Second) // the driver asleep, so the first arm's token counts
		var fired atomic.Int32
		tw.AfterFunc(300*time.Microsecond, func() { fired.Add(1) })
		stopped := tw.AfterFunc(400*time.Microsecond, func() { fired.Add(1) })
		tw.AfterFunc(600*time.Microsecond, func() { fired.Add(1) })
		require.EqualValues(t, 1, wakeups(tw), "the token")
		require.True(t, stopped.Stop())
		time.Sleep(time.Millisecond)
		require.EqualValues(t, 2, fired.Load())
		require.EqualValues(t, 3, wakeups(tw), "the token, 300 µs and 600 µs; not 400 µs")
	})
}
