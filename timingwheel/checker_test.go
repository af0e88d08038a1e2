//go:build purgatorycheck

package timingwheel

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// The wheel's interleaving checker (issue 70): its driver, sleep,
// bring-forward, postponement and hand-over, and its timers' arming,
// Reset and Stop, run as they ship, each path a call of the public API on a
// goroutine of its own, one step at a time in every order within the
// bound (internal/sched). After every step it checks that no timer ran
// before its deadline and that the Observer was told no negative lateness;
// once nobody can go on and every deadline has come, that every arming
// ended once (ran, stopped, replaced by a Reset, refused by a stopped
// wheel, or handed back by its Stop), so that no timer was lost and the
// clock never stopped.
//
// go test -tags purgatorycheck -run TestEveryInterleaving ./timingwheel

// wstep is one call of a path.
type wstep struct {
	kind  wkind
	timer string
	d     time.Duration
}

type wkind uint8

const (
	wArm       wkind = iota // AfterFunc(d) as timer (made by the step)
	wReset                  // Reset(d) of timer, made unarmed at the start
	wStop                   // Stop of timer
	wStopWheel              // the wheel's Stop
	wShutdown               // the wheel's Shutdown
)

// wscenario is a wheel scenario.
type wscenario struct {
	name   string
	inline bool              // the inline executor, whose callbacks run on the driver
	setup  []wstep           // done before the paths start, with the checker off
	paths  [][]wstep         // each path's calls, in order
	clock  []time.Duration   // the clock's steps
	after  map[string]wafter // what a timer's callback does after it records its run
}

type wafter uint8

const (
	armsInner wafter = 1 + iota // arms timer "inner" 1 ms on
	goexits                     // ends its goroutine (runtime.Goexit)
)

func (sc wscenario) scenario() sched.Scenario {
	// One shard: a timer never moves, so its shard's word is never written.
	skip := []string{"wheel: timer's shard load"}
	if !sc.stops() {
		skip = append(skip, "wheel: state load") // nothing writes the wheel's state: its reads commute
	}
	return sched.Scenario{Name: sc.name, Clock: sc.clock, Skip: skip, Start: func(t *testing.T) sched.World {
		w := sc.world(t)
		paths := make([]sched.Path, len(sc.paths))
		for i, steps := range sc.paths {
			paths[i] = sched.Path{Name: pathName(i, steps), Run: func() { w.run(steps) }}
		}
		return sched.World{Paths: paths, Check: w.check, Final: w.final, Stop: func() { w.tw.Stop() }}
	}}
}

// stops reports whether a path stops the wheel.
func (sc wscenario) stops() bool {
	for _, steps := range sc.paths {
		for _, s := range steps {
			if s.kind == wStopWheel || s.kind == wShutdown {
				return true
			}
		}
	}
	return false
}

// world makes the scenario's wheel and timers, and does its setup.
func (sc wscenario) world(t *testing.T) *wworld {
	w := &wworld{timers: map[string]*wtimer{}, stops: sc.stops()}
	opts := []Option{WithShards(1), WithWheelSize(MinWheelSize), WithObserver(w)}
	if sc.inline {
		opts = append(opts, WithExecutor(InlineExecutor()))
	}
	tw, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	w.tw = tw
	for _, steps := range append([][]wstep{sc.setup}, sc.paths...) {
		for _, s := range steps {
			if _, ok := w.timers[s.timer]; !ok && s.timer != "" {
				w.timers[s.timer] = w.newTimer(s.timer, sc.after[s.timer])
			}
		}
	}
	w.timers["inner"] = w.newTimer("inner", 0)
	w.run(sc.setup)
	return w
}

// newTimer makes timer name, unarmed, whose callback records its run and
// then does what after says.
func (w *wworld) newTimer(name string, after wafter) *wtimer {
	wt := &wtimer{name: name}
	wt.t = w.tw.NewTimer(func() {
		w.ran(name)
		switch after {
		case armsInner:
			w.reset("inner", time.Millisecond)
		case goexits:
			runtime.Goexit()
		}
	})
	return wt
}

// run makes a path's calls.
func (w *wworld) run(steps []wstep) {
	for _, s := range steps {
		switch s.kind {
		case wArm, wReset:
			w.reset(s.timer, s.d)
		case wStop:
			w.stop(s.timer, w.timers[s.timer].t.Stop())
		case wStopWheel:
			w.handedBack(w.tw.Stop())
		case wShutdown:
			pending, _ := w.tw.Shutdown(context.Background())
			w.handedBack(pending)
		}
	}
}

