package purgatory_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// A parked use ends by each path as a watched one does, Wait returns its
// outcome when it ends (in the bubble: exactly then), the callbacks ran once
// (none for Cancelled; OnExpiration only for Expired), and the operation has
// been recycled once Wait has returned.
func TestParkedOutcomes(t *testing.T) {
	cases := map[string]struct {
		opts    []purgatory.Option
		timeout time.Duration
		before  func(p *purgatory.Purgatory[string], op *testkit.Op) // before the add
		event   func(p *purgatory.Purgatory[string], op *testkit.Op, cancel func())
		want    purgatory.Outcome
		after   time.Duration
	}{
		"completed by an event": {
			event: func(p *purgatory.Purgatory[string], op *testkit.Op, _ func()) {
				time.Sleep(3 * time.Second)
				op.Ready.Store(true)
				p.CheckAndComplete("k")
			},
			want: purgatory.Completed, after: 3 * time.Second,
		},
		"handed off": {
			event: func(p *purgatory.Purgatory[string], op *testkit.Op, _ func()) {
				time.Sleep(time.Second)
				op.Ready.Store(true)
				p.HandOff("k")
			},
			want: purgatory.Completed, after: time.Second,
		},
		"timed out":         {want: purgatory.Expired, after: 10 * time.Second},
		"a deadline passed": {timeout: -time.Second, want: purgatory.Expired},
		"context done": {event: func(_ *purgatory.Purgatory[string], _ *testkit.Op, cancel func()) {
			time.Sleep(2 * time.Second)
			cancel()
		}, want: purgatory.ContextDone, after: 2 * time.Second},
		"no timeout, context": {timeout: purgatory.NoTimeout, event: func(_ *purgatory.Purgatory[string], _ *testkit.Op, cancel func()) { time.Sleep(time.Hour); cancel() }, want: purgatory.ContextDone, after: time.Hour},
		"forced": {event: func(_ *purgatory.Purgatory[string], op *testkit.Op, _ func()) {
			time.Sleep(time.Second)
			purgatory.ForceComplete(op)
		}, want: purgatory.Forced, after: time.Second},
		"forced by key": {event: func(p *purgatory.Purgatory[string], _ *testkit.Op, _ func()) {
			time.Sleep(time.Second)
			p.ForceCompleteForKey("k")
		}, want: purgatory.Forced, after: time.Second},
		"cancelled": {event: func(p *purgatory.Purgatory[string], _ *testkit.Op, _ func()) {
			time.Sleep(time.Second)
			p.CancelForKey("k")
		}, want: purgatory.Cancelled, after: time.Second},
		"closed":               {event: func(p *purgatory.Purgatory[string], _ *testkit.Op, _ func()) { time.Sleep(time.Second); p.Close() }, want: purgatory.Closed, after: time.Second},
		"completed at once":    {before: func(_ *purgatory.Purgatory[string], op *testkit.Op) { op.Ready.Store(true) }, want: purgatory.Completed},
		"forced before it was": {before: func(_ *purgatory.Purgatory[string], op *testkit.Op) { purgatory.ForceComplete(op) }, want: purgatory.Forced},
		"shed": {
			opts: []purgatory.Option{purgatory.WithMaxDelayed(1)},
			before: func(p *purgatory.Purgatory[string], _ *testkit.Op) {
				p.TryCompleteElseWatch(testkit.NewOp(time.Hour), "other")
			},
			want: purgatory.Shed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPurgatory(t, tc.opts...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				op := testkit.NewOp(10 * time.Second)
				if tc.timeout != 0 {
					op.Timeout = tc.timeout
				}
				op.Context = ctx
				if tc.before != nil {
					tc.before(p, op)
				}
				delayed := p.Delayed()
				start := time.Now()
				parked, done := p.TryCompleteElsePark(op, "k")
				require.Equal(t, name == "completed at once", done)
				if tc.event != nil {
					go tc.event(p, op, cancel)
				}
				require.Equal(t, tc.want, parked.Wait())
				require.Equal(t, tc.after, time.Since(start), "ended when its path ended it")
				synctest.Wait()
				calls := int32(1)
				if tc.want == purgatory.Cancelled {
					calls = 0
				}
				require.Equal(t, calls, op.Completed.Load(), "OnComplete once (none when cancelled)")
				if calls == 1 {
					require.Equal(t, tc.want, op.Seen, "OnComplete saw the outcome Wait returned")
				}
				expired := int32(0)
				if tc.want == purgatory.Expired {
					expired = 1
				}
				require.Equal(t, expired, op.Expired.Load(), "OnExpiration only after an expiry")
				recycled := int32(1)
				if name == "forced before it was" {
					recycled = 0 // never added: no use to recycle
				}
				require.Equal(t, recycled, op.Recycled.Load())
				require.Equal(t, delayed, p.Delayed(), "nothing left delayed")
			})
		})
	}
}

