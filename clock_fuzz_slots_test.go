package purgatory_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// The slots of FuzzClock (clock_fuzz_test.go): each is one thing the program
// armed, on the wheel or the purgatory (ours), beside the same thing made of
// the standard library's parts in the same bubble (the reference), with
// what each has done so far.

// fuzzTimer is a Timer (AfterFunc's, NewTimer's, an owned one, or
// ScheduleFunc's) beside a time.Timer that does what it should.
type fuzzTimer struct {
	name  string
	ours  *timingwheel.Timer
	owned timingwheel.Timer // ours, for an owned timer
	every time.Duration     // > 0: recurring

	mu         sync.Mutex
	ref        *time.Timer
	refPending bool
	refRuns    []time.Time
	ourRuns    []time.Time
}

// newFuzzTimer makes the reference, unarmed.
func newFuzzTimer(name string, every time.Duration) *fuzzTimer {
	ft := &fuzzTimer{name: name, every: every}
	ft.ref = time.AfterFunc(math.MaxInt64, ft.refFire)
	ft.ref.Stop()
	return ft
}

func (ft *fuzzTimer) Fire() { ft.ourRun() }

func (ft *fuzzTimer) ourRun() {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.ourRuns = append(ft.ourRuns, time.Now())
}

// refFire runs the reference at its time; a recurring one re-arms itself
// for its next planned run, as Every's schedule does.
func (ft *fuzzTimer) refFire() {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.refRuns = append(ft.refRuns, time.Now())
	ft.refPending = false
	if ft.every > 0 {
		ft.ref.Reset(ft.every)
		ft.refPending = true
	}
}

// refArm arms the reference for d, or for nothing on a stopped wheel, and
// reports whether it was pending, as Reset does.
func (ft *fuzzTimer) refArm(d time.Duration, stopped bool) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	was := ft.refPending
	if stopped {
		return false
	}
	ft.ref.Reset(d)
	ft.refPending = true
	return was
}

// refStop stops the reference and reports whether it was pending.
func (ft *fuzzTimer) refStop() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.ref.Stop()
	was := ft.refPending
	ft.refPending = false
	return was
}

// check requires ours to have run as often as the reference, each run
// never before the reference's and at most a tick after it.
func (ft *fuzzTimer) check(w *clockWorld) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	require.Len(w.t, ft.ourRuns, len(ft.refRuns), "%s: runs, beside time.AfterFunc's at %v", ft.name, ft.refRuns)
	for i, at := range ft.ourRuns {
		w.onTime(ft.name, at, ft.refRuns[i])
	}
}

// fuzzCtx is a context of the wheel's beside the standard library's, made
// with the same arguments at the same instant.
type fuzzCtx struct {
	name         string
	ours, ref    context.Context
	cancel       [2]context.CancelFunc
	armed        bool // its timer went on the wheel: not done at once, on a running wheel
	mu           sync.Mutex
	ourAt, refAt time.Time // when each was done
}

func newFuzzCtx(w *clockWorld, name string, d time.Duration, deadline bool) *fuzzCtx {
	c := &fuzzCtx{name: name}
	switch at := time.Now().Add(d); {
	case !deadline:
		c.ours, c.cancel[0] = w.tw.WithTimeoutCause(context.Background(), d, errTooLate)
		c.ref, c.cancel[1] = context.WithTimeoutCause(context.Background(), d, errTooLate)
	case d == math.MinInt64: // an unset deadline
		at = time.Time{}
		fallthrough
	default:
		c.ours, c.cancel[0] = w.tw.WithDeadline(context.Background(), at)
		c.ref, c.cancel[1] = context.WithDeadline(context.Background(), at)
	}
	c.armed = c.ref.Err() == nil && !w.stopped
	context.AfterFunc(c.ours, func() { c.done(&c.ourAt) })
	context.AfterFunc(c.ref, func() { c.done(&c.refAt) })
	return c
}

func (c *fuzzCtx) done(at *time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*at = time.Now()
}

// doneAt returns when the reference was done (zero if it is not).
func (c *fuzzCtx) doneAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refAt
}

// resident reports whether the context's timer waits on the wheel: until
// it is done, while the wheel runs (a stopped wheel hands it to a runtime
// timer).
func (c *fuzzCtx) resident(stopped bool) bool { return !stopped && c.ref.Err() == nil }

