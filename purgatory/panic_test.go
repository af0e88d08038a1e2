package purgatory_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// The trust issue's cases, each of which failed before the try bit and the
// panic handling: every test runs in a synctest bubble, so a wedged key shows
// up as a deadlock rather than a hang.

// panicky panics in the callbacks its fields name, then behaves as testOp.
type panicky struct {
	*testkit.Op
	panicOnTry      func(try int32) bool
	panicOnComplete bool
	panicOnExpire   bool
}

func newPanicky(timeout time.Duration) *panicky { return &panicky{Op: testkit.NewOp(timeout)} }

func (o *panicky) TryComplete() bool {
	ok := o.Op.TryComplete()
	if o.panicOnTry != nil && o.panicOnTry(o.Tries.Load()) {
		panic(fmt.Sprintf("TryComplete panicked on try %d", o.Tries.Load()))
	}
	return ok
}

func (o *panicky) OnComplete() {
	o.Op.OnComplete()
	if o.panicOnComplete {
		panic("OnComplete panicked")
	}
}

func (o *panicky) OnExpiration() {
	o.Op.OnExpiration()
	if o.panicOnExpire {
		panic("OnExpiration panicked")
	}
}

// Case 1: TryComplete panics inside CheckAndComplete. The panic reaches the
// caller, but nothing stays locked: the key's other operations were still
// tried, later checks return, and the operation completes or expires later.
func TestTryCompletePanicInCheckAndComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		bad := newPanicky(time.Second)
		bad.panicOnTry = func(try int32) bool { return try == 3 }
		good := testkit.NewOp(time.Second)
		require.False(t, p.TryCompleteElseWatch(bad, "k"))
		require.False(t, p.TryCompleteElseWatch(good, "k"))
		good.Ready.Store(true)

		require.Equal(t, "TryComplete panicked on try 3", testkit.Recovered(func() { p.CheckAndComplete("k") }))
		require.Equal(t, purgatory.Completed, good.Outcome(), "the operation after the panicking one was still tried")
		require.Equal(t, purgatory.Pending, bad.Outcome())
		require.Equal(t, purgatory.Stats{Watched: 1, Delayed: 1, Added: 2, Completed: 1}, p.Stats())

		require.Zero(t, p.CheckAndComplete("k"), "the key is not wedged")
		bad.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k"))
		require.Equal(t, purgatory.Completed, bad.Outcome())

		// And one that never becomes completable still expires.
		late := newPanicky(time.Second)
		late.panicOnTry = func(try int32) bool { return try == 3 }
		p.TryCompleteElseWatch(late, "k")
		require.NotNil(t, testkit.Recovered(func() { p.CheckAndComplete("k") }))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, late.Outcome())
		require.Equal(t, purgatory.Stats{Added: 3, Completed: 2, Expired: 1}, p.Stats())
	})
}

// A TryComplete that calls runtime.Goexit (t.FailNow inside one, say) ends
// the goroutine of the CheckAndComplete that tried it, and nothing more: the
// walk's deferred finish lets go of the try bit and tries the rest of the key
// while the goroutine unwinds, so the operation after it completes, and the
// one that called Goexit is tried again by the next walk of the key. Both are
// watched under two keys, so that the walk holds each one's try bit.
func TestGoexitInTryCompleteDuringCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		bad, good := testkit.NewOp(time.Second), testkit.NewOp(time.Second)
		bad.OnTry = func() {
			if bad.Tries.Load() == 3 { // after TryCompleteElseWatch's two
				runtime.Goexit()
			}
		}
		require.False(t, p.TryCompleteElseWatch(bad, "k", "other"))
		require.False(t, p.TryCompleteElseWatch(good, "k", "other"))
		good.Ready.Store(true)

		require.True(t, goexits(func() { p.CheckAndComplete("k") }), "Goexit ended the goroutine")
		require.Equal(t, purgatory.Completed, good.Outcome(), "the operation after it was tried as the goroutine unwound")
		require.Equal(t, purgatory.Pending, bad.Outcome())
		require.Equal(t, purgatory.Stats{Watched: 2, Delayed: 1, Added: 2, Completed: 1}, p.Stats())

		bad.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k"), "neither the key's walk nor the try bit was left held")
		require.Equal(t, purgatory.Completed, bad.Outcome())
		require.Zero(t, bad.Overlaps.Load())
	})
}