// A parked operation arms nothing on the purgatory's wheel and registers
// nothing on its context; one watched with TryCompleteElseWatch arms its
// timeout there.
func TestParkedArmsNothingOnTheWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		parked, _ := p.TryCompleteElsePark(testkit.NewOp(time.Hour), "k")
		require.Zero(t, p.TimingWheel().Len(), "parked: its waiter times it")
		p.TryCompleteElseWatch(testkit.NewOp(time.Hour), "k")
		require.Equal(t, 1, p.TimingWheel().Len())
		p.Close()
		require.Equal(t, purgatory.Closed, parked.Wait())
	})
}

// A callback that panics on the waiter (the waiter's own expiry ran it)
// reaches the caller of Wait; the use has ended all the same, counted and
// recycled, and the operation parks again with no token left behind.
func TestParkedCallbackPanicReachesWait(t *testing.T) {
	for _, in := range []int32{testkit.PanicComplete, testkit.PanicExpire} {
		synctest.Test(t, func(t *testing.T) {
			p := newPurgatory(t)
			op := testkit.NewOp(time.Second)
			op.PanicIn.Store(in)
			parked, _ := p.TryCompleteElsePark(op, "k")
			require.PanicsWithValue(t, testkit.Injected, func() { parked.Wait() })
			require.Equal(t, purgatory.Expired, op.Outcome())
			require.EqualValues(t, 1, op.Completed.Load())
			require.EqualValues(t, 1, op.Expired.Load(), "OnExpiration runs after a panicking OnComplete too")
			require.EqualValues(t, 1, op.Recycled.Load())
			require.EqualValues(t, 1, p.Stats().Expired)

			requireParksAgain(t, p, op, &op.Ready) // its next use
		})
	}
}

// requireParksAgain parks op's next use under "k", makes it ready 100 ms
// later (ready is op's) and completes it by a check, and requires that Wait
// returned just then: it waited for this use's own end, not for a token
// left by the last use.
func requireParksAgain(t *testing.T, p *purgatory.Purgatory[string], op purgatory.Operation, ready *atomic.Bool) {
	t.Helper()
	parked, _ := p.TryCompleteElsePark(op, "k")
	go func() {
		time.Sleep(100 * time.Millisecond)
		ready.Store(true)
		p.CheckAndComplete("k")
	}()
	start := time.Now()
	require.Equal(t, purgatory.Completed, parked.Wait())
	require.Equal(t, 100*time.Millisecond, time.Since(start), "waited for its own end, not a token of the last use")
}

// A try under way when the waiter's timeout fires still wins: the waiter's
// claim is left for it, and Wait returns Completed once it has passed.
func TestParkedTryUnderWayWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(time.Second)
		parked, _ := p.TryCompleteElsePark(op, "k")
		release := make(chan struct{})
		op.OnTry = func() { <-release }
		go p.CheckAndComplete("k") // its try waits for release
		returned := make(chan purgatory.Outcome, 1)
		go func() { returned <- parked.Wait() }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Empty(t, returned, "the timeout has passed, but a try is under way")
		op.Ready.Store(true)
		close(release)
		require.Equal(t, purgatory.Completed, <-returned)
		require.Zero(t, op.Expired.Load())
	})
}

// A parked use's timeout counts from the start of Wait, as a time.Timer's
// in a select counts from where it is armed: side by side, both fire
// Timeout after Wait begins, however long after the add that is.
func TestParkedTimeoutCountsFromWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(time.Second)
		parked, _ := p.TryCompleteElsePark(op, "k")
		time.Sleep(5 * time.Second) // the caller dawdles before it waits
		start := time.Now()
		stdlib := time.NewTimer(op.Timeout)
		require.Equal(t, purgatory.Expired, parked.Wait())
		require.Equal(t, time.Second, time.Since(start))
		select {
		case <-stdlib.C:
		default:
			t.Fatal("Wait returned Expired before a time.Timer armed as it began fired")
		}
	})
}

// Reuse: the timeout of a use that ended ends nothing of the next use, and a
// Parked of a use that is over panics when waited for again.
func TestParkedReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(10 * time.Second)
		first, _ := p.TryCompleteElsePark(op, "k")
		go func() {
			time.Sleep(time.Second)
			op.Ready.Store(true)
			p.CheckAndComplete("k")
		}()
		require.Equal(t, purgatory.Completed, first.Wait())
		testkit.Misuse(t, "purgatory: ", "Wait called twice", func() { first.Wait() })

		op.Ready.Store(false)
		op.Timeout = time.Hour
		second, _ := p.TryCompleteElsePark(op, "k")
		testkit.Misuse(t, "purgatory: ", "after its operation was passed again", func() { first.Wait() })
		returned := make(chan purgatory.Outcome, 1)
		go func() { returned <- second.Wait() }()
		time.Sleep(20 * time.Second) // past the first use's deadline
		synctest.Wait()
		require.Empty(t, returned, "the first use's timeout ended nothing of the second")
		require.Zero(t, op.Expired.Load())
		purgatory.ForceComplete(op)
		require.Equal(t, purgatory.Forced, <-returned)
		require.EqualValues(t, 2, op.Recycled.Load())
	})
}

