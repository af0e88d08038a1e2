//go:build purgatorycheck

package sched

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A Scenario is what the checker runs, again and again, in every order it
// explores: its paths, each on a goroutine of its own, and its clock.
type Scenario struct {
	Name string
	// Start makes the scenario's world, in a fresh synctest bubble, with the
	// checker off (so that goroutines it starts run freely until they next
	// reach a point).
	Start func(t *testing.T) World
	// Clock is the time the clock moves by, step after step: a path of its
	// own, which the checker schedules as any other.
	Clock []time.Duration
	// Skip lists prefixes of the names of points the scenario passes:
	// their code runs as one step with the point before it. A purgatory
	// scenario passes the wheel's ("wheel: "), whose driver then runs only
	// while the clock moves, and the reads of a word no path of it writes.
	Skip []string
}

// World is one run's: its paths, its checks, and its end.
type World struct {
	Paths []Path
	// Check is called after every step, with every goroutine waiting at a
	// point or blocked: the invariants, read from the real structures. It
	// runs on the checker's goroutine, which must not reach a point: it
	// reads the structures' words, and calls no method that has one.
	Check func() error
	// Final is called once no goroutine can go on and the clock has
	// moved all its steps: what must hold at rest. The checker is off by
	// then, and the goroutines still wait where they are.
	Final func() error
	// Stop ends what is left, with the checker off.
	Stop func()
}

// Path is one goroutine of a scenario.
type Path struct {
	Name string
	Run  func()
	// MayBlock: the path may still be blocked when nobody can go on (it
	// waits for something that a run need not bring, as the next use of
	// an operation waits for the last one's Recycle); Stop ends it.
	MayBlock bool
}

// debug prints every step as it is taken (PURGATORY_CHECK_DEBUG=1).
var debug = os.Getenv("PURGATORY_CHECK_DEBUG") == "1"

// clockName is the clock's name in a schedule.
const clockName = "~clock"

// maxSteps ends a run that goes on for ever (a livelock).
const maxSteps = 20_000

// rest is how far the clock moves once nobody can go on and the scenario's
// steps are spent: past every deadline a scenario sets (a few
// milliseconds), so that a run ends with every timeout fired, and not so
// far that the library's periodic timers (the stuck-callback sampler's)
// run many times. It is not a choice: it comes last.
const rest = time.Second

// step is one choice of a run: who could go on, and who did.
type step struct {
	enabled []string // by name, in order; the clock last
	current string   // who went on last (a switch away from it while it may go on is a preemption)
	took    string
	at      *arrival // where it waited (nil for the clock)
	clock   time.Duration
}

// where is where a step's goroutine waited, or how far the clock moved.
func (s step) where() string {
	if s.at == nil {
		return fmt.Sprint("moves by ", s.clock)
	}
	return s.at.place()
}

// result is one run's.
type result struct {
	steps    []step
	err      error
	diverged bool // the run did not follow its schedule (a select chose otherwise)
}

// run runs sc once, in a bubble of its own, taking schedule's choices
// while they last and then choose's.
func run(t *testing.T, sc *Scenario, schedule []string, choose func(i int, enabled []string, current string) string) (r result) {
	return runAs(t, sc, schedule, choose, debug)
}

// runAs is run; with capture, each step keeps where its goroutine waited,
// for a trace, which costs a walk of the stack at every point.
func runAs(t *testing.T, sc *Scenario, schedule []string, choose func(i int, enabled []string, current string) string, capture bool) (r result) {
	synctest.Test(t, func(t *testing.T) {
		w := sc.Start(t)
		synctest.Wait() // what Start started settles, with the checker off
		s := newScheduler()
		s.skip, s.capture = sc.Skip, capture
		active.Store(s)
		var finished, must atomic.Int32
		for _, p := range w.Paths {
			if !p.MayBlock {
				must.Add(1)
			}
			go func() {
				s.name(p.Name)
				At("start")
				p.Run()
				if !p.MayBlock {
					finished.Add(1)
				}
			}()
		}
		r = drive(s, sc, w, schedule, choose)
		if r.err == nil && finished.Load() != must.Load() {
			r.err = fmt.Errorf("%d paths never finished: blocked for good%s", must.Load()-finished.Load(), waitingOn(s))
		}
		active.Store(nil) // Final and Stop call the library with its points off
		if r.err == nil && w.Final != nil {
			r.err = w.Final()
		}
		s.releaseAll()
		w.Stop()
		time.Sleep(rest) // what Stop ended may still sleep before it returns
	})
	return r
}