// An OnComplete that calls runtime.Goexit during a CheckAndComplete ends the
// walk's goroutine, and nothing more: the walk's deferred finish completes
// the operation after it as the goroutine unwinds, each OnComplete runs
// once, nothing is left watched, and the key serves the next operation.
func TestGoexitInOnCompleteDuringCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		bad := &goexiting{Op: testkit.NewOp(time.Second), inComplete: true}
		good := testkit.NewOp(time.Second)
		require.False(t, p.TryCompleteElseWatch(bad, "k", "other"))
		require.False(t, p.TryCompleteElseWatch(good, "k", "other"))
		bad.Ready.Store(true)
		good.Ready.Store(true)

		require.True(t, goexits(func() { p.CheckAndComplete("k") }), "Goexit ended the goroutine")
		require.Equal(t, purgatory.Completed, bad.Outcome())
		require.Equal(t, purgatory.Completed, good.Outcome(), "the operation after it was tried as the goroutine unwound")
		require.EqualValues(t, 1, bad.Completed.Load())
		require.EqualValues(t, 1, good.Completed.Load())
		require.Equal(t, purgatory.Stats{Added: 2, Completed: 2}, p.Stats())

		// Neither the key's walk nor a try bit was left held.
		requireServesNext(t, p, "k")
		time.Sleep(2 * time.Second) // past every timeout: none fires for an ended operation
		synctest.Wait()
		require.Equal(t, purgatory.Stats{Added: 3, Completed: 3}, p.Stats())
		require.Zero(t, bad.Expired.Load()+good.Expired.Load())
	})
}

// goexits runs f on a goroutine of its own and reports whether f ended that
// goroutine (runtime.Goexit) rather than returning.
func goexits(f func()) bool {
	ended := make(chan bool, 1)
	go func() {
		returned := false
		defer func() { ended <- !returned }()
		f()
		returned = true
	}()
	return <-ended
}

// requireServesNext requires key to serve one more operation: a fresh one is
// watched under it, and the key's next check completes it. After a Goexit in
// a callback it shows that the key's walk and the try bits were let go.
func requireServesNext(t *testing.T, p *purgatory.Purgatory[string], key string) {
	t.Helper()
	next := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatch(next, key))
	next.Ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete(key), "the key serves the next operation")
}

// Case 1, with a shared Locker: the panic releases it.
func TestTryCompletePanicReleasesLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		var lock sync.Mutex
		bad := newPanicky(time.Second)
		bad.Locker = &lock
		bad.panicOnTry = func(try int32) bool { return try == 3 }
		p.TryCompleteElseWatch(bad, "k")
		require.NotNil(t, testkit.Recovered(func() { p.CheckAndComplete("k") }))
		require.True(t, lock.TryLock(), "the Locker was released")
		lock.Unlock()
	})
}

