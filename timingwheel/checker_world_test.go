//go:build purgatorycheck

package timingwheel

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// The wheel's interleaving checker (checker_test.go): its world, and the
// accounts it keeps of every timer.

// wworld is one run of a wheel scenario.
type wworld struct {
	tw     *TimingWheel
	timers map[string]*wtimer
	stops  bool // a path stops the wheel

	mu      sync.Mutex // guards the accounts below and each wtimer's; held only between points
	errs    []string
	handed  int  // callbacks the wheel's Stop handed back
	stopped bool // the wheel's Stop or Shutdown has run
}

// wtimer is one timer of a scenario and what was done with it. Which
// arming a run answers is not recorded as it happens (a run may come
// between an arming and its record); final matches them.
type wtimer struct {
	name     string
	t        *Timer
	arms     []arming
	runs     []time.Time
	stops    int // Stops that returned true
	replaced int // Resets that returned true
	rejected int // armings a stopped wheel refused
}

// arming is one arming: made at or after at, due at deadline (never:
// beyond the test's reach).
type arming struct {
	at, deadline time.Time
	never        bool
}

func (w *wworld) fail(format string, a ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf(format, a...))
}

// arm records an arming of timer name for d, asked for at at (read before
// the call); pending is Reset's answer, rejected the wheel's refusal.
func (w *wworld) arm(name string, at time.Time, d time.Duration, pending, rejected bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.timers[name]
	a := arming{at: at, never: d > time.Hour}
	if !a.never {
		a.deadline = at.Add(max(d, 0))
	}
	wt.arms = append(wt.arms, a)
	if pending {
		wt.replaced++
	}
	if rejected {
		wt.rejected++
	}
}

// ran records a run of timer name.
func (w *wworld) ran(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.timers[name]
	wt.runs = append(wt.runs, time.Now())
}

// stop records a Stop of timer name that returned ok.
func (w *wworld) stop(name string, ok bool) {
	if ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.timers[name].stops++
	}
}

// TimerFired is the world's Observer: a lateness is never negative.
func (w *wworld) TimerFired(d time.Duration) {
	if d < 0 {
		w.fail("the Observer was told a lateness of %v", d)
	}
}

// check reports the first violation met.
func (w *wworld) check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 {
		return fmt.Errorf("%s", w.errs[0])
	}
	return nil
}

// final is what holds once nobody can go on and every timer's time has
// come: no run before the deadline of an arming it can answer, and every
// arming accounted for (ran, stopped, replaced, refused, or handed back by
// the wheel's Stop, as many as it says), none whose time has come left
// open, and the wheel holding those never due.
func (w *wworld) final() error {
	if err := w.check(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	open, never := 0, 0
	for _, wt := range w.timers {
		if err := wt.noneEarly(); err != nil {
			return err
		}
		n := len(wt.arms) - len(wt.runs) - wt.stops - wt.replaced - wt.rejected
		if n < 0 {
			return fmt.Errorf("%s: %d armings, %d runs, %d Stops and %d Resets that took one, %d refused", wt.name, len(wt.arms), len(wt.runs), wt.stops, wt.replaced, wt.rejected)
		}
		open += n
		never += min(n, wt.nevers())
	}
	switch {
	case w.stopped && open != w.handed:
		return fmt.Errorf("the wheel stopped with %d armings open, and handed back %d", open, w.handed)
	case !w.stopped && open != never:
		return fmt.Errorf("%d armings open whose time has come: the clock stopped (%d never due)", open-never, never)
	case !w.stopped && w.tw.Len() != never:
		return fmt.Errorf("Len %d with %d timers pending", w.tw.Len(), never)
	}
	return nil
}

func (wt *wtimer) nevers() int {
	n := 0
	for _, a := range wt.arms {
		if a.never {
			n++
		}
	}
	return n
}

// noneEarly matches each run, in order, with an arming made before it
// whose deadline it is not before, the soonest due first: a run that finds
// none ran early.
func (wt *wtimer) noneEarly() error {
	used := make([]bool, len(wt.arms))
	runs := slices.Clone(wt.runs)
	slices.SortFunc(runs, func(a, b time.Time) int { return a.Compare(b) })
	for _, r := range runs {
		best := -1
		for i, a := range wt.arms {
			if used[i] || a.never || a.at.After(r) || a.deadline.After(r) {
				continue
			}
			if best < 0 || a.deadline.Before(wt.arms[best].deadline) {
				best = i
			}
		}
		if best < 0 {
			return fmt.Errorf("%s ran at %v, before the deadline of every arming it could answer (%v)", wt.name, r, wt.arms)
		}
		used[best] = true
	}
	return nil
}
