package stuck_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/stuck"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// owner is what a Sampler watches: a number of callbacks running, and the
// times its look ran.
type owner struct {
	running atomic.Int32
	start   time.Time

	mu     sync.Mutex
	looks  []time.Duration // since start, one per look
	during func()          // called inside the next look, once
}

func (o *owner) look(now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.looks = append(o.looks, now.Sub(o.start))
	if f := o.during; f != nil {
		o.during = nil
		f()
		return false // as if the look had read the count before f ran
	}
	return o.running.Load() > 0
}

// seen returns the looks so far, once the Sampler's goroutine is idle.
func (o *owner) seen() []time.Duration {
	synctest.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.looks)
}

func (o *owner) idle() bool { return o.running.Load() == 0 }

// A Sampler looks once every Every from the first Wake while anything runs,
// never before a Wake, and stops by itself once nothing does; Wakes while it
// is on change nothing. The bubble ends only if it stops: no timer is left
// re-arming.
func TestSamplesWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &owner{start: time.Now()}
		s := stuck.New(o.look, o.idle)
		time.Sleep(time.Hour)
		require.Empty(t, o.seen(), "never woken, never looks")

		o.running.Add(1)
		s.Wake()
		time.Sleep(500 * time.Millisecond)
		s.Wake() // on already
		time.Sleep(3 * time.Second)
		require.Equal(t, []time.Duration{time.Hour + time.Second, time.Hour + 2*time.Second, time.Hour + 3*time.Second}, o.seen())

		o.running.Add(-1)
		time.Sleep(time.Hour)
		require.Len(t, o.seen(), 4, "the look that found nothing running was the last")

		o.running.Add(1)
		s.Wake()
		time.Sleep(stuck.Every)
		require.Len(t, o.seen(), 5, "woken again")
		o.running.Add(-1)
	})
}

// The stop protocol: a callback that starts and calls Wake while a look that
// found nothing is still under way (Wake finds the Sampler on and arms
// nothing) is still sampled, because the Sampler asks idle once more after
// it turns itself off. Without that second question this callback would run
// unsampled for ever.
func TestWakeDuringTheLastLookIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &owner{start: time.Now()}
		s := stuck.New(o.look, o.idle)
		o.running.Add(1)
		s.Wake()
		o.mu.Lock()
		o.during = func() {
			s.Wake() // the Sampler is on: this arms nothing
		}
		o.mu.Unlock()
		time.Sleep(stuck.Every) // the first look: it says nothing runs
		require.Len(t, o.seen(), 1)
		time.Sleep(10 * stuck.Every)
		require.Len(t, o.seen(), 11, "sampled on, every second")
		o.running.Add(-1)
	})
}

// MayLog allows one line, then none until LogEvery has passed since it.
func TestMayLogOncePerLogEvery(t *testing.T) {
	s := stuck.New(func(time.Time) bool { return false }, func() bool { return true })
	t0 := time.Now()
	require.True(t, s.MayLog(t0))
	require.False(t, s.MayLog(t0))
	require.False(t, s.MayLog(t0.Add(stuck.LogEvery-time.Nanosecond)))
	require.True(t, s.MayLog(t0.Add(stuck.LogEvery)))
	require.False(t, s.MayLog(t0.Add(stuck.LogEvery+time.Second)))
}
