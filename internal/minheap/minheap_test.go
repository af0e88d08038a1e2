package minheap_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/purgatory-go/purgatory/internal/minheap"
)

// Pushes and pops in any order give the entries back least key first, as a
// sorted slice would; Init restores the order after entries are removed in
// place; a popped entry's slot is cleared.
func TestAgainstASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var h minheap.Heap[int]
		var model []int64
		for range rng.IntN(300) {
			if len(model) > 0 && rng.IntN(3) == 0 {
				slices.Sort(model)
				got := h.Pop()
				if got.Key != model[0] || got.Value != int(got.Key) {
					t.Fatalf("round %d: popped %v, want key %d", round, got, model[0])
				}
				model = model[1:]
				if c := h[:cap(h)]; c[len(h)] != (minheap.Entry[int]{}) {
					t.Fatalf("round %d: the popped slot still holds %v", round, c[len(h)])
				}
				continue
			}
			k := rng.Int64N(50) - 25
			h.Push(k, int(k))
			model = append(model, k)
		}
		live := h[:0] // keep the even keys, in place
		for _, e := range h {
			if e.Key%2 == 0 {
				live = append(live, e)
			}
		}
		h = live
		h.Init()
		model = slices.DeleteFunc(model, func(k int64) bool { return k%2 != 0 })
		slices.Sort(model)
		for _, want := range model {
			if got := h.Pop().Key; got != want {
				t.Fatalf("round %d: after Init popped %d, want %d", round, got, want)
			}
		}
		if len(h) != 0 {
			t.Fatalf("round %d: %d entries left", round, len(h))
		}
	}
}

// Entries pushed with PushInOrder come out by key and, among equal keys, by
// seq, whatever order they were pushed in and after Init: the heap is a total
// order, so the purgatory's level ties keep the order operations were added.
func TestTiesComeOutInSeqOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var h minheap.Heap[int]
		type kv struct {
			key int64
			seq uint64
		}
		var model []kv
		n := rng.IntN(200)
		for _, i := range rng.Perm(n) {
			k := int64(i % 5) // few keys: many ties
			h.PushInOrder(k, uint64(i), i)
			model = append(model, kv{k, uint64(i)})
		}
		if round%2 == 1 { // filtered in place: keep all, then restore
			h.Init()
		}
		slices.SortFunc(model, func(a, b kv) int {
			if a.key != b.key {
				return int(a.key - b.key)
			}
			return int(a.seq) - int(b.seq)
		})
		for _, want := range model {
			got := h.Pop()
			if got.Key != want.key || got.Seq != want.seq || got.Value != int(want.seq) {
				t.Fatalf("round %d: popped (%d, %d), want (%d, %d)", round, got.Key, got.Seq, want.key, want.seq)
			}
		}
	}
}
