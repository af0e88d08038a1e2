package purgatory_test

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// The clock never stops (issue 69): every entry that takes a duration or a
// deadline (clock_entries_test.go) accepts every value, from math.MinInt64
// to math.MaxInt64, whatever the driver is doing when it is armed, and ends
// on time: never early, at most a tick late under synctest and at most 50 ms
// in real time; or never, for a duration beyond the wheel's range. Before
// the fix one deadline of MinInt64 armed while the driver slept on a later
// one stopped every timer of the wheel for good, and every test passed.

const tick = timingwheel.DefaultTick

// extremes are the durations every entry is armed with.
var extremes = []time.Duration{
	math.MinInt64, math.MinInt64 + 1, -time.Hour, -1, 0, 1,
	tick - 1, tick, tick + 1, math.MaxInt64 - 1, math.MaxInt64,
}

// horizon: an arming of d at or past it does not end while a test runs.
const horizon = 100 * 365 * 24 * time.Hour

type endKind uint8

const (
	timedOut endKind = iota // ran, expired, or done at its deadline
	ended                   // refused by a stopped wheel, or closed with its purgatory
)

// arming is one arming of one entry, and every end it reported.
type arming struct {
	d      time.Duration
	start  time.Time // just before the arm: no end may come sooner than start+d
	checks []func(t *testing.T)

	mu   sync.Mutex
	ends []end
}

type end struct {
	at   time.Time
	kind endKind
	what string
}

func (a *arming) end(kind endKind, what string) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ends = append(a.ends, end{now, kind, what})
}

// fired is a timer's callback.
func (a *arming) fired() { a.end(timedOut, "ran") }

// refused reports a timer that a stopped wheel refused.
func (a *arming) refused(rejected bool) {
	if rejected {
		a.end(ended, "rejected")
	}
}

// ended reports an operation's end by its outcome.
func (a *arming) ended(o purgatory.Outcome) {
	switch o {
	case purgatory.Expired:
		a.end(timedOut, o.String())
	default:
		a.end(ended, o.String())
	}
}

func (a *arming) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ends)
}

// clockRig is a wheel in one of the driver's states, with a purgatory on it.
type clockRig struct {
	tw      *timingwheel.TimingWheel
	p       *purgatory.Purgatory[int]
	slack   time.Duration // how late an end may be
	settle  func()        // lets the driver reach the state: synctest.Wait, or a short sleep
	cleanup []func()
	waits   sync.WaitGroup // the parked waiters
	handed  int            // stopping: the entry's timers that the wheel's Stop handed back
	made    time.Time      // when the wheel was made
	late    latenesses     // what the wheel's Observer was told
}

func newClockRig(t *testing.T, s driverState, slack time.Duration, settle func()) *clockRig {
	r := &clockRig{slack: slack, settle: settle, made: time.Now()}
	tw, err := timingwheel.New(append(s.opts[:len(s.opts):len(s.opts)], timingwheel.WithObserver(&r.late))...)
	require.NoError(t, err)
	r.p, err = purgatory.New[int]("clock", purgatory.WithTimingWheel(tw))
	require.NoError(t, err)
	r.tw = tw
	return r
}

// latenesses is a StartObserver that keeps what it is told.
type latenesses struct {
	mu             sync.Mutex
	fired, started []time.Duration
}

func (l *latenesses) TimerFired(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fired = append(l.fired, d)
}

func (l *latenesses) CallbackStarted(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = append(l.started, d)
}

// check requires every lateness told to be true: never negative, and no
// more than the wheel has lived (a deadline before the wheel's start counts
// from its start).
func (l *latenesses) check(t *testing.T, made time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lived := time.Since(made)
	for _, d := range append(l.fired, l.started...) {
		assert.True(t, d >= 0 && d <= lived, "the Observer was told a lateness of %v by a wheel %v old", d, lived)
	}
}

// close ends what is left (the armings that never end) and waits for the
// waiters, so that no goroutine outlives the case.
func (r *clockRig) close() {
	for _, f := range r.cleanup {
		f()
	}
	r.p.Close()
	r.waits.Wait()
	r.tw.Stop()
}

// driverState puts the driver in one state when the entry is armed: before
// runs first, then the arm (through via, if set: from inside a callback),
// then after.
type driverState struct {
	name   string
	opts   []timingwheel.Option
	before func(r *clockRig, hold *held)
	via    func(r *clockRig, arm func())
	after  func(r *clockRig, hold *held)
	stops  bool // the wheel stops while the entry is armed
}

// held is what a state holds while the entry is armed.
type held struct {
	release chan struct{}
	stopped chan []func()
}

func noop() {}

