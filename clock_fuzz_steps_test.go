package purgatory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// The steps of FuzzClock's programs: each does a thing to ours and the same
// to the reference, and requires the answers to agree.

// armTimer arms a new timer for d: AfterFunc's (kind 0), NewTimer's (1),
// or an owned one (2), each then Reset.
func (w *clockWorld) armTimer(kind byte, d time.Duration) {
	ft := newFuzzTimer(fmt.Sprintf("timer %d (kind %d)", len(w.timers), kind), 0)
	w.log("%s armed for %d", ft.name, d)
	switch kind {
	case 0:
		ft.ours = w.tw.AfterFunc(d, ft.ourRun)
	case 1:
		ft.ours = w.tw.NewTimer(ft.ourRun)
		ft.ours.Reset(d)
	default:
		w.tw.InitTimer(&ft.owned, ft)
		ft.ours = &ft.owned
		ft.ours.Reset(d)
	}
	ft.refArm(d, w.stopped)
	require.Equal(w.t, w.stopped, ft.ours.Rejected(), "%s: Rejected, on a wheel stopped=%v", ft.name, w.stopped)
	w.timers = append(w.timers, ft)
}

// schedule starts a recurring schedule every e.
func (w *clockWorld) schedule(e time.Duration) {
	ft := newFuzzTimer(fmt.Sprintf("schedule %d", len(w.timers)), e)
	w.log("%s every %d", ft.name, e)
	ft.ours = w.tw.ScheduleFunc(timingwheel.Every(e), ft.ourRun)
	ft.refArm(e, w.stopped)
	require.Equal(w.t, w.stopped, ft.ours.Rejected(), "%s: Rejected", ft.name)
	w.timers = append(w.timers, ft)
}

func (w *clockWorld) stopTimer(i byte) {
	if len(w.timers) == 0 {
		return
	}
	ft := w.timers[int(i)%len(w.timers)]
	got := ft.ours.Stop()
	w.log("%s stopped: %v", ft.name, got)
	require.Equal(w.t, ft.refStop(), got, "%s: Stop's answer, beside time.Timer's", ft.name)
}

func (w *clockWorld) resetTimer(i byte, d time.Duration) {
	if len(w.timers) == 0 {
		return
	}
	ft := w.timers[int(i)%len(w.timers)]
	got := ft.ours.Reset(d)
	w.log("%s reset for %d: %v", ft.name, d, got)
	require.Equal(w.t, ft.refArm(d, w.stopped), got, "%s: Reset's answer, beside time.Timer's", ft.name)
}

// newCtx makes a context of d, by WithTimeoutCause or (deadline) by
// WithDeadline.
func (w *clockWorld) newCtx(d time.Duration, deadline bool) {
	c := newFuzzCtx(w, fmt.Sprintf("context %d", len(w.ctxs)), d, deadline)
	w.log("%s for %d (WithDeadline %v)", c.name, d, deadline)
	w.ctxs = append(w.ctxs, c)
}

func (w *clockWorld) cancelCtx(i byte) {
	if len(w.ctxs) == 0 {
		return
	}
	c := w.ctxs[int(i)%len(w.ctxs)]
	w.log("%s cancelled", c.name)
	c.cancel[0]()
	c.cancel[1]()
}

// addOp adds an operation of kind k with a timeout of d (zero, a forgotten
// Op.Timeout that panics, is taken as -1; Wait takes it as a poll).
func (w *clockWorld) addOp(k opKind, d time.Duration) {
	o := &fuzzOp{name: fmt.Sprintf("operation %d (kind %d)", len(w.ops), k), kind: k, key: len(w.ops), counted: true}
	w.log("%s for %d", o.name, d)
	w.ops = append(w.ops, o)
	if d == 0 && k != waitCall {
		d = -1
	}
	o.Timeout = d
	if w.closed {
		o.refEnd(purgatory.Closed)
	} else if k == ctxBound {
		c := newFuzzCtx(w, o.name+"'s context", d, false)
		w.ctxs = append(w.ctxs, c)
		o.Timeout, o.Context = purgatory.NoTimeout, c.ours
		context.AfterFunc(c.ref, func() { o.refEnd(purgatory.ContextDone) })
	} else if d != purgatory.NoTimeout || k == waitCall {
		o.mu.Lock()
		o.timer = time.AfterFunc(d, func() { o.refEnd(purgatory.Expired) })
		o.mu.Unlock()
	}
	w.add(o)
}

// add adds o to ours.
func (w *clockWorld) add(o *fuzzOp) {
	switch o.kind {
	case watched, ctxBound:
		w.p.TryCompleteElseWatch(o, o.key)
	case parkedOp:
		parked, _ := w.p.TryCompleteElsePark(o, o.key)
		w.waits.Go(func() { o.ended(parked.Wait()) })
	case waitCall:
		o.counted = o.Timeout > 0
		w.waits.Go(func() { o.ended(w.p.Wait(context.Background(), o.Timeout, o.TryComplete, o.key)) })
	}
}

// complete makes an operation ready and checks its key: ours completes it
// exactly when the reference had not ended, in the walk, or, for a use
// parked under its one key, in its waiter, which the key's bell wakes
// (purgatory/bell.go): the walk does not count it, and check holds when
// and how it ended.
func (w *clockWorld) complete(i byte) {
	if len(w.ops) == 0 {
		return
	}
	o := w.ops[int(i)%len(w.ops)]
	o.ready.Store(true)
	n := w.p.CheckAndComplete(o.key)
	w.log("%s completed: %d", o.name, n)
	want := 0
	if o.refEnd(purgatory.Completed) && !o.triesItself() {
		want = 1
	}
	require.Equal(w.t, want, n, "%s: CheckAndComplete's count", o.name)
}

func (w *clockWorld) sleep(d time.Duration) {
	w.log("sleep %v", d)
	time.Sleep(d)
}

// stopOrClose stops the wheel (b < 32) or closes the purgatory (b < 64),
// and otherwise sleeps a tick: stopping ends most of a program, so it is
// rare.
func (w *clockWorld) stopOrClose(b byte) {
	switch {
	case b < 32 && !w.stopped:
		w.stopWheel()
	case b < 64 && !w.closed:
		w.log("purgatory closed")
		w.p.Close()
		w.closeRefs()
	default:
		w.sleep(tick)
	}
}

// stopWheel stops the wheel: it hands back every timer waiting on it, and
// drains the operations' timeouts instead (a purgatory's timeout is a
// timingwheel.Drainer: running it would expire its operation early); the
// purgatory, which learns of the stop, closes them.
func (w *clockWorld) stopWheel() {
	want := 0
	for _, ft := range w.timers {
		if ft.refStop() {
			want++
		}
	}
	pending := w.tw.Stop()
	w.log("wheel stopped: %d handed back", len(pending))
	w.stopped, w.stopAt = true, time.Now()
	require.Len(w.t, pending, want, "the wheel's Stop hands back every timer waiting on it, and no operation's timeout")
	w.closeRefs()
}

// closeRefs ends every reference operation still pending Closed.
func (w *clockWorld) closeRefs() {
	w.closed = true
	for _, o := range w.ops {
		o.refEnd(purgatory.Closed)
	}
}