// check requires the same Err, Cause and Deadline as the standard
// library's, and done at the same time, at most a tick later.
func (c *fuzzCtx) check(w *clockWorld) {
	require.Equal(w.t, c.ref.Err(), c.ours.Err(), "%s: Err", c.name)
	require.Equal(w.t, context.Cause(c.ref), context.Cause(c.ours), "%s: Cause", c.name)
	got, gotOK := c.ours.Deadline()
	want, wantOK := c.ref.Deadline()
	require.Equal(w.t, wantOK, gotOK, "%s: Deadline's ok", c.name)
	require.WithinDuration(w.t, want, got, tick, "%s: Deadline", c.name)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Equal(w.t, c.refAt.IsZero(), c.ourAt.IsZero(), "%s: done (reference at %v, ours at %v)", c.name, c.refAt, c.ourAt)
	if !c.ourAt.IsZero() && c.ref.Err() == context.DeadlineExceeded {
		w.onTime(c.name, c.ourAt, c.refAt)
	}
}

// opKind is how a fuzzOp waits.
type opKind uint8

const (
	watched  opKind = iota // TryCompleteElseWatch, Op.Timeout on the wheel
	ctxBound               // TryCompleteElseWatch, NoTimeout, Op.Context a wheel's context
	parkedOp               // TryCompleteElsePark, then Wait
	waitCall               // Purgatory.Wait
)

// fuzzOp is an operation of the purgatory beside a reference: a state
// guarded by a mutex that a time.Timer (or the standard library's context)
// expires, a completion completes, and a close closes, whichever comes
// first.
type fuzzOp struct {
	purgatory.Op
	name    string
	kind    opKind
	key     int
	ready   atomic.Bool
	counted bool // Stats counts it (a Wait of zero or less is a poll, not counted)

	mu      sync.Mutex
	ours    purgatory.Outcome
	ourAt   time.Time
	ourEnds int
	ref     purgatory.Outcome
	refAt   time.Time
	timer   *time.Timer // the reference's timeout
}

func (o *fuzzOp) TryComplete() bool { return o.ready.Load() }
func (o *fuzzOp) OnExpiration()     {}
func (o *fuzzOp) OnComplete() {
	if o.kind == watched || o.kind == ctxBound {
		o.ended(o.Outcome())
	}
}

// ended records ours' end: from OnComplete, or from the waiter.
func (o *fuzzOp) ended(out purgatory.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ours, o.ourAt, o.ourEnds = out, time.Now(), o.ourEnds+1
}

// refEnd ends the reference with out unless it has ended, and reports
// whether this call ended it.
func (o *fuzzOp) refEnd(out purgatory.Outcome) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ref != purgatory.Pending {
		return false
	}
	o.ref, o.refAt = out, time.Now()
	if o.timer != nil {
		o.timer.Stop()
	}
	return true
}

// refEnded returns how and when the reference ended (Pending: it has not).
func (o *fuzzOp) refEnded() (purgatory.Outcome, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ref, o.refAt
}

// pending reports whether the reference has not ended.
func (o *fuzzOp) pending() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ref == purgatory.Pending
}

// triesItself reports whether ours is tried by its waiter when its key's
// bell rings, not by CheckAndComplete's walk: a parked use, or a Wait, under
// one key (every one here).
func (o *fuzzOp) triesItself() bool { return o.kind == parkedOp || o.kind == waitCall }

// resident reports whether ours' timeout waits on the wheel: a watched
// operation's, until it ends.
func (o *fuzzOp) resident() bool {
	return o.kind == watched && o.Timeout != purgatory.NoTimeout && o.pending()
}

// check requires ours to have ended as the reference did, once, never
// before it and at most a tick after it.
func (o *fuzzOp) check(w *clockWorld) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ref == purgatory.Pending {
		require.Zero(w.t, o.ourEnds, "%s ended %v; the reference has not", o.name, o.ours)
		return
	}
	require.Equal(w.t, 1, o.ourEnds, "%s: ends (the reference ended %v at %v)", o.name, o.ref, o.refAt)
	require.Equal(w.t, o.ref, o.ours, "%s: outcome", o.name)
	w.onTime(o.name, o.ourAt, o.refAt)
}
