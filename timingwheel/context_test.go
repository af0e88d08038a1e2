package timingwheel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// WithTimeout's context behaves as context.WithTimeout's: done exactly at its
// deadline (not a nanosecond early) with DeadlineExceeded as Err and Cause.
func TestWithTimeoutExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := start(t)
		begin := time.Now()
		ctx, cancel := tw.WithTimeout(context.Background(), time.Second)
		defer cancel()
		want, cancelWant := context.WithTimeout(context.Background(), time.Second) // the standard library's, to compare
		defer cancelWant()
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		require.Equal(t, begin.Add(time.Second), dl)

		time.Sleep(time.Second - 1)
		synctest.Wait()
		require.NoError(t, ctx.Err(), "not done before its deadline")
		time.Sleep(time.Nanosecond) // the deadline itself
		synctest.Wait()
		<-ctx.Done()
		<-want.Done()
		require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		require.Equal(t, want.Err(), ctx.Err())
		require.Equal(t, context.Cause(want), context.Cause(ctx))
		require.Zero(t, tw.Len())
	})
}

// Cancelling first stops the wheel's timer and reports Canceled; a parent's
// end, and an earlier parent deadline, carry over as with the standard library.
func TestWithTimeoutCancelAndParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := start(t)
		ctx, cancel := tw.WithTimeout(context.Background(), time.Hour)
		require.Equal(t, 1, tw.Len())
		cancel()
		require.Zero(t, tw.Len(), "cancel stops the timer at once")
		require.ErrorIs(t, ctx.Err(), context.Canceled)
		require.ErrorIs(t, context.Cause(ctx), context.Canceled)
		cancel() // idempotent

		boom := errors.New("shutting down")
		parent, stop := context.WithCancelCause(context.Background())
		child, cancelChild := tw.WithTimeout(parent, time.Hour)
		defer cancelChild()
		stop(boom)
		<-child.Done()
		require.ErrorIs(t, child.Err(), context.Canceled)
		require.ErrorIs(t, context.Cause(child), boom)

		soon, cancelSoon := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancelSoon()
		late, cancelLate := tw.WithTimeout(soon, time.Hour)
		defer cancelLate()
		dl, _ := late.Deadline()
		want, _ := soon.Deadline()
		require.Equal(t, want, dl, "the parent's earlier deadline wins")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.ErrorIs(t, late.Err(), context.DeadlineExceeded)

		past, cancelPast := tw.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancelPast()
		require.ErrorIs(t, past.Err(), context.DeadlineExceeded, "a deadline already passed is done at once")
	})
}