// Case 2: TryComplete panics inside TryCompleteElseWatch, on the first try,
// on the second (after watching), or on a third that a CheckAndComplete asked
// for after the timeout was armed. Each time the call is undone: nothing
// watched, armed or counted, and the key is free; the operation may be
// passed again, a use of its own (and its Recycle does not run for the one
// withdrawn).
func TestTryCompletePanicUndoesTryCompleteElseWatch(t *testing.T) {
	for _, panicAt := range []int32{1, 2, 3} {
		t.Run(fmt.Sprint("try ", panicAt), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPurgatory(t)
				op := newPanicky(time.Second)
				op.Context = t.Context()
				op.panicOnTry = func(try int32) bool { return try == panicAt }
				op.OnTry = func() {
					if op.Tries.Load() == 2 {
						// A completion event on the key during the second
						// try: it asks for a third instead of waiting.
						assert.Zero(t, p.CheckAndComplete("k"))
					}
				}
				r := testkit.Recovered(func() { p.TryCompleteElseWatch(op, "k", "j") })
				require.Equal(t, fmt.Sprintf("TryComplete panicked on try %d", panicAt), r)
				require.Equal(t, purgatory.Stats{}, p.Stats(), "nothing counted or watched")
				require.Zero(t, p.TimingWheel().Len(), "no timeout left armed")
				require.Equal(t, purgatory.Pending, op.Outcome())

				op.Ready.Store(true)
				require.Zero(t, p.CheckAndComplete("k"), "the withdrawn operation is not watched")
				require.Zero(t, p.CheckAndComplete("j"))
				time.Sleep(2 * time.Second)
				synctest.Wait()
				require.Zero(t, op.Completed.Load(), "it never ends: it was never added")
				op.panicOnTry = nil
				require.True(t, p.TryCompleteElseWatch(op, "k"), "passed again, it completes at once (Ready)")
				require.EqualValues(t, 1, op.Completed.Load())
				require.Equal(t, purgatory.Stats{Added: 1, Completed: 1}, p.Stats())

				other := testkit.NewOp(time.Second)
				other.Ready.Store(true)
				require.True(t, p.TryCompleteElseWatch(other, "k"), "the key still works")
			})
		})
	}
}

// Case 3: callbacks panic while Close sweeps 1,000 pending operations. Close
// ends every one of them, reports each panic, stops its wheel and stays
// idempotent.
func TestClosePanicsAreReportedAndTheSweepFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reported atomic.Int64
		p, err := purgatory.New[int]("closing", purgatory.WithPanicHandler(func(r any) {
			assert.Equal(t, "OnComplete panicked", r)
			reported.Add(1)
		}))
		require.NoError(t, err)
		const n = 1000
		ops := make([]*panicky, n)
		for i := range ops {
			ops[i] = newPanicky(time.Hour)
			ops[i].panicOnComplete = i%3 == 0
			p.TryCompleteElseWatch(ops[i], i%10)
		}
		p.Close()
		for i, op := range ops {
			require.Equal(t, purgatory.Closed, op.Outcome(), "operation %d", i)
			require.EqualValues(t, 1, op.Completed.Load(), "operation %d", i)
			require.Zero(t, op.Expired.Load(), "operation %d: Close is not a timeout", i)
		}
		const panics = (n + 2) / 3
		require.EqualValues(t, panics, reported.Load())
		require.Equal(t, purgatory.Stats{Added: n, Closed: n, Panics: panics}, p.Stats())
		require.ErrorIs(t, p.TimingWheel().Start(), timingwheel.ErrStopped, "Close stopped the purgatory's own wheel")
		p.Close()
		require.EqualValues(t, panics, reported.Load(), "a second Close does nothing")
	})
}

// With no handler, a panic on a goroutine the library owns is logged once,
// with its stack; a panicking handler is logged rather than crashing.
func TestPanicsAreLoggedByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logged := logcapture.Capture(t)
		p := newPurgatory(t)
		op := newPanicky(time.Millisecond)
		op.panicOnExpire = true
		p.TryCompleteElseWatch(op, "k")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, op.Outcome())
		out := logged.String()
		require.Equal(t, 1, strings.Count(out, "OnExpiration panicked"), "logged once: %s", out)
		require.Contains(t, out, "purgatory: recovered a panic from")
		require.Contains(t, out, "(*panicky).OnExpiration", "with the stack of the panic")
		require.EqualValues(t, 1, p.Stats().Panics)
		require.Zero(t, p.TimingWheel().Stats().Panics, "reported by the purgatory, not again by the wheel")
	})
	synctest.Test(t, func(t *testing.T) {
		logged := logcapture.Capture(t)
		p := newPurgatory(t, purgatory.WithPanicHandler(func(any) { panic("the handler panicked") }))
		op := newPanicky(time.Hour)
		op.panicOnComplete = true
		p.TryCompleteElseWatch(op, "k")
		p.Close()
		out := logged.String()
		require.Contains(t, out, "the handler panicked")
		require.Contains(t, out, "OnComplete panicked")
		require.Equal(t, purgatory.Closed, op.Outcome())
	})
}

