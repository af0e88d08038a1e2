package main

import (
	"math/rand/v2"
	"slices"
	"time"
)

// W8pair is W8 at one goroutine with reused operations against pooled lean,
// both in one process, timed in alternate windows: a change of the
// machine's speed, which on a shared machine comes in phases of seconds,
// moves both sides of a window pair rather than one process of a system.
// Each window counts add+completes per CPU-second of the process; a pair's
// ratio is ours over lean's. The report gives the median ratio, and the
// median ratio over the pairs where lean ran above its median speed and
// over those where it ran below: apart, they show how much more a slow
// phase costs one system than the other. 100,000 operations are parked
// first on 1 h timeouts under 1,000 other keys for each system, as in W8.
var pairSystems = []string{"purgatory-reused"}

// pairWindows is how many window pairs a process times.
const pairWindows = 24

func w8pair(system string, p params) (result, error) {
	parked := p.n(100_000, 1_000)
	ours, err := newW8System(system, parked)
	if err != nil {
		return result{}, err
	}
	defer ours.close()
	lean, err := newW8System("lean-pooled", parked)
	if err != nil {
		return result{}, err
	}
	defer lean.close()
	per := time.Duration(p.n(250, 5)) * time.Millisecond
	rng := rand.New(rand.NewPCG(0, 8))
	loops := [2]w8Loop{ours.loop(0), lean.loop(0)}
	var speed [2][]float64 // add+completes per CPU-second, per window
	for w := range pairWindows {
		for i := range 2 {
			side := (i + w) % 2 // each side goes first in every other pair
			speed[side] = append(speed[side], window(loops[side], per, rng))
		}
	}
	return result{Metrics: pairMetrics(speed[0], speed[1])}, nil
}

// window runs loop for about per and returns its runs per CPU-second.
func window(loop w8Loop, per time.Duration, rng *rand.Rand) float64 {
	cpu0, t0 := cpuTime(), time.Now()
	n := 0
	for time.Since(t0) < per {
		for range 64 {
			loop(rng)
		}
		n += 64
	}
	return float64(n) / (cpuTime() - cpu0).Seconds()
}

// pairMetrics summarises the windows: ours[i] and lean[i] are pair i.
func pairMetrics(ours, lean []float64) map[string]float64 {
	ratios := make([]float64, len(ours))
	for i := range ours {
		ratios[i] = ours[i] / lean[i]
	}
	mid := median(lean)
	var fast, slow []float64
	for i, l := range lean {
		if l > mid {
			fast = append(fast, ratios[i])
		} else {
			slow = append(slow, ratios[i])
		}
	}
	return map[string]float64{
		"ratio":              median(ratios),
		"ratio_min":          slices.Min(ratios),
		"ratio_max":          slices.Max(ratios),
		"ratio_lean_fast":    median(fast),
		"ratio_lean_slow":    median(slow),
		"ops_per_cpu_s":      median(ours),
		"peer_ops_per_cpu_s": median(lean),
	}
}
