package purgatory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// Wait returns how the wait ended, at the moment it ended, for each way a
// wait can end.
func TestWait(t *testing.T) {
	cases := map[string]struct {
		opts  []purgatory.Option
		setup func(p *purgatory.Purgatory[string]) // before the wait
		event func(p *purgatory.Purgatory[string], news *atomic.Bool, cancel func())
		want  purgatory.Outcome
		after time.Duration // from the start of the wait
	}{
		"ready at once": {
			event: nil, want: purgatory.Completed,
			setup: nil,
		},
		"news after 3 s": {
			event: func(p *purgatory.Purgatory[string], news *atomic.Bool, _ func()) {
				time.Sleep(3 * time.Second)
				news.Store(true)
				p.CheckAndComplete("job")
			},
			want: purgatory.Completed, after: 3 * time.Second,
		},
		"timeout": {
			want: purgatory.Expired, after: 10 * time.Second,
		},
		"client gone": {
			event: func(_ *purgatory.Purgatory[string], _ *atomic.Bool, cancel func()) {
				time.Sleep(2 * time.Second)
				cancel()
			},
			want: purgatory.ContextDone, after: 2 * time.Second,
		},
		"flushed": {
			event: func(p *purgatory.Purgatory[string], _ *atomic.Bool, _ func()) {
				time.Sleep(time.Second)
				p.ForceCompleteForKey("job")
			},
			want: purgatory.Forced, after: time.Second,
		},
		"closed": {
			event: func(p *purgatory.Purgatory[string], _ *atomic.Bool, _ func()) {
				time.Sleep(time.Second)
				p.Close()
			},
			want: purgatory.Closed, after: time.Second,
		},
		"over the bound": {
			opts: []purgatory.Option{purgatory.WithMaxDelayed(1)},
			setup: func(p *purgatory.Purgatory[string]) {
				p.TryCompleteElseWatch(testkit.NewOp(time.Hour), "other")
			},
			want: purgatory.Shed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPurgatory(t, tc.opts...)
				if tc.setup != nil {
					tc.setup(p)
				}
				before := p.Watched()
				var news atomic.Bool
				news.Store(name == "ready at once")
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.event != nil {
					go tc.event(p, &news, cancel)
				}
				begin := time.Now()
				got := p.Wait(ctx, 10*time.Second, news.Load, "job")
				require.Equal(t, tc.want, got)
				require.Equal(t, tc.after, time.Since(begin))
				synctest.Wait()
				require.Equal(t, before, p.Watched(), "the wait left nothing watched")
			})
		})
	}
}

// Wait's misuses panic with a message that says what to do; a context with a
// deadline bounds a wait without a timeout.
func TestWaitMisuse(t *testing.T) {
	p := newPurgatory(t)
	ready := func() bool { return false }
	//lint:ignore SA1012 the misuse under test
	testkit.Misuse(t, "purgatory: ", "nil Context", func() { p.Wait(nil, time.Second, ready, "k") })
	testkit.Misuse(t, "purgatory: ", "nil ready func", func() { p.Wait(context.Background(), time.Second, nil, "k") })
	testkit.Misuse(t, "purgatory: Wait called with no keys", "no keys", func() { p.Wait(context.Background(), time.Second, ready) })
	testkit.Misuse(t, "purgatory: Wait called with no keys", "no keys", func() { p.Wait(context.Background(), 0, ready) })
	synctest.Test(t, func(t *testing.T) {
		q := newPurgatory(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		begin := time.Now()
		require.Equal(t, purgatory.ContextDone, q.Wait(ctx, purgatory.NoTimeout, ready, "k"))
		require.Equal(t, time.Second, time.Since(begin))
	})
}

// A zero wait is a poll: one try of ready on the calling goroutine, and the
// answer at once, with nothing watched or counted; so is a negative one.
// After Close it answers Closed without a try.
func TestZeroWaitPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		tries := 0
		has := false
		ready := func() bool { tries++; return has }
		done, cancel := context.WithCancel(context.Background())
		cancel()
		begin := time.Now()
		require.Equal(t, purgatory.Expired, p.Wait(context.Background(), 0, ready, "k"))
		require.Equal(t, purgatory.Expired, p.Wait(done, -time.Second, ready, "k"), "ctx is not consulted")
		has = true
		require.Equal(t, purgatory.Completed, p.Wait(context.Background(), 0, ready, "k"))
		require.Equal(t, 3, tries)
		require.Zero(t, time.Since(begin), "no waiting")
		require.Equal(t, purgatory.Stats{}, p.Stats(), "nothing watched or counted")
		p.Close()
		require.Equal(t, purgatory.Closed, p.Wait(context.Background(), 0, ready, "k"))
		require.Equal(t, 3, tries, "no try after Close")
	})
}