// blockCallback arms a callback due now that holds the driver (or a worker)
// until the state releases it, then calls then, and waits until it runs.
func blockCallback(r *clockRig, hold *held, then func()) {
	hold.release = make(chan struct{})
	running := make(chan struct{})
	r.tw.AfterFunc(0, func() {
		close(running)
		<-hold.release
		then()
	})
	<-running
}

func release(_ *clockRig, hold *held) { close(hold.release) }

var inline = []timingwheel.Option{timingwheel.WithExecutor(timingwheel.InlineExecutor()), timingwheel.WithShards(1)}

var driverStates = []driverState{
	{name: "idle"},
	{name: "asleep on a later deadline", before: func(r *clockRig, _ *held) {
		r.tw.AfterFunc(time.Second, noop)
		r.settle()
	}},
	{name: "asleep on a deadline within the tick", before: func(r *clockRig, _ *held) {
		r.tw.AfterFunc(tick/2, noop)
		r.settle()
	}},
	{name: "brought forward", before: func(r *clockRig, _ *held) {
		r.tw.AfterFunc(time.Second, noop)
		r.settle()
		r.tw.AfterFunc(2*tick, noop) // its sleep re-armed where it sleeps
	}},
	{name: "moved on by a Stop", before: func(r *clockRig, _ *held) {
		r.tw.AfterFunc(time.Second, noop)
		near := r.tw.AfterFunc(tick/2, noop)
		r.settle()
		near.Stop() // the deadline it slept for: postponed to the second
	}},
	{name: "running a callback (pool)", before: func(r *clockRig, hold *held) {
		blockCallback(r, hold, noop)
	}, after: release},
	{name: "running a callback (inline)", opts: inline, before: func(r *clockRig, hold *held) {
		blockCallback(r, hold, noop)
	}, after: release},
	{name: "inside a callback (inline)", opts: inline, via: func(r *clockRig, arm func()) {
		done := make(chan struct{})
		r.tw.AfterFunc(0, func() { arm(); close(done) })
		<-done
	}},
	{name: "handing its role over (inline, Goexit)", opts: inline, before: func(r *clockRig, hold *held) {
		blockCallback(r, hold, runtime.Goexit)
	}, after: release},
	{name: "stopping", stops: true, before: func(r *clockRig, hold *held) {
		r.tw.AfterFunc(time.Second, noop) // handed back by the Stop
		r.settle()
		hold.stopped = make(chan []func(), 1)
		go func() { hold.stopped <- r.tw.Stop() }() // races the arm
	}, after: func(r *clockRig, hold *held) {
		r.handed = len(<-hold.stopped) - 1
	}},
}

// armIn arms e with d on a rig in state s.
func armIn(r *clockRig, s driverState, e clockEntry, d time.Duration) *arming {
	var hold held
	if s.before != nil {
		s.before(r, &hold)
	}
	a := &arming{d: d}
	arm := func() {
		a.start = time.Now()
		e.arm(r, a)
	}
	if s.via != nil {
		s.via(r, arm)
	} else {
		arm()
	}
	if s.after != nil {
		s.after(r, &hold)
	}
	return a
}

// want is how many ends an arming must report once its time has come.
func want(s driverState, e clockEntry, d time.Duration) int {
	switch {
	case d < horizon:
		return 1
	case s.stops && e.kind != wheelContext: // handed back (counted apart), refused or closed
		return 1
	}
	return 0
}

// check requires of a's ends: as many as want says (a timer handed back by
// a stopping wheel counts as one), each timed-out end never early and at
// most r.slack late, and the contexts' side-by-side checks.
func (r *clockRig) check(t *testing.T, s driverState, e clockEntry, a *arming) {
	a.mu.Lock()
	ends := append([]end(nil), a.ends...)
	a.mu.Unlock()
	due := a.start.Add(max(a.d, 0))
	for _, en := range ends {
		if en.kind == timedOut {
			assert.False(t, en.at.Before(due), "%s %v after the arm: early by %v", en.what, en.at.Sub(a.start), due.Sub(en.at))
			assert.LessOrEqual(t, en.at.Sub(due), r.slack, "%s %v late", en.what, en.at.Sub(due))
		}
	}
	n, wantN := len(ends), want(s, e, a.d)
	if s.stops {
		switch e.kind {
		case wheelTimer:
			n += r.handed
			if e.rearms && r.handed == 1 && len(ends) == 1 && ends[0].what == "rejected" {
				wantN = 2 // the Stop came between its two arms: the first handed back, the second refused
			}
		case wheelOp:
			if r.handed > 0 { // the purgatory closed the operation whose timeout the Stop handed back
				assert.True(t, len(ends) == 1 && ends[0].kind == ended, "the Stop handed back the timeout of an operation that did not end Closed: %v", ends)
			}
		default:
			assert.Zero(t, r.handed, "the wheel's Stop handed back a timer of a context or a parked wait")
		}
	}
	assert.Equal(t, wantN, n, "ends %v (handed back by Stop: %d)", ends, r.handed)
	r.late.check(t, r.made)
	for _, c := range a.checks {
		c(t)
	}
}