// reset arms timer name for d, and records it; where the wheel may stop,
// whether it refused the timer.
func (w *wworld) reset(name string, d time.Duration) {
	t, at := w.timers[name].t, time.Now()
	pending := t.Reset(d)
	w.arm(name, at, d, pending, w.stops && t.Rejected())
}

func (w *wworld) handedBack(pending []func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.handed += len(pending)
}

func pathName(i int, steps []wstep) string {
	names := [...]string{"arm", "reset", "stop", "stop wheel", "shutdown"}
	n := string(rune('0'+i)) + " " + names[steps[0].kind]
	if steps[0].timer != "" {
		n += " " + steps[0].timer
	}
	return n
}

func arm(timer string, d time.Duration) wstep   { return wstep{wArm, timer, d} }
func reset(timer string, d time.Duration) wstep { return wstep{wReset, timer, d} }
func stop(timer string) wstep                   { return wstep{kind: wStop, timer: timer} }

var (
	stopWheel = wstep{kind: wStopWheel}
	shutdown  = wstep{kind: wShutdown}
	ms        = time.Millisecond
)

// wscenarios are the short set: arm, Reset and Stop against the driver's
// sleep, its bring-forward, its postponement and its hand-over; a callback
// that arms another; the wheel's Stop and Shutdown against each.
var wscenarios = []wscenario{
	{name: "asleep on a later deadline; arm long past", setup: []wstep{arm("a", 5*ms)},
		paths: [][]wstep{{arm("b", math.MinInt64)}}, clock: []time.Duration{ms}},
	{name: "reset, stop; the driver idle", paths: [][]wstep{{reset("t", ms)}, {stop("t")}}, clock: []time.Duration{ms}},
	{name: "arm later, arm sooner: the sleep brought forward", paths: [][]wstep{{arm("a", 5*ms)}, {arm("b", ms)}},
		clock: []time.Duration{ms, 4 * ms}},
	{name: "asleep on a; stop a, arm b: the sleep moved on", setup: []wstep{arm("a", ms)},
		paths: [][]wstep{{stop("a")}, {arm("b", 2*ms)}}, clock: []time.Duration{ms, ms}},
	{name: "asleep; reset to never, reset to now", setup: []wstep{arm("a", 2*ms)},
		paths: [][]wstep{{reset("a", math.MaxInt64)}, {reset("t", math.MinInt64)}}, clock: []time.Duration{ms}},
	{name: "arm, stop the wheel", setup: []wstep{arm("a", 2*ms)},
		paths: [][]wstep{{arm("b", ms)}, {stopWheel}}, clock: []time.Duration{ms}},
	{name: "reset, shutdown", setup: []wstep{arm("a", ms)},
		paths: [][]wstep{{reset("t", ms)}, {shutdown}}, clock: []time.Duration{ms}},
	{name: "hand-over: an inline callback ends its goroutine; arm, reset", inline: true, setup: []wstep{arm("a", ms)},
		paths: [][]wstep{{arm("b", 2*ms)}, {reset("t", ms)}}, clock: []time.Duration{ms, ms}, after: map[string]wafter{"a": goexits}},
	{name: "inline: a callback arms another; stop the wheel", inline: true, setup: []wstep{arm("a", ms)},
		paths: [][]wstep{{stop("inner")}, {stopWheel}}, clock: []time.Duration{ms, ms}, after: map[string]wafter{"a": armsInner}},
}

// TestEveryInterleaving runs every wheel scenario within the bound
// (sched.Bound); under -race, underRace's at a bound of 1, the README's test
// command's share.
func TestEveryInterleaving(t *testing.T) {
	for _, sc := range sched.Scenarios(wscenarios, longWheel, func(sc wscenario) string { return sc.name }, underRace) {
		t.Run(sc.name, func(t *testing.T) { sched.Check(t, sc.scenario(), len(sc.paths)) })
	}
}

// longWheel are CI's long step's (PURGATORY_LONG=1).
var longWheel = []wscenario{
	{name: "asleep on a later deadline; arm long past, arm soon", setup: []wstep{arm("a", 5*ms)},
		paths: [][]wstep{{arm("b", math.MinInt64)}, {arm("c", ms)}}, clock: []time.Duration{ms, ms}},
	{name: "a callback arms another (pool); reset it, stop it", setup: []wstep{arm("a", ms)},
		paths: [][]wstep{{reset("a", ms)}, {stop("inner")}}, clock: []time.Duration{ms, ms}, after: map[string]wafter{"a": armsInner}},
}

// underRace are the scenarios the README's go test -race runs: the driver's
// bring-forward and the wheel's Stop (see sched.Scenarios).
var underRace = map[string]bool{"arm later, arm sooner: the sleep brought forward": true, "arm, stop the wheel": true}
