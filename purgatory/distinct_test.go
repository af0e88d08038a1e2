package purgatory

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// eachDistinct and eachDistinctLevel, by scan or by map, agree with the
// obvious quadratic reference: each key once, where it first appears, at
// its lowest level, stopping where watch says false.
func TestEachDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, scanMax, scanMax + 1, 100, 1000} {
		for range 20 {
			at := make([]Level[int], n)
			for i := range at {
				at[i] = Level[int]{rng.IntN(n/2 + 1), rng.Int64N(5)}
			}
			stop := rng.IntN(n + 1) // watch says false at this call
			var want []Level[int]
			for i, a := range at {
				first, level := true, a.Level
				for j, b := range at {
					if b.Key == a.Key {
						first = first && j >= i
						level = min(level, b.Level)
					}
				}
				if first {
					want = append(want, Level[int]{a.Key, level})
				}
			}
			var gotLevels []Level[int]
			n := eachDistinctLevel(at, func(k int, l int64) bool {
				gotLevels = append(gotLevels, Level[int]{k, l})
				return len(gotLevels) <= stop
			})
			require.Equal(t, want[:min(stop+1, len(want))], gotLevels)
			require.Equal(t, min(stop, len(want)), n)

			keys := make([]int, len(at))
			for i, a := range at {
				keys[i] = a.Key
			}
			var gotKeys []int
			n = eachDistinct(keys, func(k int) bool {
				gotKeys = append(gotKeys, k)
				return len(gotKeys) <= stop
			})
			require.Len(t, gotKeys, min(stop+1, len(want)))
			for i, k := range gotKeys {
				require.Equal(t, want[i].Key, k)
			}
			require.Equal(t, min(stop, len(want)), n)
		}
	}
}
