package main

import (
	"runtime"
	"slices"
	"time"
)

// W5pair is W5 at K keys, the purgatory against naive, both in one process:
// short W5 runs of each in turn, each system first in every other pair. W5's
// processes spread by 10 to 25 % from run to run on a shared machine (W5keys
// at 10,000 keys read 0.93x, 0.96x, 1.09x and 1.04x naive in four full runs),
// more than the cuts it is meant to judge; a change of the machine's speed
// comes in phases of seconds and moves both runs of a pair here rather than
// one process of a system. Each run is W5 itself (w5: the same traffic, seed
// and measures) for 3 s of arrivals, on a system made for it and closed
// after it, with a collection before it so that neither inherits the
// other's garbage. A pair's ratio is ours over naive's CPU per request; the
// report gives the median pair. A run is shorter than W5's (3 s of arrivals
// against 5 or 10): its first second fills the purgatory, so its lists are
// shorter on average than at W5's steady state.
var w5PairSystems = []string{"purgatory"}

// w5PairPeer is what the purgatory is paired with.
const w5PairPeer = "naive"

// w5PairKeys are W5pair's key counts: those of issue 49's W5 targets.
func w5PairKeys(p params) []int {
	if p.quick {
		return []int{10, 1_000}
	}
	return []int{1_000, 10_000, 100_000}
}

func w5pair(system string, p params) (result, error) {
	keys := p.keys
	if keys == 0 {
		keys = w5Keys
	}
	length := time.Duration(p.n(3_000, 300)) * time.Millisecond
	rate := p.n(100_000, 20_000)
	pairs := 6
	if p.quick {
		pairs = 2
	}
	names := [2]string{system, w5PairPeer}
	var cpu [2][]float64 // µs per request, per run
	var lost, twice float64
	for i := range pairs {
		for j := range 2 {
			side := (i + j) % 2 // each side goes first in every other pair
			d, err := newDelayed(names[side])
			if err != nil {
				return result{}, err
			}
			runtime.GC()
			m := w5(d, rate, keys, length, false).Metrics
			d.close()
			cpu[side] = append(cpu[side], m["cpu_us_per_req"])
			lost += m["lost"]
			twice += m["ended_twice"]
		}
	}
	metrics := w5PairMetrics(cpu[0], cpu[1])
	metrics["keys"] = float64(keys)
	metrics["lost"] = lost
	metrics["ended_twice"] = twice
	return result{Metrics: metrics}, nil
}

// w5PairMetrics summarises the pairs: ours[i] and naive[i] are pair i's CPU
// per request.
func w5PairMetrics(ours, naive []float64) map[string]float64 {
	return pairSummary(ours, naive, "cpu_us_per_req")
}

// pairSummary summarises pairs of runs of a measure, named metric: ours[i] and
// peer[i] are pair i's. It gives the median pair's ratio, ours over the
// peer's, the lowest and highest, and each side's median.
func pairSummary(ours, peer []float64, metric string) map[string]float64 {
	ratios := make([]float64, len(ours))
	for i := range ours {
		ratios[i] = ours[i] / peer[i]
	}
	return map[string]float64{
		"ratio":          median(ratios),
		"ratio_min":      slices.Min(ratios),
		"ratio_max":      slices.Max(ratios),
		metric:           median(ours),
		"peer_" + metric: median(peer),
	}
}
