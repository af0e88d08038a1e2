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

// A use parked at a level is tried on its key's account only once Advance
// reaches the level, ends when a try passes there, and its Wait returns at
// that moment; CheckAndComplete tries it whatever the level.
func TestParkAtALevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		var level atomic.Int64
		var tried []string
		op := &levelled{Op: testkit.NewOp(time.Hour), name: "at 10", need: 10, level: &level, tried: &tried}
		parked, done := p.TryCompleteElseParkAt(op, purgatory.At("k", 10))
		require.False(t, done)
		ended := make(chan purgatory.Outcome)
		go func() { ended <- parked.Wait() }()
		synctest.Wait()
		tried = nil

		level.Store(9)
		require.Zero(t, p.Advance("k", 9))
		require.Empty(t, tried, "below its level: not tried")
		require.Zero(t, p.CheckAndComplete("k"))
		require.Equal(t, []string{"at 10"}, tried, "CheckAndComplete tries it whatever the level")

		time.Sleep(time.Second)
		level.Store(10)
		require.Equal(t, 1, p.Advance("k", 10))
		require.Equal(t, purgatory.Completed, <-ended)
		require.Zero(t, p.Watched())
		require.EqualValues(t, 1, op.Completed.Load())
		require.NoError(t, p.ListsAtRest())
	})
}

// The timeout of a use parked at a level is timed by its waiter, as Wait's:
// it expires exactly at its timeout in the bubble, not a wheel's tick later,
// with OnComplete and OnExpiration run on the waiting goroutine.
func TestParkAtALevelExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(1500 * time.Millisecond)
		parked, done := p.TryCompleteElseParkAt(op, purgatory.At("k", 10), purgatory.At("j", 3))
		require.False(t, done)
		require.Equal(t, 2, p.Watched())
		start := time.Now()
		require.Equal(t, purgatory.Expired, parked.Wait())
		require.Equal(t, 1500*time.Millisecond, time.Since(start))
		require.EqualValues(t, 1, op.Expired.Load())
		require.Zero(t, p.Watched())
		require.NoError(t, p.ListsAtRest())
	})
}

// A key already at or past the level parks the use as a plain watcher, tried
// at the next Advance whatever its level; one ready at once completes in the
// call, and its Wait returns Completed at once.
func TestParkAtALevelAlreadyReached(t *testing.T) {
	p := newPurgatory(t)
	keep := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatch(keep, "k")) // keeps the key's list, and its level
	require.Zero(t, p.Advance("k", 100))
	op := testkit.NewOp(time.Hour)
	parked, done := p.TryCompleteElseParkAt(op, purgatory.At("k", 50))
	require.False(t, done)
	op.Ready.Store(true)
	require.Equal(t, 1, p.Advance("k", 1))
	require.Equal(t, purgatory.Completed, parked.Wait())

	now := testkit.NewOp(time.Hour)
	now.Ready.Store(true)
	parked, done = p.TryCompleteElseParkAt(now, purgatory.At("k", 500))
	require.True(t, done)
	require.Equal(t, purgatory.Completed, parked.Wait())
}

// WaitAt is Wait at a level: an Advance below it does not try ready, one at
// it does, and its timeout and ctx end it on the waiting goroutine.
func TestWaitAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		var index, tries atomic.Int64
		ready := func() bool { tries.Add(1); return index.Load() >= 7 }
		ended := make(chan purgatory.Outcome)
		go func() { ended <- p.WaitAt(context.Background(), time.Minute, ready, purgatory.At("k", 7)) }()
		synctest.Wait()
		require.EqualValues(t, 2, tries.Load(), "the first tries, before and after the watch")
		index.Store(6)
		require.Zero(t, p.Advance("k", 6))
		require.EqualValues(t, 2, tries.Load(), "not at its level")
		time.Sleep(time.Second)
		index.Store(7)
		require.Equal(t, 1, p.Advance("k", 7))
		require.Equal(t, purgatory.Completed, <-ended)

		ready = func() bool { return index.Load() >= 8 }
		start := time.Now()
		require.Equal(t, purgatory.Expired, p.WaitAt(context.Background(), 3*time.Second, ready, purgatory.At("k", 8)))
		require.Equal(t, 3*time.Second, time.Since(start))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.Equal(t, purgatory.ContextDone, p.WaitAt(ctx, time.Hour, ready, purgatory.At("k", 8)))
		require.Equal(t, purgatory.Expired, p.WaitAt(context.Background(), 0, ready, purgatory.At("k", 8)), "a poll")
		require.Zero(t, p.Watched())
	})
}

// Misuses of the parked levels say what to do.
func TestParkAtMisuse(t *testing.T) {
	p := newPurgatory(t)
	ctx := context.Background()
	testkit.Misuse(t, "purgatory: ", "no levels", func() { p.TryCompleteElseParkAt(testkit.NewOp(time.Second)) })
	testkit.Misuse(t, "purgatory: ", "nil Operation", func() { p.TryCompleteElseParkAt(nil, purgatory.At("k", 1)) })
	testkit.Misuse(t, "purgatory: ", "no levels", func() { p.WaitAt(ctx, time.Second, func() bool { return false }) })
	testkit.Misuse(t, "purgatory: ", "nil ready", func() { p.WaitAt(ctx, time.Second, nil, purgatory.At("k", 1)) })
	//lint:ignore SA1012 the misuse under test
	testkit.Misuse(t, "purgatory: ", "nil Context", func() { p.WaitAt(nil, time.Second, func() bool { return false }, purgatory.At("k", 1)) })
	q, err := purgatory.New[any]("any")
	require.NoError(t, err)
	defer q.Close()
	testkit.Misuse(t, "purgatory: ", "cannot be used", func() { q.TryCompleteElseParkAt(testkit.NewOp(time.Second), purgatory.At[any]([]int{1}, 1)) })
}
