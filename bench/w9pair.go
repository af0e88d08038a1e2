package main

import (
	"runtime"
	"time"
)

// W9pair is W9 at W receivers, the purgatory against pooled lean, both in one
// process: short W9 runs of each in turn, each system first in every other
// pair, as W5pair does for W5. At 10 receivers W9's processes spread by
// about ±10 % from run to run (issue 49's look at it: 0.83x to 1.12x lean's
// CPU per item over four pairs of processes), more than the difference it
// is meant to judge; a change of the machine's speed comes in phases of
// seconds and moves both runs of a pair here. Each run is W9 itself (w9:
// the same producer, receivers and measures) for 2 s of pushing, on a
// system made for it and closed after it, with a collection before its
// pushes. A pair's ratio is ours over lean's, of CPU per item and of
// push-to-receive p99; the report gives the median pair's.
var w9PairSystems = []string{"purgatory"}

// w9PairPeer is what the purgatory is paired with.
const w9PairPeer = "lean-pooled"

func w9pair(system string, p params) (result, error) {
	run := p
	run.duration = time.Duration(p.n(2_000, 300)) * time.Millisecond
	pairs := p.n(6, 2)
	names := [2]string{system, w9PairPeer}
	var cpu, p99 [2][]float64
	var lost, twice float64
	for i := range pairs {
		for j := range 2 {
			side := (i + j) % 2 // each side goes first in every other pair
			runtime.GC()
			r, err := w9(names[side], run)
			if err != nil {
				return result{}, err
			}
			m := r.Metrics
			cpu[side] = append(cpu[side], m["cpu_us_per_item"])
			p99[side] = append(p99[side], m["lat_p99_ms"])
			lost += m["lost"]
			twice += m["twice"]
		}
	}
	metrics := pairSummary(cpu[0], cpu[1], "cpu_us_per_item")
	lat := pairSummary(p99[0], p99[1], "lat_p99_ms")
	metrics["p99_ratio"] = lat["ratio"]
	metrics["lat_p99_ms"] = lat["lat_p99_ms"]
	metrics["peer_lat_p99_ms"] = lat["peer_lat_p99_ms"]
	metrics["receivers"] = float64(p.receivers)
	metrics["lost"] = lost
	metrics["twice"] = twice
	return result{Metrics: metrics}, nil
}
