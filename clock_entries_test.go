package purgatory_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// The entries of the clock table (clock_test.go): every call that takes a
// duration or a deadline, armed once with d and reporting each end of what
// it armed to an arming.

// entryKind says what an entry arms, which decides how a stopping wheel
// ends it (clockRig.check).
type entryKind uint8

const (
	wheelTimer   entryKind = iota // a Timer on the wheel: runs, is refused (Rejected), or Stop hands it back
	wheelContext                  // a context: keeps its deadline on a runtime timer once the wheel stops
	wheelOp                       // an operation's timeout on the wheel: expires, or the purgatory closes it
	parkedWait                    // a wait that times itself: expires, or the purgatory closes it
)

// clockEntry arms one timeout of d through one entry of the API.
type clockEntry struct {
	name string
	kind entryKind
	// zeroPanics: a zero d is a documented misuse (Op.Timeout), left out.
	zeroPanics bool
	// rearms: the entry arms its timer twice, the second time with d, so a
	// Stop between the two hands the first back and refuses the second.
	rearms bool
	arm    func(r *clockRig, a *arming)
}

// clockEntries are the entries the table arms, each with every extreme.
var clockEntries = []clockEntry{
	{name: "AfterFunc", kind: wheelTimer, arm: func(r *clockRig, a *arming) {
		tm := r.tw.AfterFunc(a.d, a.fired)
		a.refused(tm.Rejected())
	}},
	{name: "NewTimer+Reset", kind: wheelTimer, arm: func(r *clockRig, a *arming) {
		tm := r.tw.NewTimer(a.fired)
		tm.Reset(a.d)
		a.refused(tm.Rejected())
	}},
	{name: "Reset of a pending Timer", kind: wheelTimer, rearms: true, arm: func(r *clockRig, a *arming) {
		tm := r.tw.NewTimer(a.fired)
		tm.Reset(time.Hour)
		a.start = time.Now()
		tm.Reset(a.d)
		a.refused(tm.Rejected())
	}},
	{name: "owned Timer's Reset", kind: wheelTimer, arm: func(r *clockRig, a *arming) {
		var tm timingwheel.Timer
		r.tw.InitTimer(&tm, timingwheel.HandlerFunc(a.fired))
		tm.Reset(a.d)
		a.refused(tm.Rejected())
		r.cleanup = append(r.cleanup, func() { tm.Stop() })
	}},
	{name: "ScheduleFunc's first run", kind: wheelTimer, arm: func(r *clockRig, a *arming) {
		tm := r.tw.ScheduleFunc(&onceAt{at: a.start.Add(a.d)}, a.fired)
		a.refused(tm.Rejected())
	}},
	{name: "WithTimeout", kind: wheelContext, arm: func(r *clockRig, a *arming) {
		ctx, cancel := r.tw.WithTimeout(context.Background(), a.d)
		std, stdCancel := context.WithTimeout(context.Background(), a.d)
		r.sideBySide(a, ctx, std, nil, cancel, stdCancel)
	}},
	{name: "WithTimeoutCause", kind: wheelContext, arm: func(r *clockRig, a *arming) {
		ctx, cancel := r.tw.WithTimeoutCause(context.Background(), a.d, errTooLate)
		std, stdCancel := context.WithTimeoutCause(context.Background(), a.d, errTooLate)
		r.sideBySide(a, ctx, std, errTooLate, cancel, stdCancel)
	}},
	{name: "WithDeadline", kind: wheelContext, arm: func(r *clockRig, a *arming) {
		ctx, cancel := r.tw.WithDeadline(context.Background(), deadlineOf(a))
		std, stdCancel := context.WithDeadline(context.Background(), deadlineOf(a))
		r.sideBySide(a, ctx, std, nil, cancel, stdCancel)
	}},
	{name: "WithDeadlineCause", kind: wheelContext, arm: func(r *clockRig, a *arming) {
		ctx, cancel := r.tw.WithDeadlineCause(context.Background(), deadlineOf(a), errTooLate)
		std, stdCancel := context.WithDeadlineCause(context.Background(), deadlineOf(a), errTooLate)
		r.sideBySide(a, ctx, std, errTooLate, cancel, stdCancel)
	}},
	{name: "Op.Timeout", kind: wheelOp, zeroPanics: true, arm: func(r *clockRig, a *arming) {
		r.p.TryCompleteElseWatch(&clockOp{Op: purgatory.Op{Timeout: a.d}, a: a}, 1)
	}},
	{name: "parked Op.Timeout", kind: parkedWait, zeroPanics: true, arm: func(r *clockRig, a *arming) {
		parked, _ := r.p.TryCompleteElsePark(&clockOp{Op: purgatory.Op{Timeout: a.d}, a: a, parked: true}, 1)
		r.waits.Go(func() { a.ended(parked.Wait()) })
	}},
	{name: "Wait", kind: parkedWait, arm: func(r *clockRig, a *arming) {
		r.waits.Go(func() { a.ended(r.p.Wait(context.Background(), a.d, func() bool { return false }, 1)) })
	}},
}

var errTooLate = errors.New("too late")

// deadlineOf is the deadline d after the arming's start, and for
// math.MinInt64 the zero Time: a deadline read from a request that did not
// set it.
func deadlineOf(a *arming) time.Time {
	if a.d == math.MinInt64 {
		return time.Time{}
	}
	return a.start.Add(a.d)
}

// sideBySide watches ctx, the wheel's, and checks it against std, the
// standard library's made with the same arguments at the same moment: the
// same Deadline, and once both are done the same Err and Cause.
func (r *clockRig) sideBySide(a *arming, ctx, std context.Context, cause error, cancel, stdCancel context.CancelFunc) {
	context.AfterFunc(ctx, func() { a.end(timedOut, "done") })
	r.cleanup = append(r.cleanup, cancel, stdCancel)
	a.checks = append(a.checks, func(t *testing.T) {
		got, gotOK := ctx.Deadline()
		want, wantOK := std.Deadline()
		assert.Equal(t, wantOK, gotOK, "Deadline's ok, beside the standard library's")
		assert.WithinDuration(t, want, got, r.slack, "Deadline, beside the standard library's")
		if ctx.Err() != nil && std.Err() != nil {
			assert.Equal(t, std.Err(), ctx.Err(), "Err, beside the standard library's")
			assert.Equal(t, context.Cause(std), context.Cause(ctx), "Cause, beside the standard library's")
		}
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		if ctx.Err() != nil {
			assert.ErrorIs(t, context.Cause(ctx), cause)
		}
	})
}

// onceAt is a Scheduler with one run, at at.
type onceAt struct {
	mu   sync.Mutex
	at   time.Time
	done bool
}

func (s *onceAt) Next(time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return time.Time{}
	}
	s.done = true
	return s.at
}

// clockOp is an operation that never completes by a try: it expires, or the
// purgatory closes it. A parked one's end is reported by its waiter.
type clockOp struct {
	purgatory.Op
	a      *arming
	parked bool
}

func (o *clockOp) TryComplete() bool { return false }
func (o *clockOp) OnComplete() {
	if !o.parked {
		o.a.ended(o.Outcome())
	}
}
func (o *clockOp) OnExpiration() {}
