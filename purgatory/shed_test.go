package purgatory_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// With WithMaxDelayed(2), a third operation that cannot complete at once is
// not parked: it ends Shed there and then, OnComplete runs once and
// OnExpiration never; one that can complete still does; and the operations
// already waiting expire on time, after which new ones are parked again.
func TestMaxDelayedSheds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithMaxDelayed(2))
		waiting := []*testkit.Op{testkit.NewOp(time.Second), testkit.NewOp(time.Second)}
		for _, op := range waiting {
			require.False(t, p.TryCompleteElseWatch(op, "k"))
		}

		shed := testkit.NewOp(time.Second)
		require.False(t, p.TryCompleteElseWatch(shed, "k"))
		require.Equal(t, purgatory.Shed, shed.Outcome())
		require.EqualValues(t, 1, shed.Completed.Load(), "OnComplete ran, on the caller's goroutine")
		require.Equal(t, purgatory.Shed, shed.Seen)
		require.EqualValues(t, 1, shed.Tries.Load(), "tried once, then not watched")
		require.Equal(t, 2, p.Watched())
		require.Equal(t, 2, p.Delayed())

		ready := testkit.NewOp(time.Second)
		ready.Ready.Store(true)
		require.True(t, p.TryCompleteElseWatch(ready, "k"), "an operation that can complete at once is not shed")

		start := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		for _, op := range waiting {
			require.Equal(t, purgatory.Expired, op.Outcome(), "the waiting operations expire at their timeout")
		}
		require.Equal(t, time.Second, time.Since(start))
		require.Equal(t, 0, p.Delayed())

		again := testkit.NewOp(time.Second)
		require.False(t, p.TryCompleteElseWatch(again, "k"))
		require.Equal(t, purgatory.Pending, again.Outcome(), "under the bound again: parked")
		again.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k"))

		ops := append(waiting, shed, ready, again)
		s := p.Stats()
		require.Equal(t, testkit.Tally(t, ops), purgatory.Stats{Completed: s.Completed, Expired: s.Expired, Shed: s.Shed})
		require.EqualValues(t, 1, s.Shed)
		require.EqualValues(t, 5, s.Added)
		synctest.Wait()
		require.EqualValues(t, 0, shed.Expired.Load(), "a shed operation never expires")
	})
}

func TestMaxDelayedNegativeIsAnError(t *testing.T) {
	_, err := purgatory.New[string]("x", purgatory.WithMaxDelayed(-1))
	require.True(t, errors.Is(err, purgatory.ErrInvalidOption), "%v", err)
	require.ErrorContains(t, err, "WithMaxDelayed(-1)")
}
