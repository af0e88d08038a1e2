package bucket_test

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/bucket"
)

// item is an element as a timer is one: it embeds its links.
type item struct {
	links bucket.Links[item]
	v     int
}

func (it *item) Links() *bucket.Links[item] { return &it.links }

type list = bucket.Bucket[item, *item]

func newList() *list { return bucket.New[item, *item]() }

func items(n int) []*item {
	its := make([]*item, n)
	for i := range its {
		its[i] = &item{v: i}
	}
	return its
}

func values(b *list) []int {
	var vs []int
	for e := range b.All() {
		vs = append(vs, e.v)
	}
	return vs
}

// TestMoves is Kafka's TimerTaskListTest.testAll without its counter: an
// element moves to another bucket by a Remove from its own and an Add;
// removing unlinks.
func TestMoves(t *testing.T) {
	b1, b2, b3 := newList(), newList(), newList()
	its := items(10)
	for _, it := range its {
		b1.Add(it)
		require.True(t, bucket.Linked(it))
	}
	for _, it := range its[:4] {
		require.True(t, b1.Remove(it))
		b2.Add(it)
	}
	for _, it := range its[4:] {
		require.True(t, b1.Remove(it))
		b3.Add(it)
	}
	require.True(t, b1.Empty())
	require.Equal(t, []int{0, 1, 2, 3}, values(b2))
	require.Equal(t, []int{4, 5, 6, 7, 8, 9}, values(b3))

	for _, b := range []*list{b1, b2, b3} {
		for it := range b.All() {
			require.True(t, b.Remove(it))
		}
		require.True(t, b.Empty())
	}
	for _, it := range its {
		require.False(t, bucket.Linked(it))
		require.False(t, b1.Remove(it), "removing twice reports false")
	}
}

func TestRemoveKeepsOrder(t *testing.T) {
	for remove := range 5 {
		b := newList()
		its := items(5)
		for _, it := range its {
			b.Add(it)
		}
		require.True(t, b.Remove(its[remove]))
		want := slices.Delete([]int{0, 1, 2, 3, 4}, remove, remove+1)
		require.Equal(t, want, values(b), "removing element %d", remove)
	}
}

// An element is in one bucket at most: adding one that is in a bucket, or
// removing one from a bucket that does not hold it, panics with a message
// that says what to do, and changes nothing.
func TestMisusePanics(t *testing.T) {
	b, other := newList(), newList()
	its := items(2)
	b.Add(its[0])
	b.Add(its[1])
	require.PanicsWithValue(t, "bucket: Add of an element that is in a Bucket already; remove it from that Bucket first", func() { b.Add(its[0]) })
	require.PanicsWithValue(t, "bucket: Add of an element that is in a Bucket already; remove it from that Bucket first", func() { other.Add(its[0]) })
	require.PanicsWithValue(t, "bucket: Remove of an element that is in another Bucket; remove it from the Bucket that holds it", func() { other.Remove(its[1]) })
	other.Add(items(1)[0])
	require.PanicsWithValue(t, "bucket: Remove of an element that is in another Bucket; remove it from the Bucket that holds it", func() { other.Remove(its[0]) }, "index 0 is taken there too")
	require.Equal(t, []int{0, 1}, values(b))
	require.True(t, b.Remove(its[0]))
	b.Add(its[0])
	require.Equal(t, []int{1, 0}, values(b), "removed and added again: at the end")
}

func TestSetExpiration(t *testing.T) {
	b := newList()
	require.Equal(t, bucket.NoExpiration, b.Expiration())
	require.True(t, b.SetExpiration(10), "first set changes it")
	require.False(t, b.SetExpiration(10), "same value does not")
	require.True(t, b.SetExpiration(20))
	require.EqualValues(t, 20, b.Expiration())
}

func TestInitInPlace(t *testing.T) {
	var bs [3]list
	for i := range bs {
		bs[i].Init()
		require.True(t, bs[i].Empty())
		require.Equal(t, bucket.NoExpiration, bs[i].Expiration())
	}
	its := items(3)
	for i, it := range its {
		bs[i].Add(it)
	}
	require.True(t, bs[2].Remove(its[2]))
	bs[0].Add(its[2])
	require.Equal(t, []int{0, 2}, values(&bs[0]))
	require.True(t, bs[2].Empty())
}

func TestFlush(t *testing.T) {
	b := newList()
	for _, it := range items(5) {
		b.Add(it)
	}
	b.SetExpiration(7)

	var got []int
	b.Flush(func(it *item) {
		require.False(t, bucket.Linked(it), "elements are unlinked before fn sees them")
		got = append(got, it.v)
	})
	require.Equal(t, []int{0, 1, 2, 3, 4}, got)
	require.True(t, b.Empty())
	require.Equal(t, bucket.NoExpiration, b.Expiration())
	require.True(t, b.SetExpiration(7), "a flushed bucket can be scheduled again at the same expiration")
}

func TestFlushMayAddBackToSameBucket(t *testing.T) {
	b, other := newList(), newList()
	for _, it := range items(6) {
		b.Add(it)
	}
	calls := 0
	b.Flush(func(it *item) {
		calls++
		if it.v%2 == 0 {
			b.Add(it) // stays for the next flush
		} else {
			other.Add(it)
		}
	})
	require.Equal(t, 6, calls, "elements added back during a flush are not flushed again")
	require.Equal(t, []int{0, 2, 4}, values(b))
	require.Equal(t, []int{1, 3, 5}, values(other))
}

func TestFlushEmpty(t *testing.T) {
	b := newList()
	b.SetExpiration(3)
	b.Flush(func(*item) { t.Fatal("no elements to flush") })
	require.True(t, b.Empty())
	require.Equal(t, bucket.NoExpiration, b.Expiration())
}

func TestAllStopsEarly(t *testing.T) {
	b := newList()
	for _, it := range items(5) {
		b.Add(it)
	}
	var seen []int
	for it := range b.All() {
		seen = append(seen, it.v)
		if it.v == 2 {
			break
		}
	}
	require.Equal(t, []int{0, 1, 2}, seen)
}

// The links are all an element pays for its place in its own memory: an
// index of four bytes, no pointer.
func TestLinksAreAnIndex(t *testing.T) {
	require.EqualValues(t, 4, unsafe.Sizeof(bucket.Links[item]{}))
}
