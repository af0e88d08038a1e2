package purgatory_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// park fills p with n operations on key k, each with the given timeout.
func park(t *testing.T, p *purgatory.Purgatory[string], n int, timeout time.Duration) []*testkit.Op {
	t.Helper()
	ops := make([]*testkit.Op, n)
	for i := range ops {
		ops[i] = testkit.NewOp(timeout)
		require.False(t, p.TryCompleteElseWatch(ops[i], "k"))
	}
	return ops
}

// admitting calls Admit on a goroutine of its own and reports, through the
// returned functions, whether it has returned and with what.
func admitting(ctx context.Context, p *purgatory.Purgatory[string]) (done func() bool, result func() error) {
	var ret atomic.Bool
	var err error
	go func() {
		err = p.Admit(ctx)
		ret.Store(true)
	}()
	return ret.Load, func() error { return err }
}

// Below the bound, or with none, Admit returns at once; at the bound it waits
// until an operation ends, by any path, and the one added then is parked,
// not shed.
func TestAdmitWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unbounded := newPurgatory(t)
		park(t, unbounded, 10, time.Hour)
		require.NoError(t, unbounded.Admit(context.Background()))

		p := newPurgatory(t, purgatory.WithMaxDelayed(2))
		require.NoError(t, p.Admit(context.Background()), "empty")
		ops := park(t, p, 1, time.Hour)
		require.NoError(t, p.Admit(context.Background()), "below the bound")
		ops = append(ops, park(t, p, 1, time.Hour)...)

		done, result := admitting(context.Background(), p)
		synctest.Wait()
		require.False(t, done(), "at the bound, Admit waits")

		require.True(t, purgatory.ForceComplete(ops[0]))
		synctest.Wait()
		require.True(t, done(), "an operation ended: there is room")
		require.NoError(t, result())

		next := testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(next, "k"))
		require.Equal(t, purgatory.Pending, next.Outcome(), "admitted, so parked rather than shed")
		require.Zero(t, p.Stats().Shed)
	})
}

// An expiry makes room too, at the operation's timeout and not before.
func TestAdmitWakesOnExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithMaxDelayed(3))
		park(t, p, 3, time.Second)
		start := time.Now()
		require.NoError(t, p.Admit(context.Background()))
		require.Equal(t, time.Second, time.Since(start))
		require.Less(t, p.Delayed(), 3, "one expired at least")
		synctest.Wait()
		require.Zero(t, p.Delayed())
	})
}

// Admit gives up when its context is done, and leaves what is parked alone.
func TestAdmitContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithMaxDelayed(1))
		ops := park(t, p, 1, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		require.ErrorIs(t, p.Admit(ctx), context.DeadlineExceeded)
		require.Equal(t, 100*time.Millisecond, time.Since(start))
		require.Equal(t, purgatory.Pending, ops[0].Outcome())

		cancelled, cancel2 := context.WithCancel(context.Background())
		cancel2()
		require.ErrorIs(t, p.Admit(cancelled), context.Canceled)
	})
}

// Close wakes every waiter, which returns nil, and Admit after Close returns
// at once; TryCompleteElseWatch then ends the operation Closed. One end wakes
// every waiter, and each looks at the count again.
func TestAdmitClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithMaxDelayed(1))
		park(t, p, 1, time.Hour)
		var wg sync.WaitGroup
		var returned atomic.Int32
		for range 10 {
			wg.Go(func() {
				require.NoError(t, p.Admit(context.Background()))
				returned.Add(1)
			})
		}
		synctest.Wait()
		require.Zero(t, returned.Load())
		p.Close()
		wg.Wait()
		require.EqualValues(t, 10, returned.Load())
		require.NoError(t, p.Admit(context.Background()))
		op := testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		require.Equal(t, purgatory.Closed, op.Outcome())
	})
}

// Close wakes Admit itself, not only through the operations its sweep ends:
// an operation whose TryComplete blocks inside TryCompleteElseWatch is in no
// list for the sweep to end, yet counts against the bound.
func TestAdmitCloseWhileTryCompleteBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithMaxDelayed(1))
		release := make(chan struct{})
		blocked := testkit.NewOp(time.Hour)
		blocked.OnTry = func() { <-release }
		var added sync.WaitGroup
		added.Go(func() { p.TryCompleteElseWatch(blocked, "k") })
		synctest.Wait()
		done, result := admitting(context.Background(), p)
		synctest.Wait()
		require.False(t, done(), "Admit returned while the purgatory was full")
		p.Close()
		synctest.Wait()
		require.True(t, done(), "Close did not wake Admit")
		require.NoError(t, result())
		close(release)
		added.Wait()
		require.Equal(t, purgatory.Closed, blocked.Outcome())
	})
}

// A shared wheel stopped first closes the purgatory (AfterStop), and that
// wakes Admit's waiters as Close does: the shutdown order does not matter.
func TestAdmitWheelStoppedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New()
		require.NoError(t, err)
		p := newPurgatory(t, purgatory.WithTimingWheel(tw), purgatory.WithMaxDelayed(1))
		parked := park(t, p, 1, time.Hour)
		done, result := admitting(context.Background(), p)
		synctest.Wait()
		require.False(t, done(), "Admit returned while the purgatory was full")
		tw.Stop()
		synctest.Wait()
		require.True(t, done(), "stopping the wheel did not wake Admit")
		require.NoError(t, result())
		require.Equal(t, purgatory.Closed, parked[0].Outcome())
	})
}

func TestAdmitNilContextPanics(t *testing.T) {
	p := newPurgatory(t)
	require.PanicsWithValue(t, "purgatory: Admit called with a nil Context; pass context.Background() to wait without a deadline",
		func() {
			//lint:ignore SA1012 the misuse under test
			p.Admit(nil)
		})
}
