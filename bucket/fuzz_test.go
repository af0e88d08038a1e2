package bucket_test

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/purgatory-go/purgatory/bucket"
)

// FuzzMoves applies random adds, moves, removes and flushes over three buckets
// sharing a counter, and checks them against a model of plain slices.
func FuzzMoves(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 4, 8, 12, 1, 5, 9, 2, 3, 3, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const nEntries, nBuckets = 8, 3
		var counter atomic.Int64
		buckets := make([]*bucket.Bucket[int], nBuckets)
		for i := range buckets {
			buckets[i] = bucket.New[int](&counter)
		}
		entries := make([]*bucket.Entry[int], nEntries)
		for i := range entries {
			entries[i] = &bucket.Entry[int]{Value: i}
		}
		model := make([][]int, nBuckets)
		where := func(v int) int {
			for i, m := range model {
				if slices.Contains(m, v) {
					return i
				}
			}
			return -1
		}

		for _, op := range ops {
			e, b := int(op>>2)%nEntries, int(op>>5)%nBuckets
			switch op % 4 {
			case 0, 1: // add or move e to bucket b
				if w := where(e); w >= 0 {
					model[w] = slices.DeleteFunc(model[w], func(v int) bool { return v == e })
				}
				model[b] = append(model[b], e)
				buckets[b].Add(entries[e])
			case 2: // remove e
				w := where(e)
				if w >= 0 {
					model[w] = slices.DeleteFunc(model[w], func(v int) bool { return v == e })
				}
				if got := entries[e].Remove(); got != (w >= 0) {
					t.Fatalf("Remove(%d) = %v, model says in bucket %d", e, got, w)
				}
			case 3: // flush b
				var got []int
				buckets[b].Flush(func(x *bucket.Entry[int]) { got = append(got, x.Value) })
				if !slices.Equal(got, model[b]) && len(got)+len(model[b]) > 0 {
					t.Fatalf("flush of bucket %d gave %v, want %v", b, got, model[b])
				}
				model[b] = nil
			}

			total := 0
			for i, bk := range buckets {
				var got []int
				for x := range bucket.All(bk) {
					got = append(got, x.Value)
					if x.Bucket() != bk {
						t.Fatalf("entry %d is listed in bucket %d but says it is elsewhere", x.Value, i)
					}
				}
				if !slices.Equal(got, model[i]) && len(got)+len(model[i]) > 0 {
					t.Fatalf("bucket %d holds %v, want %v", i, got, model[i])
				}
				if bk.Len() != len(model[i]) {
					t.Fatalf("bucket %d Len %d, want %d", i, bk.Len(), len(model[i]))
				}
				total += len(model[i])
			}
			if counter.Load() != int64(total) {
				t.Fatalf("shared counter %d, want %d", counter.Load(), total)
			}
		}
	})
}
