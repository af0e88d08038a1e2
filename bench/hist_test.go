package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The histogram's quantiles are within 1/64 below the exact ones, its
// largest exact, and it holds the same memory however much is added.
func TestDurationsQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h durations
	var all []time.Duration
	for range 200_000 {
		d := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		h.add(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999} {
		exact := float64(all[int(q*float64(len(all)))]) / 1e6
		got := h.quantileMs(q)
		if got > exact || got < exact*(1-1.0/64)-1e-6 {
			t.Errorf("q%v: %v ms, exact %v", q, got, exact)
		}
	}
	if got, want := h.quantileMs(1), float64(all[len(all)-1])/1e6; got != want {
		t.Errorf("max %v, want %v", got, want)
	}
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 129, 1 << 40, 1<<63 + 5} {
		if b := bucketOf(v); lowest(b) > v || (b+1 < len(h.counts) && lowest(b+1) <= v) {
			t.Errorf("%d: bucket %d holds [%d, %d)", v, b, lowest(b), lowest(b+1))
		}
	}
	var empty durations
	if q := empty.quantileMs(0.5); q == q {
		t.Errorf("empty: %v, want NaN", q)
	}
}
