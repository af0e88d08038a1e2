package purgatory_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// A CheckAndComplete of a key with parked waiters under it alone (bell.go)
// wakes them and counts none; each waiter tries its own operation, on its
// own goroutine, and they all complete. An operation watched beside them is
// tried, and counted, by the walk, and one parked under two keys too.
func TestBellWakesParkedWaitersToTryThemselves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		const waiters = 8
		ops := make([]*testkit.Op, waiters)
		var wg sync.WaitGroup
		for i := range ops {
			ops[i] = testkit.NewOp(time.Hour)
			wg.Go(func() {
				parked, done := p.TryCompleteElsePark(ops[i], "k")
				require.False(t, done)
				require.Equal(t, purgatory.Completed, parked.Wait())
			})
		}
		watched := testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(watched, "k"))
		twoKeys := testkit.NewOp(time.Hour)
		var twoOut purgatory.Outcome
		wg.Go(func() {
			parked, _ := p.TryCompleteElsePark(twoKeys, "k", "other")
			twoOut = parked.Wait()
		})
		synctest.Wait() // every waiter parked
		for _, op := range ops {
			op.Ready.Store(true)
		}
		watched.Ready.Store(true)
		twoKeys.Ready.Store(true)
		require.Equal(t, 2, p.CheckAndComplete("k"), "the watched one and the one under two keys; not the eight woken")
		wg.Wait()
		require.Equal(t, purgatory.Completed, twoOut)
		for i, op := range ops {
			require.Equal(t, int32(1), op.Completed.Load(), "waiter %d", i)
			require.Equal(t, int32(1), op.Recycled.Load(), "waiter %d", i)
			require.Zero(t, op.Overlaps.Load())
		}
		require.Zero(t, p.Watched())
	})
}

// The waiter's own try holds Op.Locker, as a walk's does.
func TestBellTryHoldsLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		var lock sync.Mutex
		op := testkit.NewOp(time.Hour)
		op.Locker = &lock
		var heldEveryTry atomic.Bool
		heldEveryTry.Store(true)
		op.OnTry = func() {
			if lock.TryLock() {
				heldEveryTry.Store(false)
				lock.Unlock()
			}
		}
		out := make(chan purgatory.Outcome, 1)
		go func() {
			parked, _ := p.TryCompleteElsePark(op, "k")
			out <- parked.Wait()
		}()
		synctest.Wait()
		op.Ready.Store(true)
		require.Zero(t, p.CheckAndComplete("k"))
		require.Equal(t, purgatory.Completed, <-out)
		require.Equal(t, int32(3), op.Tries.Load(), "the add's two tries and the waiter's")
		require.True(t, heldEveryTry.Load(), "a try ran without Op.Locker held")
	})
}

// A TryComplete that panics in the waiter's own try reaches the caller of
// Wait; the use is withdrawn, as TryCompleteElsePark's own is when its
// TryComplete panics: unwatched, uncounted, its Recycle not run, and the
// operation may be passed again.
func TestBellTryPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(time.Hour)
		panicked := make(chan any, 1)
		go func() {
			parked, _ := p.TryCompleteElsePark(op, "k")
			panicked <- testkit.Recovered(func() { parked.Wait() })
		}()
		synctest.Wait()
		op.PanicIn.Store(testkit.PanicTry)
		require.Zero(t, p.CheckAndComplete("k"))
		require.Equal(t, testkit.Injected, <-panicked)
		require.Equal(t, purgatory.Pending, op.Outcome(), "withdrawn: no outcome")
		require.Zero(t, op.Completed.Load())
		require.Zero(t, op.Recycled.Load())
		require.Zero(t, p.Watched())
		require.Zero(t, p.Delayed())

		op.Ready.Store(true) // passed again, it completes at once
		parked, done := p.TryCompleteElsePark(op, "k")
		require.True(t, done)
		require.Equal(t, purgatory.Completed, parked.Wait())
		require.Equal(t, int32(1), op.Recycled.Load())
	})
}

// HandOff still tries a key's parked waiters itself, in the order they
// parked, and stops at its first "no": first come, first served.
func TestBellHandOffKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		var items atomic.Int32
		var order []int
		var mu sync.Mutex
		const waiters = 5
		var wg sync.WaitGroup
		for i := range waiters {
			op := &takeOne{items: &items}
			op.Timeout = time.Hour
			op.took = func() { mu.Lock(); order = append(order, i); mu.Unlock() }
			wg.Go(func() {
				parked, _ := p.TryCompleteElsePark(op, "q")
				require.Equal(t, purgatory.Completed, parked.Wait())
			})
			synctest.Wait() // parked in turn
		}
		for range waiters {
			items.Add(1)
			require.Equal(t, 1, p.HandOff("q"))
		}
		wg.Wait()
		require.Equal(t, []int{0, 1, 2, 3, 4}, order)
	})
}

// takeOne takes an item if there is one, and says which waiter took it.
type takeOne struct {
	purgatory.Op
	items *atomic.Int32
	took  func()
}

func (o *takeOne) TryComplete() bool {
	for n := o.items.Load(); n > 0; n = o.items.Load() {
		if o.items.CompareAndSwap(n, n-1) {
			o.took()
			return true
		}
	}
	return false
}
func (*takeOne) OnComplete()   {}
func (*takeOne) OnExpiration() {}

// Under fire, in the bubble: waiters of a few keys loop Wait for their key's
// index to pass what they saw last, while Puts bump random keys and check
// them. Half the waiters have short timeouts, so that expiries race the
// rings; the other half wait with none, so a ring lost to any of them leaves
// it waiting once the Puts stop, until its context's deadline, which it
// reports. Once the Puts stop, each key is bumped and checked once more, and
// every waiter must see its key's last index.
func TestBellUnderFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		const keys, perKey, puts = 4, 16, 2000
		var idx, final [keys]atomic.Uint64
		var stopping atomic.Bool
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		var wg sync.WaitGroup
		for w := range keys * perKey {
			key := w % keys
			wait := purgatory.NoTimeout
			if w%2 == 0 {
				wait = time.Duration(1+w%3) * time.Millisecond
			}
			wg.Go(func() {
				var last uint64
				for !stopping.Load() || last < final[key].Load() {
					p.Wait(ctx, wait, func() bool { return idx[key].Load() > last }, fmt.Sprint(key))
					if ctx.Err() != nil {
						t.Errorf("waiter %d (wait %v) of key %d saw %d, not the last index %d: a change was lost", w, wait, key, last, final[key].Load())
						return
					}
					last = idx[key].Load()
				}
			})
		}
		for i := range puts {
			key := i * 7 % keys
			idx[key].Add(1)
			p.CheckAndComplete(fmt.Sprint(key))
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		for k := range keys {
			final[k].Store(idx[k].Load() + 1)
		}
		stopping.Store(true)
		for k := range keys {
			idx[k].Add(1)
			p.CheckAndComplete(fmt.Sprint(k))
		}
		wg.Wait()
		require.Zero(t, p.Watched())
	})
}
