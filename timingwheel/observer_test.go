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