// Every path at once, against parked uses of reused operations: waiters park
// with timeouts of 0 to 2 ms and contexts cancelled at random, while a
// goroutine readies and walks the keys (CheckAndComplete and HandOff), and
// another forces operations and cancels keys. Each use
// ends once: Wait returns the outcome its OnComplete saw (none when
// cancelled), OnExpiration runs only after an expiry, no two tries overlap,
// and every use is recycled before its operation is used again.
func TestParkedUnderFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithShards(2))
		keys := []string{"a", "b"}
		var live sync.Map // the operations parked now, for the forcer
		var stop atomic.Bool
		var bg sync.WaitGroup
		bg.Go(func() { // events
			rng := rand.New(rand.NewPCG(1, 51))
			for !stop.Load() {
				live.Range(func(k, _ any) bool {
					if rng.IntN(4) == 0 {
						k.(*testkit.Op).Ready.Store(true)
					}
					return true
				})
				if rng.IntN(2) == 0 {
					p.CheckAndComplete(keys[rng.IntN(2)])
				} else {
					p.HandOff(keys[rng.IntN(2)])
				}
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			}
		})
		bg.Go(func() { // ForceComplete and CancelForKey
			rng := rand.New(rand.NewPCG(2, 51))
			for !stop.Load() {
				live.Range(func(k, _ any) bool {
					if rng.IntN(8) == 0 {
						purgatory.ForceComplete(k.(*testkit.Op))
					}
					return true
				})
				if rng.IntN(10) == 0 {
					p.CancelForKey(keys[rng.IntN(2)])
				}
				time.Sleep(time.Duration(rng.IntN(700)) * time.Microsecond)
			}
		})
		var outcomes [purgatory.Shed + 1]atomic.Int64
		var waiters sync.WaitGroup
		for w := range 4 {
			waiters.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(10+w), 51))
				op := testkit.NewOp(time.Second)
				for range 300 {
					resetCounts(op)
					op.Timeout = time.Duration(rng.IntN(2000)) * time.Microsecond
					if op.Timeout == 0 {
						op.Timeout = purgatory.NoTimeout
					}
					ctx, cancel := context.WithCancel(context.Background())
					op.Context = ctx
					if rng.IntN(5) == 0 {
						time.AfterFunc(time.Duration(rng.IntN(1000))*time.Microsecond, cancel)
					}
					parked, _ := p.TryCompleteElsePark(op, keys[rng.IntN(2)])
					live.Store(op, nil)
					out := parked.Wait()
					live.Delete(op)
					cancel()
					require.EqualValues(t, 1, op.Recycled.Load(), "recycled once Wait has returned (park.go, rule 6)")
					outcomes[out].Add(1)
					if out == purgatory.Cancelled {
						require.Zero(t, op.Completed.Load())
					} else {
						require.EqualValues(t, 1, op.Completed.Load(), "OnComplete once per use")
						require.Equal(t, out, op.Seen)
					}
					require.Equal(t, out == purgatory.Expired, op.Expired.Load() == 1)
					require.Zero(t, op.Overlaps.Load())
					require.EqualValues(t, 1, op.Recycled.Load(), "recycled before it is used again")
				}
			})
		}
		waiters.Wait()
		stop.Store(true)
		bg.Wait()
		for _, o := range []purgatory.Outcome{purgatory.Completed, purgatory.Expired, purgatory.Forced, purgatory.Cancelled, purgatory.ContextDone} {
			t.Logf("%v: %d", o, outcomes[o].Load())
			require.Positive(t, outcomes[o].Load(), "some uses ended %v", o)
		}
		require.Zero(t, p.Delayed())
	})
}

// resetCounts starts a testkit.Op's counts afresh for its next use; the
// purgatory resets its own part of the operation.
func resetCounts(op *testkit.Op) {
	op.Ready.Store(false)
	op.Completed.Store(0)
	op.Expired.Store(0)
	op.Recycled.Store(0)
	op.Seen = purgatory.Pending
}

// The watchdog names the Parked.Wait a parked expiry's stuck callback holds
// up.
func TestParkedStuckCallbackIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := logcapture.Logger()
		p := newPurgatory(t, purgatory.WithLogger(logger))
		release := make(chan struct{})
		op := &stuckOnComplete{Op: testkit.NewOp(time.Second), release: release}
		parked, _ := p.TryCompleteElsePark(op, "k")
		go parked.Wait()
		time.Sleep(time.Second + purgatory.StuckAfter + 2*time.Second)
		synctest.Wait()
		require.Contains(t, logs.String(), "stuckOnComplete (expired) for ")
		require.Contains(t, logs.String(), "the Parked.Wait that timed it out")
		close(release)
	})
}

type stuckOnComplete struct {
	*testkit.Op
	release chan struct{}
}

func (s *stuckOnComplete) OnComplete() { <-s.release }
