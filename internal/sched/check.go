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

// Mine reports whether the i-th scenario is this process's to run, when
// PURGATORY_CHECK_SHARD ("k/n") splits them among n processes.
func Mine(i int) bool {
	k, n, ok := strings.Cut(os.Getenv("PURGATORY_CHECK_SHARD"), "/")
	if !ok {
		return true
	}
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	return err1 != nil || err2 != nil || ni <= 0 || i%ni == ki
}
