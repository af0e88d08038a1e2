package delayqueue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/delayqueue"
)

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
	for _, now := range []int64{10, 25, 100} {
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

// The queue is a plain heap: many items, offered in any order, come out in
// expiration order with ties in offer order, and Peek always names the head.
func TestManyItemsComeOutInOrder(t *testing.T) {
	q := delayqueue.New[int]()
	const n = 5000
	for i := range n {
		q.Offer(i, int64((i*7919)%n/10))
	}
	prev, prevSeq := int64(-1), -1
	for range n {
		exp, ok := q.Peek()
		require.True(t, ok)
		v, ok := q.Poll(exp)
		require.True(t, ok)
		got := int64((v * 7919) % n / 10)
		require.Equal(t, exp, got, "Peek named the head")
		require.GreaterOrEqual(t, got, prev)
		if got == prev {
			require.Greater(t, v, prevSeq, "ties come out in offer order")
		}
		prev, prevSeq = got, v
	}
	require.Zero(t, delayqueue.Len(q))
}