// A panic in OnComplete on the caller's goroutine reaches the caller after the
// operation has ended and been counted; OnExpiration still runs after a
// panicking OnComplete, and OnComplete after a panicking Observer.
func TestCallbackPanicsAfterTheOperationEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := newPanicky(time.Second)
		op.panicOnComplete = true
		p.TryCompleteElseWatch(op, "k")
		op.Ready.Store(true)
		require.Equal(t, "OnComplete panicked", testkit.Recovered(func() { p.CheckAndComplete("k") }))
		require.Equal(t, purgatory.Stats{Added: 1, Completed: 1}, p.Stats())

		forced := newPanicky(time.Second)
		forced.panicOnComplete = true
		p.TryCompleteElseWatch(forced, "k")
		require.Equal(t, "OnComplete panicked", testkit.Recovered(func() { purgatory.ForceComplete(forced) }))
		require.Equal(t, purgatory.Forced, forced.Outcome())
		require.Zero(t, p.Delayed())

		expiring := newPanicky(time.Millisecond)
		expiring.panicOnComplete = true
		p.TryCompleteElseWatch(expiring, "k")
		logcapture.Capture(t)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 1, expiring.Completed.Load())
		require.EqualValues(t, 1, expiring.Expired.Load(), "OnExpiration ran after the panicking OnComplete")
	})
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithObserver(panickingObserver{}))
		op := testkit.NewOp(time.Second)
		op.Ready.Store(true)
		require.Equal(t, "observer panicked", testkit.Recovered(func() { p.TryCompleteElseWatch(op, "k") }))
		require.EqualValues(t, 1, op.Completed.Load(), "OnComplete ran after the panicking Observer")
		require.Equal(t, purgatory.Stats{Added: 1, Completed: 1}, p.Stats())

		var cancelled []*testkit.Op
		for range 3 {
			c := testkit.NewOp(time.Second)
			p.TryCompleteElseWatch(c, "c")
			cancelled = append(cancelled, c)
		}
		require.Equal(t, "observer panicked", testkit.Recovered(func() { p.CancelForKey("c") }))
		for _, c := range cancelled {
			require.Equal(t, purgatory.Cancelled, c.Outcome(), "every operation was cancelled despite the panics")
		}
		require.Zero(t, p.Delayed())
	})
}

type panickingObserver struct{}

func (panickingObserver) OperationEnded(purgatory.Outcome, time.Duration) { panic("observer panicked") }

// goexiting is an operation whose OnExpiration or OnComplete, as told,
// counts its call and then calls runtime.Goexit.
type goexiting struct {
	*testkit.Op
	inExpiration, inComplete bool
}

func (o *goexiting) OnExpiration() {
	o.Op.OnExpiration()
	if o.inExpiration {
		runtime.Goexit()
	}
}

func (o *goexiting) OnComplete() {
	o.Op.OnComplete()
	if o.inComplete {
		runtime.Goexit()
	}
}

// An expired operation whose OnExpiration or OnComplete calls runtime.Goexit
// ends the wheel's worker it runs on, and nothing else: on a wheel of one
// worker, the operation after it on the key still expires, the key serves the
// next one, and the counts add up. (Before the wheel took an ended worker
// off, the one worker stayed counted, busy, and nothing expired again.)
func TestGoexitInAnExpiredOperationsCallbacks(t *testing.T) {
	for _, inExpiration := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(1)))
			p := newPurgatory(t, purgatory.WithTimingWheel(tw))
			bad := &goexiting{Op: testkit.NewOp(time.Second), inExpiration: inExpiration, inComplete: !inExpiration}
			later := testkit.NewOp(2 * time.Second)
			require.False(t, p.TryCompleteElseWatch(bad, "k"))
			require.False(t, p.TryCompleteElseWatch(later, "k"))
			time.Sleep(3 * time.Second)
			synctest.Wait()
			require.Equal(t, purgatory.Expired, bad.Outcome())
			require.EqualValues(t, 1, bad.Expired.Load(), "Goexit in OnExpiration: %v", inExpiration)
			require.Equal(t, purgatory.Expired, later.Outcome(), "Goexit in OnExpiration: %v", inExpiration)
			require.EqualValues(t, 1, later.Expired.Load())
			require.EqualValues(t, 1, later.Completed.Load())

			requireServesNext(t, p, "k")
			require.Equal(t, purgatory.Stats{Added: 3, Completed: 1, Expired: 2}, p.Stats())
		})
	}
}

