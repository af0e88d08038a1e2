package main

import (
	"strings"
	"testing"
	"time"
)

// The soak fails on a leak, of heap or of goroutines, injected by its own
// flags into the bench (the library is not touched), even in a run of
// seconds. (That a run without a leak passes is shown by the long soak in
// RESULTS.md: in a run of seconds the lists' arrays are still growing to
// the largest they will need, which a steady run stops doing within minutes.)
func TestSoakCatchesALeak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 8 s soaks")
	}
	short := params{duration: 8 * time.Second, rate: 10_000}
	for _, c := range []struct {
		name       string
		bytes, gos int
		want       string
	}{
		{"64 bytes a request", 64, 0, "soak: the live heap grew"},
		{"a goroutine every 50 ms", 0, 1200, "soak: goroutines grew"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := short
			p.leakBytes, p.leakGoroutines = c.bytes, c.gos
			r, err := soak(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("a leak of %s: want an error %q, got %v (%v)", c.name, c.want, err, r.Metrics)
			}
		})
	}
}

// slope recovers a line and says how sure it is.
func TestSlope(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4}
	b, se := slope(x, []float64{1, 3, 5, 7, 9})
	if b != 2 || se != 0 {
		t.Fatalf("an exact line: slope %v ± %v, want 2 ± 0", b, se)
	}
	b, se = slope(x, []float64{1, 3.5, 5, 6.5, 9})
	if b < 1.8 || b > 2.2 || se <= 0 {
		t.Fatalf("a noisy line: slope %v ± %v", b, se)
	}
	if b, _ := slope(x[:2], x[:2]); b == b {
		t.Fatalf("two points: %v, want NaN", b)
	}
}
