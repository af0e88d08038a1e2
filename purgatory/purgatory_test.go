package purgatory_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/crashout"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

func TestMain(m *testing.M) {
	crashout.Keep() // a fuzz worker's crash, kept where .ci/run can print it
	goleak.VerifyTestMain(m)
}

func newPurgatory(t *testing.T, opts ...purgatory.Option) *purgatory.Purgatory[string] {
	t.Helper()
	p, err := purgatory.New[string]("test", opts...)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// Kafka's testDelayedOperationLock: with a Locker set, TryComplete runs with
// that lock held, in TryCompleteElseWatch and in CheckAndComplete. (The Op's own
// mutex is private; TestNoConcurrentTryComplete shows it excludes.)
func TestTryCompleteRunsUnderSharedLock(t *testing.T) {
	p := newPurgatory(t)
	var lock sync.Mutex
	op := testkit.NewOp(time.Hour)
	op.Locker = &lock
	op.OnTry = func() { assert.False(t, lock.TryLock(), "the shared lock is held during TryComplete") }
	require.False(t, p.TryCompleteElseWatch(op, "k"))
	require.EqualValues(t, 2, op.Tries.Load(), "tried before and after watching")
	op.Ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("k"))
	require.EqualValues(t, 3, op.Tries.Load())
	require.True(t, lock.TryLock(), "the lock is released afterwards")
	lock.Unlock()
}

// TryComplete is never entered twice at once for one operation: a try asked
// for while another runs is made by the goroutine already trying, so calls are
// coalesced rather than queued, and none waits for another.
func TestNoConcurrentTryComplete(t *testing.T) {
	p := newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	var inside atomic.Int32
	op.OnTry = func() {
		assert.EqualValues(t, 1, inside.Add(1), "two TryComplete calls overlapped")
		time.Sleep(10 * time.Microsecond)
		inside.Add(-1)
	}
	require.False(t, p.TryCompleteElseWatch(op, "a", "b", "c"))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				p.CheckAndComplete([]string{"a", "b", "c"}[i%3])
			}
		})
	}
	wg.Wait()
	tries := op.Tries.Load()
	require.GreaterOrEqual(t, tries, int32(3), "every CheckAndComplete tried or had a try made for it")
	require.LessOrEqual(t, tries, int32(2+8*50))
	op.Ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("a"), "no try is left running: this one runs and completes")
}

// Kafka's safeTryCompleteOrElse contract: if the first try fails and the second
// (after watching) succeeds, the call completes the operation and leaves
// nothing watched or timed.
func TestSecondTryCompletes(t *testing.T) {
	tw := testkit.Wheel(t)
	p := newPurgatory(t, purgatory.WithTimingWheel(tw))
	op := testkit.NewOp(time.Hour)
	op.OnTry = func() {
		if op.Tries.Load() == 2 {
			op.Ready.Store(true) // a completion event raced the watch
		}
	}
	require.True(t, p.TryCompleteElseWatch(op, "k1", "k2"))
	require.EqualValues(t, 1, op.Completed.Load())
	require.Equal(t, purgatory.Completed, op.Seen)
	require.Zero(t, p.Watched())
	require.Zero(t, p.Delayed())
	require.Zero(t, tw.Len(), "no timeout was started")
}

func TestFirstTryCompletes(t *testing.T) {
	p := newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	op.Ready.Store(true)
	require.True(t, p.TryCompleteElseWatch(op, "k"))
	require.EqualValues(t, 1, op.Tries.Load())
	require.EqualValues(t, 1, op.Completed.Load())
	require.Zero(t, p.Watched())
	require.Equal(t, purgatory.Stats{Added: 1, Completed: 1}, p.Stats())
}

