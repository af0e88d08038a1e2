package delayqueue_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/delayqueue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPollOrder(t *testing.T) {
	q := delayqueue.New[string]()
	q.Offer("c", 30)
	q.Offer("a", 10)
	q.Offer("b1", 20)
	q.Offer("b2", 20) // equal expirations keep offer order
	require.Equal(t, 4, delayqueue.Len(q))

	exp, ok := q.Peek()
	require.True(t, ok)
	require.EqualValues(t, 10, exp)

	_, ok = q.Poll(9)
	require.False(t, ok, "nothing is due before the earliest expiration")

	var got []string
	for _, now := range []time.Duration{10, 25, 100} {
		for {
			v, ok := q.Poll(now)
			if !ok {
				break
			}
			got = append(got, v)
		}
	}
	require.Equal(t, []string{"a", "b1", "b2", "c"}, got)
	require.Equal(t, 0, delayqueue.Len(q))
	_, ok = q.Peek()
	require.False(t, ok)
}

func clock() func() time.Duration {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}

func TestTakeWaitsUntilDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := delayqueue.New[int]()
		now := clock()
		q.Offer(1, 50*time.Millisecond)
		v, err := q.Take(t.Context(), now)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.Equal(t, 50*time.Millisecond, now(), "Take returns exactly when the item is due")
	})
}

func TestTakeOnEmptyWaitsForOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := delayqueue.New[int]()
		now := clock()
		go func() {
			time.Sleep(time.Second)
			q.Offer(7, 2*time.Second)
		}()
		v, err := q.Take(t.Context(), now)
		require.NoError(t, err)
		require.Equal(t, 7, v)
		require.Equal(t, 2*time.Second, now())
	})
}

func TestEarlierOfferWakesTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := delayqueue.New[int]()
		now := clock()
		q.Offer(100, time.Hour)
		go func() {
			time.Sleep(10 * time.Millisecond)
			q.Offer(1, 20*time.Millisecond)
		}()
		v, err := q.Take(t.Context(), now)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.Equal(t, 20*time.Millisecond, now(), "the sleeper re-armed for the earlier item")
		require.Equal(t, 1, delayqueue.Len(q))
	})
}

func TestLaterOfferDoesNotDelayTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := delayqueue.New[int]()
		now := clock()
		q.Offer(1, 30*time.Millisecond)
		go func() {
			time.Sleep(10 * time.Millisecond)
			q.Offer(2, time.Hour)
		}()
		v, err := q.Take(t.Context(), now)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.Equal(t, 30*time.Millisecond, now())
	})
}

func TestTakeCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := delayqueue.New[int]()
		now := clock()
		q.Offer(1, time.Hour)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := q.Take(ctx, now)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, time.Second, now())
		require.Equal(t, 1, delayqueue.Len(q), "a cancelled Take removes nothing")
	})
}

func TestTakeDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := delayqueue.New[int]()
		calls := 0
		start := time.Now()
		now := func() time.Duration { calls++; return time.Since(start) }
		q.Offer(1, time.Hour)
		_, err := q.Take(t.Context(), now)
		require.NoError(t, err)
		require.LessOrEqual(t, calls, 2, "one look before sleeping, one after waking")
	})
}

func TestConcurrentProducers(t *testing.T) {
	q := delayqueue.New[int]()
	const producers, each = 8, 1000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				q.Offer(p*each+i, time.Duration((p*each+i)%97))
			}
		})
	}
	var got []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(got) < producers*each {
			v, err := q.Take(context.Background(), func() time.Duration { return 1000 })
			assert.NoError(t, err)
			got = append(got, v)
		}
	}()
	wg.Wait()
	<-done
	slices.Sort(got)
	for i, v := range got {
		require.Equal(t, i, v)
	}
}
