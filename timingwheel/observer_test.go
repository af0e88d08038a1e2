package timingwheel_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

type lateness struct {
	mu sync.Mutex
	ls []time.Duration
}

func (l *lateness) TimerFired(d time.Duration) {
	l.mu.Lock()
	l.ls = append(l.ls, d)
	l.mu.Unlock()
}

func TestObserverSeesLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &lateness{}
		tw := testkit.Wheel(t, timingwheel.WithObserver(obs))
		tw.AfterFunc(2*time.Millisecond, func() {})                      // on a tick: on time
		tw.AfterFunc(3*time.Millisecond+250*time.Microsecond, func() {}) // between ticks: not rounded
		stopped := tw.AfterFunc(time.Millisecond, func() {})
		stopped.Stop()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, []time.Duration{0, 0}, obs.ls, "on time in fake time, and stopped timers are not reported")
	})
}

// Lateness is the time from a timer's deadline to its hand-off: a manual
// wheel advanced 200 ms after a 10 ms deadline reports 190 ms (issue 31: it
// reported 0, the time left before the deadline, for every due timer).
func TestObserverSeesLatenessOfAManualClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &lateness{}
		tw, err := timingwheel.New(timingwheel.WithManualClock(), timingwheel.WithObserver(obs))
		require.NoError(t, err)
		defer tw.Stop()
		tw.AfterFunc(10*time.Millisecond, func() {})
		time.Sleep(200 * time.Millisecond)
		require.True(t, tw.AdvanceClock(0))
		require.Equal(t, []time.Duration{190 * time.Millisecond}, obs.ls)
	})
}

// On a running wheel, a timer held up behind a slow inline callback reports
// how long it was held: the first callback runs at 1 ms and takes 99 ms, so
// the timer due at 2 ms is handed over at 100 ms, 98 ms late.
func TestObserverSeesLatenessBehindASlowCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &lateness{}
		tw := testkit.Wheel(t, timingwheel.WithObserver(obs), timingwheel.WithExecutor(timingwheel.InlineExecutor()))
		tw.AfterFunc(time.Millisecond, func() { time.Sleep(99 * time.Millisecond) })
		tw.AfterFunc(2*time.Millisecond, func() {})
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []time.Duration{0, 98 * time.Millisecond}, obs.ls)
	})
}