// Kafka's testRequestSatisfaction.
func TestRequestSatisfaction(t *testing.T) {
	p := newPurgatory(t)
	r1, r2 := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
	require.Zero(t, p.CheckAndComplete("test1"), "nothing watched yet")
	require.False(t, p.TryCompleteElseWatch(r1, "test1"))
	require.Zero(t, p.CheckAndComplete("test1"), "r1 is not completable")
	require.False(t, p.TryCompleteElseWatch(r2, "test2"))
	require.Zero(t, p.CheckAndComplete("test2"), "r2 is not completable")
	r1.Ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("test1"))
	require.Zero(t, p.CheckAndComplete("test1"), "r1 is already completed")
	r2.Ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("test2"))
	require.Zero(t, p.CheckAndComplete("test2"))
	require.EqualValues(t, 1, r1.Completed.Load())
	require.EqualValues(t, 1, r2.Completed.Load())
	require.Zero(t, r1.Expired.Load()+r2.Expired.Load())
}

// Kafka's testRequestExpiry: a 20 ms operation expires, running OnComplete and
// then OnExpiration; a 200 s one does not.
func TestRequestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		short, long := testkit.NewOp(20*time.Millisecond), testkit.NewOp(200*time.Second)
		begin := time.Now()
		require.False(t, p.TryCompleteElseWatch(short, "test1"))
		require.False(t, p.TryCompleteElseWatch(long, "test2"))
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 1, short.Completed.Load())
		require.EqualValues(t, 1, short.Expired.Load())
		require.Equal(t, purgatory.Expired, short.Seen)
		require.GreaterOrEqual(t, time.Since(begin), 20*time.Millisecond)
		require.Zero(t, long.Completed.Load())
		require.Equal(t, 1, p.Delayed())
		require.Equal(t, 1, p.Watched(), "the expired operation left its watch list")
		require.Zero(t, p.CheckAndComplete("test1"))
	})
}

// Kafka's testRequestPurge. Kafka's Watched only drops as keys are checked or
// purged; here each operation stops counting as it ends, and the lists
// reclaim its places without a purge (ListsAtRest checks they do).
func TestPurge(t *testing.T) {
	p := newPurgatory(t)
	r1, r2, r3 := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
	p.TryCompleteElseWatch(r1, "k1")
	p.TryCompleteElseWatch(r2, "k1", "k2")
	p.TryCompleteElseWatch(r3, "k1", "k2", "k3")
	require.Equal(t, 3, p.Delayed())
	require.Equal(t, 6, p.Watched())

	require.True(t, purgatory.ForceComplete(r1))
	require.Equal(t, 2, p.Delayed())
	require.Equal(t, 5, p.Watched())
	require.NoError(t, p.ListsAtRest())
	require.True(t, purgatory.ForceComplete(r2))
	require.Equal(t, 1, p.Delayed())
	require.Equal(t, 3, p.Watched())
	require.True(t, purgatory.ForceComplete(r3))
	require.Zero(t, p.Delayed())
	require.Zero(t, p.Watched())
	require.NoError(t, p.ListsAtRest())
	require.Zero(t, p.CheckAndComplete("k1"))
	require.EqualValues(t, 3, p.Stats().Forced)
}

// Watch-list memory follows live operations, whatever path completes them.
func TestWatchListsDoNotGrow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		for round := range 100 {
			ops := make([]*testkit.Op, 100)
			for i := range ops {
				ops[i] = testkit.NewOp(time.Duration(i%3+1) * time.Millisecond)
				p.TryCompleteElseWatch(ops[i], "hot", "other")
			}
			for i, op := range ops {
				if i%3 == 0 {
					purgatory.ForceComplete(op)
				}
			}
			time.Sleep(5 * time.Millisecond) // the rest expire
			synctest.Wait()
			require.Zero(t, p.Watched(), "round %d", round)
			require.Zero(t, p.Delayed())
			require.NoError(t, p.ListsAtRest(), "round %d", round)
		}
	})
}

func TestCancelForKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		p := newPurgatory(t, purgatory.WithTimingWheel(tw))
		a, b, c := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
		p.TryCompleteElseWatch(a, "k1")
		p.TryCompleteElseWatch(b, "k1", "k2")
		p.TryCompleteElseWatch(c, "k2")
		require.Equal(t, 3, tw.Len())

		got := p.CancelForKey("k1")
		require.ElementsMatch(t, []purgatory.Operation{a, b}, got)
		require.Equal(t, 1, tw.Len(), "cancelled operations' timeouts stopped")
		require.Equal(t, 1, p.Watched(), "b also left k2's list")
		require.Equal(t, 1, p.Delayed())
		require.Equal(t, purgatory.Cancelled, a.Outcome())
		require.Zero(t, a.Completed.Load()+b.Completed.Load(), "OnComplete does not run")
		require.False(t, purgatory.ForceComplete(a), "a cancelled operation cannot complete")

		require.Empty(t, p.CancelForKey("unknown"))
		require.Empty(t, p.CancelForKey("k1"), "nothing left under k1")
		c.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k2"))
		require.Equal(t, purgatory.Stats{Added: 3, Completed: 1, Cancelled: 2}, p.Stats())
	})
}

// Kafka's testTryCompleteWithMultipleThreads: 20 goroutines call
// CheckAndComplete at random moments on 100 operations that only become
// completable just before the very last call on their key. Tries are
// coalesced (a call during another's try asks it to try again), so what must
// hold is that this last event is never lost: every operation completes, once.
func TestNoLostWakeUp(t *testing.T) {
	p := newPurgatory(t)
	const goroutines, ops = 20, 100
	all := make([]*testkit.Op, ops)
	keys := make([]string, ops)
	calls := make([]atomic.Int32, ops)
	for i := range all {
		all[i], keys[i] = testkit.NewOp(time.Hour), string(rune('A'+i%26))+string(rune('a'+i/26))
		require.False(t, p.TryCompleteElseWatch(all[i], keys[i]))
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range keys {
				if (i+g)%7 == 0 {
					time.Sleep(time.Duration((i*g)%50) * time.Microsecond)
				}
				k := (i + g) % ops
				if calls[k].Add(1) == goroutines {
					all[k].Ready.Store(true) // the event, just before the last call
				}
				p.CheckAndComplete(keys[k])
			}
		})
	}
	wg.Wait()
	for i, op := range all {
		require.EqualValues(t, 1, op.Completed.Load(), "operation %d", i)
	}
	require.Zero(t, p.Delayed())
	require.Zero(t, p.Watched())
}

func TestContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		ctx, cancel := context.WithCancel(t.Context())
		op := testkit.NewOp(time.Hour)
		op.Context = ctx
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		cancel()
		synctest.Wait()
		require.Equal(t, purgatory.ContextDone, op.Seen)
		require.EqualValues(t, 1, op.Completed.Load())
		require.Zero(t, op.Expired.Load())
		require.Equal(t, purgatory.Stats{Added: 1, ContextDone: 1}, p.Stats())

		// A context that outlives its operation is detached from it.
		ctx2, cancel2 := context.WithCancel(t.Context())
		defer cancel2()
		op2 := testkit.NewOp(time.Millisecond)
		op2.Context = ctx2
		p.TryCompleteElseWatch(op2, "k")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, op2.Seen)
		cancel2()
		synctest.Wait()
		require.EqualValues(t, 1, op2.Completed.Load())
	})
}

func TestContextAlreadyDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		op := testkit.NewOp(time.Hour)
		op.Context = ctx
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		synctest.Wait()
		require.Equal(t, purgatory.ContextDone, op.Outcome())
	})
}

func TestForceComplete(t *testing.T) {
	p := newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatch(op, "k"))
	require.True(t, purgatory.ForceComplete(op))
	require.False(t, purgatory.ForceComplete(op), "only one ForceComplete wins")
	require.EqualValues(t, 1, op.Completed.Load())
	require.Equal(t, purgatory.Forced, op.Seen)

	early := testkit.NewOp(time.Hour)
	require.True(t, purgatory.ForceComplete(early), "an operation can be completed before it is added")
	require.False(t, p.TryCompleteElseWatch(early, "k"), "a completed operation is not watched")
	require.Zero(t, p.Watched())
	require.EqualValues(t, 1, p.Stats().Added, "nor counted")
}

