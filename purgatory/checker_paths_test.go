//go:build purgatorycheck

package purgatory

import (
	"context"
	"errors"
	"fmt"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// The checker's paths: each a call of the public API, on a goroutine of
// its own.

type pathKind uint8

const (
	pAdd          pathKind = iota // TryCompleteElseWatch of use 0 (at level 1, in a level scenario)
	pReuse                        // TryCompleteElseWatch of use 1, once use 0 is recycled
	pCheck                        // CheckAndComplete
	pHandOff                      // HandOff
	pPushHand                     // an item pushed, then HandOff
	pForce                        // ForceComplete
	pContext                      // the operation's context cancelled
	pPark                         // TryCompleteElsePark of use 0, then Parked.Wait
	pCancel                       // CancelForKey
	pForceKey                     // ForceCompleteForKey
	pClose                        // Close
	pAdvance                      // Advance to level 1
	pShutdown                     // Shutdown
	pShutdownDone                 // Shutdown with a context already done: it waits for nothing
	pRepark                       // TryCompleteElsePark of use 1, once use 0 is recycled, then Parked.Wait
	pFillers                      // ForceComplete of the scenario's fillers, one after the other
	pPushCheck                    // an item pushed, then CheckAndComplete, which tries past a no
	onB           pathKind = 0x80 // with a walk's kind: of key B, not A
)

var pathNames = [...]string{"add", "reuse", "check", "handoff", "push+handoff", "force", "context", "park",
	"cancel", "forcekey", "close", "advance", "shutdown", "shutdown done", "repark", "force fillers", "push+check"}

// path makes path i of kind k in world w.
func (w *cworld) path(i int, k pathKind, sc *cscenario) sched.Path {
	key := w.keys[0]
	if k&onB != 0 {
		key = w.keys[1]
	}
	k &^= onB
	name := fmt.Sprintf("%d %s %s", i, pathNames[k], key)
	p := sched.Path{Name: name, Run: func() { w.guard(func() { w.run(k, key, sc) }) }}
	p.MayBlock = k == pReuse || k == pRepark
	return p
}

// guard runs a path, recovering the panics the scenario injects into tries;
// any other panic is a violation.
func (w *cworld) guard(f func()) {
	defer func() {
		if r := recover(); r != nil && r != errInjected {
			w.fail(fmt.Sprintf("a path panicked: %v", r))
		}
	}()
	f()
}

func (w *cworld) run(k pathKind, key string, sc *cscenario) {
	p := w.p
	switch k {
	case pAdd:
		w.add(sc)
	case pReuse:
		w.reuse(sc, w.add)
	case pCheck:
		p.CheckAndComplete(key)
	case pHandOff:
		p.HandOff(key)
	case pPushHand, pPushCheck:
		w.push(k, key)
	case pForce:
		w.force()
	case pContext:
		sc.cancel()
	case pPark:
		w.park(sc)
	case pCancel:
		p.CancelForKey(key)
	case pForceKey:
		p.ForceCompleteForKey(key)
	case pClose:
		p.Close()
	case pAdvance:
		p.Advance(key, 1)
	case pShutdown:
		p.Shutdown(context.Background())
	case pShutdownDone:
		w.shutdownDone()
	case pRepark:
		w.reuse(sc, w.park)
	case pFillers:
		w.forceFillers()
	}
}

// push pushes an item, then walks key as k says: HandOff stops at the
// first try that says no, CheckAndComplete tries past it.
func (w *cworld) push(k pathKind, key string) {
	w.items.Add(1)
	if k == pPushHand {
		w.p.HandOff(key)
		return
	}
	w.p.CheckAndComplete(key)
}

// forceFillers ends the scenario's fillers, one after the other: the
// second drop makes the list mostly dead.
func (w *cworld) forceFillers() {
	for _, f := range w.fillers {
		ForceComplete(f)
	}
}

// force is ForceComplete of the operation: a use it says it decided must
// end Forced, or Completed by a try that passed (checked.check).
func (w *cworld) force() {
	before := genOf(w.op.state.Load())
	decided := ForceComplete(w.op)
	if g := genOf(w.op.state.Load()); decided && g == before && g < 2 {
		w.op.mu.Lock()
		w.op.uses[g].forced = true
		w.op.mu.Unlock()
	}
}

// reuse passes the operation again, by add or park, once it has been
// recycled.
func (w *cworld) reuse(sc *cscenario, again func(*cscenario)) {
	<-w.recycled
	sched.At("woken") // by a Recycle, inside another's step: wait to be chosen
	if !w.stopping.Load() {
		w.second.Store(true)
		again(sc)
	}
}

// shutdownDone shuts the purgatory down with a context already done.
func (w *cworld) shutdownDone() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.p.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		w.fail(fmt.Sprintf("Shutdown with its context done: %v", err))
	}
}

// add is TryCompleteElseWatch of the next use; a try that panics there
// undoes it (withdrawn), unless an outcome left for it ended it.
func (w *cworld) add(sc *cscenario) {
	w.prepare(sc.timed, sc.ctx)
	defer w.undone()
	if w.level != 0 {
		w.p.TryCompleteElseWatchAt(w.op, At(w.keys[0], w.level))
		return
	}
	w.p.TryCompleteElseWatch(w.op, w.useKeys()...)
}

// useKeys returns the keys the next use is watched under.
func (w *cworld) useKeys() []string {
	if w.second.Load() {
		return w.keysOf[1]
	}
	return w.keysOf[0]
}

// undone records a use withdrawn by its add's panic, and lets the panic go on.
func (w *cworld) undone() {
	if r := recover(); r != nil {
		if outcomeOf(w.op.state.Load()) == withdrawn {
			w.op.record(func(u *useRecord) { u.withdrawn = true })
		}
		panic(r)
	}
}

// park is TryCompleteElsePark of use 0, and its Wait. Untimed, the wait
// ends only by an event, a claim or Stop: a ring it missed leaves it
// blocked for good (the bell's scenarios), where a timeout would hide it.
func (w *cworld) park(sc *cscenario) {
	w.prepare(sc.timed, sc.ctx)
	defer w.undone()
	var g gen // use 0, or use 1 once use 0 is recycled (pRepark)
	if w.second.Load() {
		g = 1
	}
	var parked Parked
	var done bool
	if w.level != 0 {
		parked, done = w.p.TryCompleteElseParkAt(w.op, At(w.keys[0], w.level))
	} else {
		parked, done = w.p.TryCompleteElsePark(w.op, w.useKeys()...)
	}
	if done {
		w.mustBeOver(g, "TryCompleteElsePark returned true")
		return
	}
	bound := parked.o != nil // else ForceComplete ended the operation before it was ever added: no use to recycle
	out := parked.Wait()
	if out == Pending {
		w.fail(fmt.Sprintf("use %d: Parked.Wait returned before the use ended (a token left by an earlier use?)", g))
	}
	if bound {
		w.mustBeOver(g, "Parked.Wait returned")
	}
	w.op.mu.Lock()
	w.op.uses[g].waited = out
	w.op.mu.Unlock()
}

// mustBeOver checks that parked use g has been recycled, so is over, when its
// TryCompleteElsePark or Wait has returned (park.go, rule 6): its operation
// is the caller's to pass again. (Its state may be the next use's already:
// pRepark passes it again once it is recycled.)
func (w *cworld) mustBeOver(g gen, when string) {
	w.op.mu.Lock()
	recycled := w.op.uses[g].recycles
	w.op.mu.Unlock()
	if recycled != 1 {
		w.fail(fmt.Sprintf("use %d: %s before the use was over: Recycle ran %d times", g, when, recycled))
	}
}
