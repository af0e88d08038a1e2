//go:build purgatorycheck

package sched

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Stats is what an exploration did.
type Stats struct {
	Runs     int // schedules run
	Diverged int // runs that did not follow the schedule asked for (a select's own choice)
	Longest  int // the most steps of one run
}

// ReplayEnv names the environment variable that replays one schedule of a
// scenario, as a failure prints it: "scenario name|schedule".
const ReplayEnv = "PURGATORY_CHECK_REPLAY"

// Explore runs sc in every order with at most bound preemptions (a switch
// away from a goroutine that could have gone on; loom's default is 2),
// depth first, each schedule from a fresh start, and returns what it ran.
// The first run that breaks a check fails t with its trace and the
// schedule that replays it.
func Explore(t *testing.T, sc Scenario, bound int) Stats {
	t.Helper()
	if replay(t, sc) {
		return Stats{Runs: 1}
	}
	return explore(t, sc, bound, func(r result) { fail(t, sc, r) })
}

// explore runs every schedule within bound, depth first, and hands each
// run that breaks a check to failed, if it is not nil.
func explore(t *testing.T, sc Scenario, bound int, failed func(result)) Stats {
	var st Stats
	var stack []node
	var schedule []string
	for {
		r := run(t, &sc, schedule, keepGoing)
		st.add(r)
		if r.err != nil && failed != nil {
			failed(r)
		}
		stack = grow(stack, r.steps, len(schedule))
		if schedule = next(stack, bound); schedule == nil {
			return st
		}
	}
}

// node is one choice of the depth-first search: the run's step, the
// choices tried there, and the preemptions spent before it.
type node struct {
	step
	tried  map[string]bool
	before int
}

// grow puts a run's steps past the schedule it followed on the stack.
func grow(stack []node, steps []step, from int) []node {
	stack = stack[:min(from, len(stack), len(steps))]
	before := 0
	if len(stack) > 0 {
		last := stack[len(stack)-1]
		before = last.before + cost(last.step, last.took)
	}
	for _, s := range steps[len(stack):] {
		stack = append(stack, node{step: s, tried: map[string]bool{s.took: true}, before: before})
		before += cost(s, s.took)
	}
	return stack
}

// next returns the schedule to run next: the deepest choice not tried
// within the bound, with the choices before it; nil when none is left.
func next(stack []node, bound int) []string {
	for i := len(stack) - 1; i >= 0; i-- {
		n := &stack[i]
		for _, alt := range n.enabled {
			if n.tried[alt] || n.before+cost(n.step, alt) > bound {
				continue
			}
			n.tried[alt] = true
			n.took = alt // the run of this schedule continues the stack from here
			schedule := make([]string, i+1)
			for j := range i {
				schedule[j] = stack[j].took
			}
			schedule[i] = alt
			return schedule
		}
	}
	return nil
}

// cost is 1 for a preemption: taking other than the goroutine that went
// on last while it may go on.
func cost(s step, took string) int {
	if _, ok := continues(s.enabled, s.current); ok && goroutineOf(took) != s.current {
		return 1
	}
	return 0
}

// keepGoing is the choice past a schedule's end: the goroutine that went
// on last, if it may, else the first by name (the clock last).
func keepGoing(_ int, enabled []string, current string) string {
	if n, ok := continues(enabled, current); ok {
		return n
	}
	return enabled[0]
}

func (st *Stats) add(r result) {
	st.Runs++
	if r.diverged {
		st.Diverged++
	}
	st.Longest = max(st.Longest, len(r.steps))
}

// Random runs n schedules of sc chosen by PCT (Burckhardt et al.'s
// probabilistic concurrency testing: random priorities, and depth-1 points
// at which the running goroutine drops to the lowest), from seed; a failure
// says the seed and the schedule.
func Random(t *testing.T, sc Scenario, seed uint64, n, depth int) Stats {
	t.Helper()
	if replay(t, sc) {
		return Stats{Runs: 1}
	}
	var st Stats
	longest := 64
	for i := range n {
		p := newPCT(rand.New(rand.NewPCG(seed, uint64(i))), depth, longest)
		r := run(t, &sc, nil, p.choose)
		st.add(r)
		longest = max(longest, len(r.steps))
		if r.err != nil {
			t.Logf("PCT seed %d, schedule %d", seed, i)
			fail(t, sc, r)
		}
	}
	return st
}

// pct is one PCT schedule: each goroutine's priority, met in order, and
// the steps at which the running one drops.
type pct struct {
	r        *rand.Rand
	priority map[string]int
	drops    map[int]bool
	low      int
}

func newPCT(r *rand.Rand, depth, longest int) *pct {
	p := &pct{r: r, priority: map[string]int{}, drops: map[int]bool{}}
	for range depth - 1 {
		p.drops[r.IntN(longest)] = true
	}
	return p
}

func (p *pct) choose(i int, enabled []string, current string) string {
	if p.drops[i] && current != "" {
		p.low--
		p.priority[current] = p.low
	}
	best := ""
	for _, n := range enabled {
		g := goroutineOf(n)
		if _, ok := p.priority[g]; !ok {
			p.priority[g] = 1 + p.r.IntN(1_000_000)
		}
		if best == "" || p.priority[g] > p.priority[goroutineOf(best)] {
			best = n
		}
	}
	if g := goroutineOf(best); best != g { // a Choose: a way at random
		best = g + "?" + strconv.Itoa(p.r.IntN(strings.Count(strings.Join(enabled, "\n"), g+"?")))
	}
	return best
}

// fail fails t with r's error, its trace and the schedule that replays it:
// the schedule is run once more keeping where each step waited.
func fail(t *testing.T, sc Scenario, r result) {
	t.Helper()
	took := make([]string, len(r.steps))
	for i, s := range r.steps {
		took[i] = s.took
	}
	if again := runAs(t, &sc, took, keepGoing, true); again.err != nil && len(again.steps) == len(r.steps) {
		r = again
	}
	t.Fatalf("scenario %q: %v\nafter %d steps:%s\nreplay: %s='%s|%s'", sc.Name, r.err, len(r.steps), trace(r.steps),
		ReplayEnv, sc.Name, strings.Join(took, ","))
}

// replay runs the schedule ReplayEnv gives for sc, if it names sc, and
// reports whether it did.
func replay(t *testing.T, sc Scenario) bool {
	name, schedule, ok := strings.Cut(os.Getenv(ReplayEnv), "|")
	if !ok || name != sc.Name {
		return false
	}
	r := run(t, &sc, strings.Split(schedule, ","), keepGoing)
	if r.err != nil {
		fail(t, sc, r)
	}
	t.Logf("replayed %d steps, no failure:%s", len(r.steps), trace(r.steps))
	return true
}
