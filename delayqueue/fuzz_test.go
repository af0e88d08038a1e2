package delayqueue_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/purgatory-go/purgatory/delayqueue"
)

// FuzzOrder offers items with random expirations and polls at random times,
// checking against a sorted slice: every poll returns exactly the earliest due
// item, ties in offer order.
func FuzzOrder(f *testing.F) {
	f.Add([]byte{1, 5, 0, 3, 3, 255, 2, 9})
	f.Add([]byte{7, 7, 7, 7, 128, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		type it struct {
			exp int64
			seq int
		}
		q := delayqueue.New[int]()
		var model []it
		now := int64(0)
		for i := 0; i+1 < len(data); i += 2 {
			v := int(binary.LittleEndian.Uint16(data[i:]))
			if v&1 == 0 { // offer
				exp := int64(v >> 1 % 64)
				q.Offer(i, exp)
				model = append(model, it{exp, i})
				slices.SortStableFunc(model, func(a, b it) int { return int(a.exp - b.exp) })
				continue
			}
			now += int64(v >> 1 % 8) // poll after time moves on
			got, ok := q.Poll(now)
			want := len(model) > 0 && model[0].exp <= now
			if ok != want {
				t.Fatalf("Poll(%v) ok=%v, model says %v (%v)", now, ok, want, model)
			}
			if ok {
				if got != model[0].seq {
					t.Fatalf("Poll(%v) = %d, want %d", now, got, model[0].seq)
				}
				model = model[1:]
			}
			if delayqueue.Len(q) != len(model) {
				t.Fatalf("Len %d, want %d", delayqueue.Len(q), len(model))
			}
		}
	})
}
