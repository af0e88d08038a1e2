package timingwheel_test

import (
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