func TestForceCompleteFromTryComplete(t *testing.T) {
	p := newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	op.OnTry = func() {
		if op.Tries.Load() == 3 {
			purgatory.ForceComplete(op) // Kafka's style: complete from inside
		}
	}
	require.False(t, p.TryCompleteElseWatch(op, "k"))
	require.Zero(t, p.CheckAndComplete("k"), "ForceComplete won, not TryComplete")
	require.Equal(t, purgatory.Forced, op.Seen)
	require.EqualValues(t, 1, op.Completed.Load())
}

func TestDuplicateKeysWatchedOnce(t *testing.T) {
	p := newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	p.TryCompleteElseWatch(op, "k", "k", "j", "k")
	require.Equal(t, 2, p.Watched())
	op.Ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("k"))
	require.Zero(t, p.Watched())
}

// A negative timeout is a deadline already passed: the operation expires as
// soon as the wheel runs.
func TestNegativeTimeoutExpiresSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(-time.Nanosecond)
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		synctest.Wait()
		require.Equal(t, purgatory.Expired, op.Outcome())
	})
}

func TestMisuse(t *testing.T) {
	p := newPurgatory(t)
	require.PanicsWithValue(t, "purgatory: TryCompleteElseWatch called with no keys; an operation must be watched under at least one",
		func() { p.TryCompleteElseWatch(testkit.NewOp(time.Hour)) })
	require.PanicsWithValue(t, "purgatory: TryCompleteElseWatch called with a nil Operation",
		func() { p.TryCompleteElseWatch(nil, "k") })
	require.PanicsWithValue(t, "purgatory: ForceComplete called with a nil Operation",
		func() { purgatory.ForceComplete(nil) })
	op := testkit.NewOp(time.Hour)
	p.TryCompleteElseWatch(op, "k")
	require.PanicsWithValue(t, "purgatory: operation passed to TryCompleteElseWatch while it is in use (pending from an earlier call, or passed by another goroutine at the same moment); pass it again only once it has ended and its callbacks have returned",
		func() { p.TryCompleteElseWatch(op, "k") })

	_, err := purgatory.New[string]("bad", purgatory.WithShards(0))
	require.ErrorIs(t, err, purgatory.ErrInvalidOption)
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := purgatory.New[string]("closing")
		require.NoError(t, err)
		ops := []*testkit.Op{testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)}
		p.TryCompleteElseWatch(ops[0], "a")
		p.TryCompleteElseWatch(ops[1], "a", "b")
		p.TryCompleteElseWatch(ops[2], "c")

		p.Close()
		for i, op := range ops {
			require.Equal(t, purgatory.Closed, op.Seen, "op %d", i)
			require.EqualValues(t, 1, op.Completed.Load())
			require.Zero(t, op.Expired.Load(), "closing is not a timeout: no OnExpiration")
		}
		require.Zero(t, p.Delayed())
		require.Zero(t, p.Watched())

		late := testkit.NewOp(time.Hour)
		late.Ready.Store(false)
		require.False(t, p.TryCompleteElseWatch(late, "a"))
		require.Equal(t, purgatory.Closed, late.Seen, "an operation added after Close ends at once")
		require.Zero(t, p.CheckAndComplete("a"))
		require.Empty(t, p.CancelForKey("a"))
		p.Close() // idempotent
		st := p.Stats()
		require.Equal(t, purgatory.Stats{Added: 4, Closed: 4}, st)
	})
}

func TestSharedWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		p1 := newPurgatory(t, purgatory.WithTimingWheel(tw))
		p2, err := purgatory.New[int]("ints", purgatory.WithTimingWheel(tw))
		require.NoError(t, err)
		defer p2.Close()
		a, b := testkit.NewOp(time.Second), testkit.NewOp(2*time.Second)
		p1.TryCompleteElseWatch(a, "k")
		p2.TryCompleteElseWatch(b, 7)
		require.Equal(t, 2, tw.Len())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, a.Outcome())
		require.Equal(t, purgatory.Expired, b.Outcome())
		require.Equal(t, "ints", p2.Name())
	})
}

func TestExpirationPanicIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got atomic.Value
		p := newPurgatory(t, purgatory.WithPanicHandler(func(v any) { got.Store(v) }))
		bad := &panicOp{Op: testkit.NewOp(time.Millisecond)}
		good := testkit.NewOp(2 * time.Millisecond)
		p.TryCompleteElseWatch(bad, "k")
		p.TryCompleteElseWatch(good, "k")
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, "expiration failed", got.Load())
		require.Equal(t, purgatory.Expired, good.Outcome(), "the other operation still expired")
		require.EqualValues(t, 2, p.Stats().Expired)
	})
}

type panicOp struct{ *testkit.Op }

func (o *panicOp) OnExpiration() { panic("expiration failed") }

func TestStatsEnded(t *testing.T) {
	s := purgatory.Stats{Completed: 1, Forced: 2, Expired: 3, ContextDone: 4, Cancelled: 5}
	for o, want := range map[purgatory.Outcome]int64{
		purgatory.Pending: 0, purgatory.Completed: 1, purgatory.Forced: 2, purgatory.Expired: 3,
		purgatory.ContextDone: 4, purgatory.Cancelled: 5, purgatory.Cancelled + 1: 0,
	} {
		require.Equal(t, want, s.Ended(o), "Ended(%v)", o)
	}
}

// ForceCompleteForKey ends every operation under the key through OnComplete
// with Outcome Forced, counted as Forced; operations under other keys only
// are untouched, and one watched under both leaves the other key's list.
func TestForceCompleteForKey(t *testing.T) {
	p := newPurgatory(t)
	a, b, both, other := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatch(a, "tenant"))
	require.False(t, p.TryCompleteElseWatch(b, "tenant"))
	require.False(t, p.TryCompleteElseWatch(both, "tenant", "x"))
	require.False(t, p.TryCompleteElseWatch(other, "x"))
	require.True(t, purgatory.ForceComplete(b), "one ended before the flush does not count in it")

	require.Equal(t, 2, p.ForceCompleteForKey("tenant"))
	for _, op := range []*testkit.Op{a, b, both} {
		require.EqualValues(t, 1, op.Completed.Load())
		require.Equal(t, purgatory.Forced, op.Seen)
	}
	require.Zero(t, other.Completed.Load())
	require.Equal(t, 1, p.Watched(), "only other, under x")
	s := p.Stats()
	require.EqualValues(t, 3, s.Forced)
	require.Equal(t, 1, s.Delayed)
	require.Zero(t, p.ForceCompleteForKey("tenant"), "nothing left under it")
	require.Zero(t, p.ForceCompleteForKey("nobody"))
}

// A flush racing walks, adds and forces of the same key ends every operation
// exactly once (run with -race).
func TestForceCompleteForKeyRacesWalks(t *testing.T) {
	p := newPurgatory(t)
	const n = 2000
	ops := make([]*testkit.Op, n)
	var wg sync.WaitGroup
	var flushed, checked atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < n; i += 4 {
				op := testkit.NewOp(time.Hour)
				op.Ready.Store(i%3 == 0)
				ops[i] = op
				p.TryCompleteElseWatch(op, "k")
				switch i % 4 {
				case 0:
					checked.Add(int64(p.CheckAndComplete("k")))
				case 1:
					flushed.Add(int64(p.ForceCompleteForKey("k")))
				}
			}
		})
	}
	wg.Wait()
	flushed.Add(int64(p.ForceCompleteForKey("k")))
	s := testkit.Tally(t, ops)
	require.EqualValues(t, s.Forced, flushed.Load())
	got := p.Stats()
	require.Equal(t, s.Forced, got.Forced)
	require.Equal(t, s.Completed, got.Completed)
	require.Zero(t, got.Delayed)
	require.EqualValues(t, n, s.Completed+s.Forced)
}
