package purgatory_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/race"
	"github.com/purgatory-go/purgatory/purgatory"
)

// waker ends each wait a test starts: once the purgatory watches one, it
// makes the wait's news true and checks the key, allocating nothing itself.
type waker struct {
	p     *purgatory.Purgatory[string]
	news  atomic.Bool
	level atomic.Int64 // a WaitAt's level, which the waker advances the key to; 0: a Wait, checked
	kick  chan struct{}
	done  chan struct{}
}

func startWaker(t *testing.T, p *purgatory.Purgatory[string]) *waker {
	w := &waker{p: p, kick: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for range w.kick {
			for p.Watched() == 0 {
				runtime.Gosched()
			}
			w.news.Store(true)
			// An Advance tries a wait at a level itself; a CheckAndComplete
			// rings a one-key wait's bell, and its waiter tries it, so the
			// walk counts it not.
			if level := w.level.Load(); level != 0 {
				if p.Advance("k", level) != 1 {
					panic("the wait at a level was not completed by Advance")
				}
			} else if n := p.CheckAndComplete("k"); n != 0 {
				panic("CheckAndComplete tried a one-key wait itself, rather than ring its bell")
			}
		}
	}()
	t.Cleanup(func() { close(w.kick); <-w.done })
	return w
}

// Wait allocates nothing once its purgatory's pool holds a waiter for it,
// whether ready passes at once, an event wakes it, or it times out: the
// waiter, its parking, the parking's channel and its timer are kept. The one
// allocation is the key's bell's: a CheckAndComplete that wakes a one-key
// Wait closes the channel its waiters listen to, and the next listener makes
// a new one (bell.go), one per ring however many wait, as Consul's
// close-and-replace makes one per change.
func TestWaitAllocatesNothing(t *testing.T) {
	skipUnderRace(t)
	p := newPurgatory(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := startWaker(t, p)
	ready := func() bool { return w.news.Load() }
	cases := map[string]struct {
		timeout time.Duration
		before  func()
		want    purgatory.Outcome
	}{
		"ready at once": {time.Hour, func() { w.news.Store(true) }, purgatory.Completed},
		"woken":         {time.Hour, func() { w.news.Store(false); w.kick <- struct{}{} }, purgatory.Completed},
		"timed out":     {time.Microsecond, func() { w.news.Store(false) }, purgatory.Expired},
	}
	for name, tc := range cases {
		for _, at := range []bool{false, true} {
			if at {
				name = "WaitAt, " + name
			}
			t.Run(name, func(t *testing.T) {
				defer w.level.Store(0)
				allocs := testing.AllocsPerRun(200, func() {
					tc.before()
					var out purgatory.Outcome
					if at { // a level above the last, which the waker's Advance reaches
						level := w.level.Add(1)
						out = p.WaitAt(ctx, tc.timeout, ready, purgatory.At("k", level))
					} else {
						out = p.Wait(ctx, tc.timeout, ready, "k")
					}
					if out != tc.want {
						t.Fatalf("returned %v, want %v", out, tc.want)
					}
				})
				want := 0.0
				if name == "woken" { // the key's new channel (above)
					want = 1
				}
				require.Equal(t, want, allocs)
				require.Zero(t, p.Watched())
			})
		}
	}
}

// skipUnderRace skips a test of a pool's allocations under -race, where
// sync.Pool drops a quarter of what is put in it; CI runs these tests
// without -race too.
func skipUnderRace(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops a share of its items under -race; run without -race (CI does: .ci/run, allocations)")
	}
}

// acquireSlot is a pool's acquire of one connection, reused once its Wait returns.
type acquireSlot struct {
	purgatory.Op
	idle *atomic.Int32 // connections idle; the pool's mutex orders the tries
	got  bool
}

func (s *acquireSlot) TryComplete() bool {
	if s.idle.Load() == 0 {
		return false
	}
	s.idle.Add(-1)
	s.got = true
	return true
}
func (*acquireSlot) OnComplete()   {}
func (*acquireSlot) OnExpiration() {}

// A parked pool's acquire+release allocates nothing with its operations
// pooled and put back once Wait returns (docs/api.md's recipe): with a
// connection idle, and with the acquire waiting for a release.
func TestParkedPoolAllocatesNothing(t *testing.T) {
	skipUnderRace(t)
	p := newPurgatory(t)
	var idle atomic.Int32
	var free sync.Pool
	released := make(chan struct{})
	go func() { // releases a connection once an acquire waits for it
		for range released {
			for p.Watched() == 0 {
				runtime.Gosched()
			}
			idle.Add(1)
			p.HandOff("conns")
		}
	}()
	defer close(released)
	acquire := func() bool {
		s, _ := free.Get().(*acquireSlot)
		if s == nil {
			s = &acquireSlot{idle: &idle}
		}
		s.Timeout, s.got = time.Hour, false
		parked, _ := p.TryCompleteElsePark(s, "conns")
		parked.Wait()
		got := s.got
		free.Put(s) // the use is over once Wait has returned
		return got
	}
	t.Run("idle", func(t *testing.T) {
		idle.Store(1)
		allocs := testing.AllocsPerRun(500, func() {
			if !acquire() {
				t.Fatal("no connection")
			}
			idle.Add(1)
			p.HandOff("conns")
		})
		require.Zero(t, allocs)
	})
	t.Run("waited", func(t *testing.T) {
		idle.Store(0)
		allocs := testing.AllocsPerRun(500, func() {
			released <- struct{}{}
			if !acquire() {
				t.Fatal("no connection")
			}
		})
		require.Zero(t, allocs)
	})
}