// drive is a run's loop: let every goroutine reach a point or block, check,
// choose who goes on, until nobody can.
func drive(s *scheduler, sc *Scenario, w World, schedule []string, choose func(int, []string, string) string) (r result) {
	d := &driver{s: s, clock: sc.Clock, schedule: schedule, choose: choose}
	rested := false
	for {
		synctest.Wait()
		s.label()
		if w.Check != nil {
			if r.err = w.Check(); r.err != nil {
				return r
			}
		}
		names, arrivals, ways := choices(s.enabled())
		if len(d.clock) > 0 {
			names = append(names, clockName)
		}
		switch {
		case len(names) == 0 && rested:
			return r
		case len(names) == 0:
			rested = true
			sleep(rest)
			continue
		case len(r.steps) >= maxSteps:
			r.err = fmt.Errorf("no end after %d steps: a livelock", maxSteps)
			return r
		}
		rested = false
		st := d.take(d.pick(&r, names), names, arrivals, ways)
		if debug {
			fmt.Fprintf(os.Stderr, "sched: %d %v → %s %s\n", len(r.steps), names, st.took, st.where())
		}
		r.steps = append(r.steps, st)
	}
}

// take lets took go on: the clock moves, or a goroutine leaves its point
// (by the way it chose, at a Choose).
func (d *driver) take(took string, names []string, arrivals []*arrival, ways []int) step {
	st := step{enabled: names, current: d.current, took: took}
	if took == clockName {
		st.clock = d.clock[0]
		sleep(d.clock[0])
		d.clock = d.clock[1:]
	} else {
		j := index(names, took)
		st.at = arrivals[j]
		d.s.release(st.at, ways[j])
	}
	d.current = goroutineOf(took)
	return st
}

// driver is what drive carries from step to step.
type driver struct {
	s        *scheduler
	clock    []time.Duration // the clock's moves not yet made
	schedule []string
	choose   func(int, []string, string) string
	current  string // the goroutine that took the last step
}

// pick names who takes the next step: the schedule's choice while it lasts
// and is enabled, choose's after. A schedule whose choice is not enabled has
// diverged (a select chose otherwise than in the run it was recorded from).
func (d *driver) pick(r *result, names []string) string {
	i := len(r.steps)
	if i < len(d.schedule) && contains(names, d.schedule[i]) {
		return d.schedule[i]
	}
	if i < len(d.schedule) {
		if debug {
			fmt.Fprintf(os.Stderr, "sched: diverged at %d: wanted %q, enabled %v, blocked%s\n", i, d.schedule[i], names, waitingOn(d.s))
		}
		r.diverged = true
	}
	return d.choose(i, names, d.current)
}

// choices lists who may go on, by name: a goroutine at a Choose once for
// each way ("name?way"), with the arrival and the way of each.
func choices(enabled []*arrival) (names []string, arrivals []*arrival, ways []int) {
	for _, a := range enabled {
		if a.ways == 0 {
			names, arrivals, ways = append(names, a.g.name), append(arrivals, a), append(ways, 0)
			continue
		}
		for w := range a.ways {
			names, arrivals, ways = append(names, a.g.name+"?"+strconv.Itoa(w)), append(arrivals, a), append(ways, w)
		}
	}
	return names, arrivals, ways
}

// goroutineOf is the goroutine a name of choices stands for.
func goroutineOf(name string) string {
	if i := strings.LastIndexByte(name, '?'); i >= 0 {
		return name[:i]
	}
	return name
}

// sleep moves the bubble's clock by d, and a nanosecond more: the checker's
// own timer may fire before another due at the same instant, and return
// before that one has run; the nanosecond fires them all, in order, first.
func sleep(d time.Duration) {
	time.Sleep(d)
	time.Sleep(time.Nanosecond)
}

func contains(names []string, n string) bool { return index(names, n) >= 0 }

// continues reports whether the goroutine that went on last is among
// names (a switch away from it is a preemption), and returns its first name.
func continues(names []string, current string) (string, bool) {
	for _, n := range names {
		if goroutineOf(n) == current {
			return n, true
		}
	}
	return "", false
}

func index(names []string, n string) int {
	for i, m := range names {
		if m == n {
			return i
		}
	}
	return -1
}

// waitingOn describes goroutines left waiting for a held mutex: a deadlock.
func waitingOn(s *scheduler) string {
	var b strings.Builder
	for _, a := range s.blocked() {
		fmt.Fprintf(&b, "; %s waits at %s", a.g.name, a.place())
	}
	return b.String()
}

// trace is a run's schedule as a reader follows it: who went on, where.
func trace(steps []step) string {
	var b strings.Builder
	for i, st := range steps {
		fmt.Fprintf(&b, "\n  %3d  %-28s %s", i, st.took, st.where())
	}
	return b.String()
}
