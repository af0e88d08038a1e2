package main

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// W8pair's summary: the ratio is per pair, and the pairs split by lean's
// speed against its median.
func TestPairMetrics(t *testing.T) {
	ours := []float64{2, 4, 2, 4}
	lean := []float64{6, 8, 5, 8} // pairs 1 and 3 fast (above lean's median of 7)
	got := pairMetrics(ours, lean)
	want := map[string]float64{
		"ratio":              (0.4 + 0.5) / 2, // ratios 1/3, 1/2, 2/5, 1/2
		"ratio_min":          1.0 / 3,
		"ratio_max":          0.5,
		"ratio_lean_fast":    0.5,
		"ratio_lean_slow":    (1.0/3 + 0.4) / 2,
		"ops_per_cpu_s":      3,
		"peer_ops_per_cpu_s": 7,
	}
	sameMetrics(t, got, want)
}

// W5pair's summary: the ratio is per pair, of CPU per request.
func TestW5PairMetrics(t *testing.T) {
	ours := []float64{3, 5, 6}
	naive := []float64{4, 4, 5} // ratios 0.75, 1.25, 1.2: the median pair's is not the medians' 5/4
	got := w5PairMetrics(ours, naive)
	want := map[string]float64{
		"ratio":               1.2,
		"ratio_min":           0.75,
		"ratio_max":           1.25,
		"cpu_us_per_req":      5,
		"peer_cpu_us_per_req": 4,
	}
	sameMetrics(t, got, want)
}

// W9pair's summaries, of any measure: the metric's medians keep its name.
func TestPairSummary(t *testing.T) {
	ours := []float64{1, 3, 2, 8}
	lean := []float64{2, 2, 2, 4} // ratios 0.5, 1.5, 1, 2: the median pair's is 1.25, the medians' 2.5/2
	got := pairSummary(ours, lean, "lat_p99_ms")
	want := map[string]float64{
		"ratio":           1.25,
		"ratio_min":       0.5,
		"ratio_max":       2,
		"lat_p99_ms":      2.5,
		"peer_lat_p99_ms": 2,
	}
	sameMetrics(t, got, want)
}

// sameMetrics fails t unless got holds exactly want's metrics, each equal.
func sameMetrics(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for m, w := range want {
		if g, ok := got[m]; !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", m, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want exactly %v", got, want)
	}
}

// A window runs every loop it is given, each with its own rng, at once: at
// two goroutines both loops run, and they overlap. (In a bubble: the loops
// sleep, and the window's clock is the bubble's.)
func TestWindowRunsEveryLoop(t *testing.T) { synctest.Test(t, testWindowRunsEveryLoop) }

func testWindowRunsEveryLoop(t *testing.T) {
	var runs [2]atomic.Int64
	var inside, overlapped atomic.Int64
	loop := func(i int) w8Loop {
		return func(*rand.Rand) {
			if inside.Add(1) > 1 {
				overlapped.Add(1)
			}
			runs[i].Add(1)
			time.Sleep(10 * time.Microsecond)
			inside.Add(-1)
		}
	}
	rngs := []*rand.Rand{rand.New(rand.NewPCG(0, 1)), rand.New(rand.NewPCG(1, 1))}
	if got := window([]w8Loop{loop(0), loop(1)}, 20*time.Millisecond, rngs); !(got > 0) { // +Inf if the process used no CPU the clock saw
		t.Fatalf("runs per CPU-second %v, want > 0", got)
	}
	if runs[0].Load() == 0 || runs[1].Load() == 0 {
		t.Fatalf("runs %d and %d: each loop must run", runs[0].Load(), runs[1].Load())
	}
	if overlapped.Load() == 0 {
		t.Fatal("the two loops never ran at once: a window at G = 2 runs them on goroutines of their own")
	}
}
