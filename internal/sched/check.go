//go:build purgatorycheck

package sched

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bound is the preemptions a schedule may have: PURGATORY_CHECK_BOUND's,
// else 2, loom's default, or 1 under -race, where each schedule costs ten
// times as much and the README's test command runs a share of the
// scenarios.
func Bound() int {
	if n, err := strconv.Atoi(os.Getenv("PURGATORY_CHECK_BOUND")); err == nil {
		return n
	}
	if race {
		return 1
	}
	return 2
}

// randomRuns is how many schedules PCT runs for a scenario of four paths
// or more (PURGATORY_CHECK_RUNS to change it), and randomDepth its depth.
const (
	randomRuns  = 3000
	randomDepth = 3
)

// Check runs sc as its size calls for, and logs what it ran: every
// schedule within the bound for up to three paths, else PCT's random
// schedules from the seed PURGATORY_CHECK_SEED gives (or a fresh one,
// printed).
func Check(t *testing.T, sc Scenario, paths int) {
	t.Helper()
	start := time.Now()
	var st Stats
	how := fmt.Sprintf("bound %d", Bound())
	if paths <= 3 {
		st = Explore(t, sc, Bound())
	} else {
		seed, runs := seedAndRuns()
		how = fmt.Sprintf("PCT, depth %d, seed %d", randomDepth, seed)
		st = Random(t, sc, seed, runs, randomDepth)
	}
	t.Logf("%d schedules (%s; %d diverged), the longest %d steps, in %v", st.Runs, how, st.Diverged, st.Longest, time.Since(start).Round(time.Millisecond))
}

func seedAndRuns() (uint64, int) {
	seed, err := strconv.ParseUint(os.Getenv("PURGATORY_CHECK_SEED"), 10, 64)
	if err != nil {
		seed = uint64(time.Now().UnixNano())
	}
	runs, err := strconv.Atoi(os.Getenv("PURGATORY_CHECK_RUNS"))
	if err != nil {
		runs = randomRuns
	}
	return seed, runs
}

// Scenarios returns the scenarios this process runs, in order: short, and
// with PURGATORY_LONG=1 long too, less those another process runs when
// PURGATORY_CHECK_SHARD ("k/n") splits them among n; under the race
// detector, only those underRace names (a checker's goroutines run one at
// a time, so the detector sees little, at ten times the time).
func Scenarios[S any](short, long []S, name func(S) string, underRace map[string]bool) []S {
	all := short
	if os.Getenv("PURGATORY_LONG") == "1" {
		all = append(all[:len(all):len(all)], long...)
	}
	var mine []S
	for i, sc := range all {
		if inShard(i) && (!race || underRace[name(sc)]) {
			mine = append(mine, sc)
		}
	}
	return mine
}

// inShard reports whether the i-th scenario is this process's to run.
func inShard(i int) bool {
	k, n, ok := strings.Cut(os.Getenv("PURGATORY_CHECK_SHARD"), "/")
	if !ok {
		return true
	}
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	return err1 != nil || err2 != nil || ni <= 0 || i%ni == ki
}