// clockCases runs every entry with every extreme in every driver state.
func clockCases(t *testing.T, run func(t *testing.T, s driverState, e clockEntry, d time.Duration)) {
	for _, s := range driverStates {
		for _, e := range clockEntries {
			for _, d := range extremes {
				if d == 0 && e.zeroPanics {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%d", s.name, e.name, d), func(t *testing.T) { run(t, s, e, d) })
			}
		}
	}
}

// TestClockNeverStops arms every entry with every extreme in every state of
// the driver, in a synctest bubble: each ends exactly at its deadline, at
// most a tick late, or never.
func TestClockNeverStops(t *testing.T) {
	clockCases(t, func(t *testing.T, s driverState, e clockEntry, d time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			r := newClockRig(t, s, tick, synctest.Wait)
			defer r.close()
			a := armIn(r, s, e, d)
			time.Sleep(2 * time.Second) // every deadline within the horizon has come
			synctest.Wait()
			r.check(t, s, e, a)
		})
	})
}

// TestClockNeverStopsRealTime is the table in real time, on the machine's
// clock, where on time means never early and at most 50 ms late. It runs
// in CI's real-time step (PURGATORY_REALTIME=1), without -race, since a
// 2-core machine building and racing other packages cannot promise 50 ms.
func TestClockNeverStopsRealTime(t *testing.T) {
	if os.Getenv("PURGATORY_REALTIME") != "1" {
		t.Skip("real time: set PURGATORY_REALTIME=1 (CI's real-time step)")
	}
	const slack = 50 * time.Millisecond
	clockCases(t, func(t *testing.T, s driverState, e clockEntry, d time.Duration) {
		r := newClockRig(t, s, slack, func() { time.Sleep(2 * time.Millisecond) })
		defer r.close()
		a := armIn(r, s, e, d)
		n := want(s, e, d)
		if s.stops && e.kind == wheelTimer {
			n -= r.handed // ended already
		}
		for deadline := time.Now().Add(time.Second); a.count() < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // an end too many, or one that should never come
		r.check(t, s, e, a)
	})
}

// TestClockNeverStopsManual is the table for a wheel made WithManualClock:
// a timer armed with each extreme and AdvanceClock called with each extreme
// for its timeout. AdvanceClock returns true exactly when the timer comes
// due within its timeout, at its deadline, having run it; false once the
// timeout has passed (at once for one of zero or less); and a wait for ever
// on a timer that never comes due ends when the wheel stops.
func TestClockNeverStopsManual(t *testing.T) {
	for _, d := range extremes {
		for _, wait := range extremes {
			t.Run(fmt.Sprintf("timer %d/AdvanceClock %d", d, wait), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { advanceOnce(t, d, wait) })
			})
		}
	}
}

func advanceOnce(t *testing.T, d, wait time.Duration) {
	tw, err := timingwheel.New(timingwheel.WithManualClock(), timingwheel.WithExecutor(timingwheel.InlineExecutor()))
	require.NoError(t, err)
	defer tw.Stop()
	var ran []time.Time
	start := time.Now()
	tw.AfterFunc(d, func() { ran = append(ran, time.Now()) })
	due, until := start.Add(max(d, 0)), start.Add(max(wait, 0))
	comes := d < horizon && max(d, 0) <= max(wait, 0)
	if !comes && wait >= horizon {
		go func() {
			time.Sleep(time.Hour)
			tw.Stop()
		}()
		until = start.Add(time.Hour)
	}
	got := tw.AdvanceClock(wait)
	require.Equal(t, comes, got, "AdvanceClock's result")
	if !comes {
		require.Empty(t, ran, "the timer ran, though not due within the timeout")
		require.Equal(t, until, time.Now(), "AdvanceClock returned false when its timeout passed (or the wheel stopped)")
		return
	}
	require.Len(t, ran, 1, "the timer ran once")
	require.False(t, ran[0].Before(due), "ran %v before its deadline", due.Sub(ran[0]))
	require.LessOrEqual(t, ran[0].Sub(due), tick, "ran %v late", ran[0].Sub(due))
	require.Equal(t, ran[0], time.Now(), "AdvanceClock returned when it ran the timer")
}
