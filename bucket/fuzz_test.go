package bucket_test

import (
	"slices"
	"testing"

	"github.com/purgatory-go/purgatory/bucket"
)

// FuzzMoves applies random adds, moves, removes and flushes over three buckets
// and checks them against a model of plain slices: every element is in the
// bucket the model says, in the model's order, and linked exactly when the
// model has it somewhere.
func FuzzMoves(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 4, 8, 12, 1, 5, 9, 2, 3, 3, 0})
	f.Add([]byte{0, 4, 2, 8, 6}) // the third add compacts the array; the element it moved is removed
	f.Fuzz(func(t *testing.T, ops []byte) {
		const nItems, nBuckets = 8, 3
		buckets := make([]*list, nBuckets)
		for i := range buckets {
			buckets[i] = newList()
		}
		its := items(nItems)
		model := make([][]int, nBuckets)
		where := func(v int) int {
			for i, m := range model {
				if slices.Contains(m, v) {
					return i
				}
			}
			return -1
		}
		drop := func(v int) {
			if w := where(v); w >= 0 {
				model[w] = slices.DeleteFunc(model[w], func(x int) bool { return x == v })
			}
		}

		for _, op := range ops {
			e, b := int(op>>2)%nItems, int(op>>5)%nBuckets
			switch op % 4 {
			case 0, 1: // add or move e to bucket b: out of its own first
				if w := where(e); w >= 0 && !buckets[w].Remove(its[e]) {
					t.Fatalf("Remove(%d) from bucket %d = false, model says it is there", e, w)
				}
				drop(e)
				model[b] = append(model[b], e)
				buckets[b].Add(its[e])
			case 2: // remove e, from the bucket the model says (b if none)
				w := where(e)
				drop(e)
				from := buckets[b]
				if w >= 0 {
					from = buckets[w]
				}
				if got := from.Remove(its[e]); got != (w >= 0) {
					t.Fatalf("Remove(%d) = %v, model says in bucket %d", e, got, w)
				}
			case 3: // flush b
				var got []int
				buckets[b].Flush(func(x *item) { got = append(got, x.v) })
				if !slices.Equal(got, model[b]) && len(got)+len(model[b]) > 0 {
					t.Fatalf("flush of bucket %d gave %v, want %v", b, got, model[b])
				}
				model[b] = nil
			}

			for i, bk := range buckets {
				if got := values(bk); !slices.Equal(got, model[i]) && len(got)+len(model[i]) > 0 {
					t.Fatalf("bucket %d holds %v, want %v", i, got, model[i])
				}
				if bk.Empty() != (len(model[i]) == 0) {
					t.Fatalf("bucket %d Empty %v, model holds %v", i, bk.Empty(), model[i])
				}
			}
			for v, it := range its {
				if bucket.Linked(it) != (where(v) >= 0) {
					t.Fatalf("item %d Linked %v, model says bucket %d", v, bucket.Linked(it), where(v))
				}
			}
		}
	})
}