// exitingWaiter is a hand-off waiter whose OnComplete calls runtime.Goexit.
type exitingWaiter struct{ *waiter }

func (w exitingWaiter) OnComplete() {
	w.waiter.OnComplete()
	runtime.Goexit()
}

// A hand-off whose winner's OnComplete calls runtime.Goexit ends the
// HandOff's goroutine after that winner has its item, and stops the hand-off
// there as a panic does: the next waiter keeps waiting, the next HandOff
// serves it, and the key's list is at rest.
func TestGoexitInOnCompleteDuringHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		l := &line{}
		first := exitingWaiter{newWaiter(l, 0, time.Hour)}
		second := newWaiter(l, 1, time.Hour)
		require.False(t, p.TryCompleteElseWatch(first, "q"))
		require.False(t, p.TryCompleteElseWatch(second, "q"))
		l.push(2)
		require.True(t, goexits(func() { p.HandOff("q") }), "Goexit ended the goroutine")
		require.Equal(t, purgatory.Completed, first.Outcome())
		require.Equal(t, purgatory.Pending, second.Outcome(), "the hand-off stopped at the Goexit")
		require.Equal(t, 1, p.HandOff("q"))
		require.Equal(t, purgatory.Completed, second.Outcome())
		require.Equal(t, []int{0, 1}, l.order())
		require.EqualValues(t, 1, first.Completed.Load())
		require.Equal(t, purgatory.Stats{Added: 2, Completed: 2}, p.Stats())
		require.NoError(t, p.ListsAtRest())
	})
}

// exitingRecycler is an operation whose Recycle calls runtime.Goexit.
type exitingRecycler struct{ *testkit.Op }

func (o exitingRecycler) Recycle() {
	o.Op.Recycle()
	runtime.Goexit()
}

// An operation whose context ends, and one whose Recycle calls
// runtime.Goexit, end their goroutines (the context's AfterFunc goroutine,
// the caller of CheckAndComplete) only after the operation has ended and
// been counted, exactly once; the key serves the next operation.
func TestGoexitInAContextsEndAndInRecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		ctx, cancel := context.WithCancel(context.Background())
		byCtx := &goexiting{Op: testkit.NewOp(time.Hour), inComplete: true}
		byCtx.Context = ctx
		require.False(t, p.TryCompleteElseWatch(byCtx, "k"))
		cancel()
		synctest.Wait()
		require.Equal(t, purgatory.ContextDone, byCtx.Outcome())
		require.EqualValues(t, 1, byCtx.Completed.Load())
		require.EqualValues(t, 1, byCtx.Recycled.Load(), "the context's hold on the use was let go")
		require.Equal(t, purgatory.Stats{Added: 1, ContextDone: 1}, p.Stats())

		recycled := exitingRecycler{testkit.NewOp(time.Hour)}
		require.False(t, p.TryCompleteElseWatch(recycled, "k"))
		recycled.Ready.Store(true)
		require.True(t, goexits(func() { p.CheckAndComplete("k") }), "Goexit ended the goroutine")
		require.Equal(t, purgatory.Completed, recycled.Outcome())
		require.EqualValues(t, 1, recycled.Completed.Load())
		require.EqualValues(t, 1, recycled.Recycled.Load())

		requireServesNext(t, p, "k")
		require.Equal(t, purgatory.Stats{Added: 3, Completed: 2, ContextDone: 1}, p.Stats())
		require.NoError(t, p.ListsAtRest())
	})
}

