package main

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// W8pair is W8 at G goroutines (1 and 2) with reused operations against
// pooled lean, both in one process, timed in alternate windows: a change of
// the machine's speed, which on a shared machine comes in phases of
// seconds, moves both sides of a window pair rather than one process of a
// system. In a window, G goroutines each run their own loop of one side
// (W8's, on a key of their own). Each window counts add+completes per
// CPU-second of the process; a pair's ratio is ours over lean's. The
// report gives the median ratio, and the median ratio over the pairs where
// lean ran above its median speed and over those where it ran below: apart,
// they show how much more a slow phase costs one system than the other.
// 100,000 operations are parked first on 1 h timeouts under 1,000 other
// keys for each system, as in W8.
var pairSystems = []string{"purgatory-reused"}

// pairGoroutines are W8pair's goroutine counts: issue 49's W8 targets are at
// one goroutine, and a library change must not lower its ratios at two.
func pairGoroutines(params) []int { return []int{1, 2} }

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
	g := max(p.goroutines, 1)
	var loops [2][]w8Loop // each side's, one per goroutine
	var rngs []*rand.Rand // each goroutine's
	for i := range g {
		loops[0] = append(loops[0], ours.loop(i))
		loops[1] = append(loops[1], lean.loop(i))
		rngs = append(rngs, rand.New(rand.NewPCG(uint64(i), 8)))
	}
	var speed [2][]float64 // add+completes per CPU-second, per window
	for w := range pairWindows {
		for i := range 2 {
			side := (i + w) % 2 // each side goes first in every other pair
			speed[side] = append(speed[side], window(loops[side], per, rngs))
		}
	}
	m := pairMetrics(speed[0], speed[1])
	m["goroutines"] = float64(g)
	return result{Metrics: m}, nil
}

// window runs each of loops on a goroutine of its own, with the rng of the
// same index, for about per, and returns their runs per CPU-second of the
// process. At one goroutine it runs the loop on the caller's.
func window(loops []w8Loop, per time.Duration, rngs []*rand.Rand) float64 {
	cpu0, t0 := cpuTime(), time.Now()
	run := func(loop w8Loop, rng *rand.Rand) int64 {
		n := int64(0)
		for time.Since(t0) < per {
			for range 64 {
				loop(rng)
			}
			n += 64
		}
		return n
	}
	var total atomic.Int64
	if len(loops) == 1 {
		total.Add(run(loops[0], rngs[0])) // no goroutine to start
	} else {
		var wg sync.WaitGroup
		for i, loop := range loops {
			wg.Go(func() { total.Add(run(loop, rngs[i])) })
		}
		wg.Wait()
	}
	return float64(total.Load()) / (cpuTime() - cpu0).Seconds()
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
