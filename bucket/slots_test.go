package bucket

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// el is an element for the tests that look inside a Bucket.
type el struct {
	links Links[el]
	v     int
}

func (e *el) Links() *Links[el] { return &e.links }

func els(n int) []*el {
	es := make([]*el, n)
	for i := range es {
		es[i] = &el{v: i}
	}
	return es
}

func held(b *Bucket[el, *el]) []int {
	var vs []int
	for e := range b.All() {
		vs = append(vs, e.v)
	}
	return vs
}

// A removal clears its slot and nothing else: the bucket keeps no pointer to
// the element, and the others keep their places.
func TestRemoveClearsItsSlot(t *testing.T) {
	b := New[el, *el]()
	es := els(3)
	for _, e := range es {
		b.Add(e)
	}
	require.True(t, b.Remove(es[1]))
	require.Nil(t, b.slots.items[1], "the removed element's slot")
	require.Same(t, es[0], b.slots.items[0])
	require.Same(t, es[2], b.slots.items[2])
	require.Equal(t, 2, b.slots.live)
	require.False(t, b.Remove(es[1]), "removed twice")
	require.Equal(t, 2, b.slots.live, "a second Remove changes nothing")
}

// An Add that finds the array full and at least half of it cleared moves the
// elements to the front rather than grow the array, in order, and each
// element's index follows it: removing any of them afterwards clears its own
// slot.
func TestClearedSlotsAreReused(t *testing.T) {
	b := New[el, *el]()
	es := els(12)
	for _, e := range es[:8] {
		b.Add(e)
	}
	full := cap(b.slots.items)
	require.Len(t, b.slots.items, full, "eight elements fill the array append made")
	for _, e := range es[:8] {
		if e.v%2 == 0 || e.v == 5 {
			b.Remove(e)
		}
	}
	for _, e := range es[8:] {
		b.Add(e)
	}
	require.Equal(t, full, cap(b.slots.items), "the array did not grow")
	require.Equal(t, []int{1, 3, 7, 8, 9, 10, 11}, held(b))
	for i, e := range b.slots.items {
		require.EqualValues(t, i+1, e.links.at, "element %d's index", e.v)
	}
	for _, v := range []int{7, 1, 11} {
		require.True(t, b.Remove(es[v]))
	}
	require.Equal(t, []int{3, 8, 9, 10}, held(b))
}

// A removal that leaves the bucket empty starts its array again from the
// front; a flush keeps the array for the next lap, so a bucket that fills
// and empties as much each lap allocates nothing after its first.
func TestArrayKeptFromLapToLap(t *testing.T) {
	b := New[el, *el]()
	es := els(100)
	lap := func() {
		for _, e := range es {
			b.Add(e)
		}
		b.Flush(func(*el) {})
		for _, e := range es[:50] {
			b.Add(e)
		}
		for _, e := range es[:50] {
			b.Remove(e)
		}
	}
	lap()
	require.Zero(t, testing.AllocsPerRun(10, lap))
	require.Empty(t, b.slots.items)
}

// A flush lets go of an array more than twice what it held, and larger than
// minKept, so that a bucket once crowded does not keep its largest array.
func TestFlushLetsGoOfACrowdedArray(t *testing.T) {
	b := New[el, *el]()
	es := els(1000)
	for _, e := range es {
		b.Add(e)
	}
	for _, e := range es[10:] {
		b.Remove(e)
	}
	b.Flush(func(*el) {})
	require.Nil(t, b.slots.items, "990 of 1,000 had left: the array goes")
	for _, e := range es[:10] {
		b.Add(e)
	}
	b.Flush(func(*el) {})
	require.NotNil(t, b.slots.items, "a small array is kept")
	require.LessOrEqual(t, cap(b.slots.items), minKept)
}

// Elements added to a bucket by its own flush's fn go to an array of their
// own, so the flush still reads what it started with, and stays after it.
func TestFlushAddsToItself(t *testing.T) {
	b := New[el, *el]()
	es := els(4)
	for _, e := range es[:2] {
		b.Add(e)
	}
	var seen []int
	b.Flush(func(e *el) {
		seen = append(seen, e.v)
		require.False(t, Linked(e), "unlinked before fn sees it")
		if e.v == 0 {
			b.Add(es[2]) // a new element
			b.Add(e)     // the one just flushed, back in
		}
	})
	require.Equal(t, []int{0, 1}, seen)
	require.Equal(t, []int{2, 0}, held(b))
	require.True(t, slices.ContainsFunc(b.slots.items, func(e *el) bool { return e == es[2] }))
}