// A parked use whose OnExpiration or OnComplete, run by its own expiry in
// Wait, calls runtime.Goexit ends the waiter's goroutine after the use has
// ended, been counted and been recycled, exactly once, as a panic there does
// (TestParkedCallbackPanicReachesWait): no token is left behind, and the
// operation's next use waits for its own end.
func TestGoexitInAParkedWaitersCallbacks(t *testing.T) {
	for _, inExpiration := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			p := newPurgatory(t)
			op := &goexiting{Op: testkit.NewOp(time.Second), inExpiration: inExpiration, inComplete: !inExpiration}
			parked, _ := p.TryCompleteElsePark(op, "k")
			require.True(t, goexits(func() { parked.Wait() }), "Goexit ended the waiter")
			require.Equal(t, purgatory.Expired, op.Outcome(), "Goexit in OnExpiration: %v", inExpiration)
			require.EqualValues(t, 1, op.Completed.Load())
			require.EqualValues(t, 1, op.Expired.Load(), "OnExpiration runs after an OnComplete that ended its goroutine too")
			require.EqualValues(t, 1, op.Recycled.Load(), "the waiter's pin was let go")
			require.Equal(t, purgatory.Stats{Added: 1, Expired: 1}, p.Stats())

			op.inExpiration, op.inComplete = false, false // its owner's, between uses
			requireParksAgain(t, p, op, &op.Ready)
			require.Equal(t, purgatory.Stats{Added: 2, Completed: 1, Expired: 1}, p.Stats())
			require.NoError(t, p.ListsAtRest())
		})
	}
}

// exitingObserver is a purgatory Observer whose OperationEnded calls
// runtime.Goexit once armed.
type exitingObserver struct{ armed atomic.Bool }

func (o *exitingObserver) OperationEnded(purgatory.Outcome, time.Duration) {
	if o.armed.Swap(false) {
		runtime.Goexit()
	}
}

// An Observer whose OperationEnded calls runtime.Goexit ends the goroutine
// it was told on, and nothing else, as a panic there does: OnComplete still
// runs, once; a walk still tries the operations after it; on a wheel of one
// worker, the next timeout still fires; and the key serves the next
// operation.
func TestGoexitInThePurgatorysObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &exitingObserver{}
		tw := testkit.Wheel(t, timingwheel.WithExecutor(timingwheel.PoolExecutor(1)))
		p := newPurgatory(t, purgatory.WithTimingWheel(tw), purgatory.WithObserver(obs))

		first, second := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(first, "k"))
		require.False(t, p.TryCompleteElseWatch(second, "k"))
		first.Ready.Store(true)
		second.Ready.Store(true)
		obs.armed.Store(true)
		require.True(t, goexits(func() { p.CheckAndComplete("k") }), "Goexit ended the walk's goroutine")
		for _, op := range []*testkit.Op{first, second} {
			require.Equal(t, purgatory.Completed, op.Outcome())
			require.EqualValues(t, 1, op.Completed.Load(), "OnComplete runs after the Observer ended its goroutine")
		}

		expiring, later := testkit.NewOp(time.Second), testkit.NewOp(2*time.Second)
		require.False(t, p.TryCompleteElseWatch(expiring, "k"))
		require.False(t, p.TryCompleteElseWatch(later, "k"))
		obs.armed.Store(true)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for _, op := range []*testkit.Op{expiring, later} {
			require.Equal(t, purgatory.Expired, op.Outcome())
			require.EqualValues(t, 1, op.Completed.Load())
			require.EqualValues(t, 1, op.Expired.Load())
		}

		requireServesNext(t, p, "k")
		require.Equal(t, purgatory.Stats{Added: 5, Completed: 3, Expired: 2}, p.Stats())
		require.NoError(t, p.ListsAtRest())
	})
}
