package bucket_test

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/bucket"
)

func values(b *bucket.Bucket[int]) []int {
	var vs []int
	for e := range bucket.All(b) {
		vs = append(vs, e.Value)
	}
	return vs
}

// TestSharedCounter is Kafka's TimerTaskListTest.testAll: three buckets share a
// counter; moving entries between them keeps the count, removing drops it.
func TestSharedCounter(t *testing.T) {
	var counter atomic.Int64
	b1, b2, b3 := bucket.New[int](&counter), bucket.New[int](&counter), bucket.New[int](&counter)

	entries := make([]*bucket.Entry[int], 10)
	for i := range entries {
		entries[i] = &bucket.Entry[int]{Value: i}
		b1.Add(entries[i])
		require.EqualValues(t, i+1, counter.Load())
	}
	for _, e := range entries[:4] {
		b2.Add(e)
		require.EqualValues(t, 10, counter.Load(), "moving an entry must not change the count")
		require.Same(t, b2, e.Bucket())
	}
	for _, e := range entries[4:] {
		b3.Add(e)
		require.EqualValues(t, 10, counter.Load())
	}
	require.Equal(t, 0, b1.Len())
	require.Equal(t, []int{0, 1, 2, 3}, values(b2))
	require.Equal(t, []int{4, 5, 6, 7, 8, 9}, values(b3))

	for _, b := range []*bucket.Bucket[int]{b1, b2, b3} {
		for e := range bucket.All(b) {
			require.True(t, e.Remove())
		}
	}
	require.EqualValues(t, 0, counter.Load())
	for _, e := range entries {
		require.Nil(t, e.Bucket())
		require.False(t, e.Remove(), "removing twice reports false")
	}
}

func TestRemoveOnlyFromOwnBucket(t *testing.T) {
	b1, b2 := bucket.New[int](nil), bucket.New[int](nil)
	e := &bucket.Entry[int]{Value: 1}
	require.False(t, e.Remove(), "an unlinked entry is in no bucket")
	b1.Add(e)
	require.Same(t, b1, e.Bucket())
	require.Zero(t, b2.Len())
	require.Equal(t, 1, b1.Len())
	require.True(t, e.Remove())
	require.Nil(t, e.Bucket())
	require.Equal(t, 0, b1.Len())
}

func TestRemoveKeepsOrder(t *testing.T) {
	for remove := range 5 {
		b := bucket.New[int](nil)
		es := make([]*bucket.Entry[int], 5)
		for i := range es {
			es[i] = &bucket.Entry[int]{Value: i}
			b.Add(es[i])
		}
		require.True(t, es[remove].Remove())
		want := slices.Delete([]int{0, 1, 2, 3, 4}, remove, remove+1)
		require.Equal(t, want, values(b), "removing entry %d", remove)
		require.Equal(t, 4, b.Len())
	}
}

func TestAddTwiceToSameBucketMovesToEnd(t *testing.T) {
	var counter atomic.Int64
	b := bucket.New[int](&counter)
	e1, e2 := &bucket.Entry[int]{Value: 1}, &bucket.Entry[int]{Value: 2}
	b.Add(e1)
	b.Add(e2)
	b.Add(e1)
	require.Equal(t, []int{2, 1}, values(b))
	require.EqualValues(t, 2, counter.Load())
}

func TestSetExpiration(t *testing.T) {
	b := bucket.New[int](nil)
	require.Equal(t, bucket.NoExpiration, b.Expiration())
	require.True(t, b.SetExpiration(10), "first set changes it")
	require.False(t, b.SetExpiration(10), "same value does not")
	require.True(t, b.SetExpiration(20))
	require.EqualValues(t, 20, b.Expiration())
}

func TestFlush(t *testing.T) {
	var counter atomic.Int64
	b := bucket.New[int](&counter)
	for i := range 5 {
		b.Add(&bucket.Entry[int]{Value: i})
	}
	b.SetExpiration(7)

	var got []int
	b.Flush(func(e *bucket.Entry[int]) {
		require.Nil(t, e.Bucket(), "entries are unlinked before fn sees them")
		got = append(got, e.Value)
	})
	require.Equal(t, []int{0, 1, 2, 3, 4}, got)
	require.Equal(t, 0, b.Len())
	require.EqualValues(t, 0, counter.Load())
	require.Equal(t, bucket.NoExpiration, b.Expiration())
	require.True(t, b.SetExpiration(7), "a flushed bucket can be scheduled again at the same expiration")
}

func TestFlushMayAddBackToSameBucket(t *testing.T) {
	var counter atomic.Int64
	b, other := bucket.New[int](&counter), bucket.New[int](&counter)
	for i := range 6 {
		b.Add(&bucket.Entry[int]{Value: i})
	}
	calls := 0
	b.Flush(func(e *bucket.Entry[int]) {
		calls++
		if e.Value%2 == 0 {
			b.Add(e) // stays for the next flush
		} else {
			other.Add(e)
		}
	})
	require.Equal(t, 6, calls, "entries added back during a flush are not flushed again")
	require.Equal(t, []int{0, 2, 4}, values(b))
	require.Equal(t, []int{1, 3, 5}, values(other))
	require.EqualValues(t, 6, counter.Load())
}

func TestFlushEmpty(t *testing.T) {
	b := bucket.New[int](nil)
	b.Flush(func(*bucket.Entry[int]) { t.Fatal("no entries to flush") })
	require.Equal(t, 0, b.Len())
}

func TestAllStopsEarly(t *testing.T) {
	b := bucket.New[int](nil)
	for i := range 5 {
		b.Add(&bucket.Entry[int]{Value: i})
	}
	var seen []int
	for e := range bucket.All(b) {
		seen = append(seen, e.Value)
		if e.Value == 2 {
			break
		}
	}
	require.Equal(t, []int{0, 1, 2}, seen)
}
