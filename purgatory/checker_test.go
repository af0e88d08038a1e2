//go:build purgatorycheck

package purgatory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// The interleaving checker runs the code that ships (issue 70): every
// scenario's paths call the public API, each on a goroutine of its own,
// and internal/sched lets one go on at a time, from one scheduling point
// of the library to its next, in every order within a bound of
// preemptions. After every step it checks I1–I4 on the operation's state
// word and what the operation recorded (one try at a time, never of an
// ended or recycled use; OnComplete once, after the outcome, never after
// Recycle; OnExpiration only for an expiry); once nobody can go on, that
// each use ended once with the callbacks its outcome calls for, Completed
// if a try passed, recycled once, every list at rest with its walk let go
// and nothing relayed, and no item left beside a waiting use.
//
// go test -tags purgatorycheck -run TestEveryInterleaving ./purgatory
// (CI's checker step; -v prints the schedules per scenario).

// cscenario is a purgatory scenario: its paths, and what its operation does.
type cscenario struct {
	name     string
	paths    []pathKind
	keys     []string
	timed    bool  // the operation has a timeout (the clock moves by it)
	context  bool  // the operation has a context, which a path may cancel
	handOff  bool  // tries take items (hand-offs); else they answer each way the checker chooses
	panics   bool  // a try may panic too
	level    int64 // the add watches at this level (0: a plain watch)
	locker   bool  // the operation has an Op.Locker, which its tries take
	own      bool  // the purgatory makes its own wheel (New without WithTimingWheel)
	fillers  int   // operations watched under the first key before the paths start, which pFillers forces
	reuseOnB bool  // the second use is watched under the second key only

	ctx    context.Context
	cancel context.CancelFunc
}

var (
	keyA  = []string{"A"}
	keyAB = []string{"A", "B"}
)

// scenario makes sc a sched.Scenario.
func (sc cscenario) scenario() sched.Scenario {
	var clock []time.Duration
	if sc.timed {
		clock = []time.Duration{ctimeout}
	}
	skip := []string{"wheel: "} // the wheel's own: its scenarios check it
	if !slices.Contains(sc.paths, pClose) && !slices.Contains(sc.paths, pShutdown) && !slices.Contains(sc.paths, pShutdownDone) {
		skip = append(skip, "closed load") // nothing writes closed: its reads commute
	}
	return sched.Scenario{Name: sc.name, Clock: clock, Skip: skip, Start: func(t *testing.T) sched.World {
		if sc.context {
			sc.ctx, sc.cancel = context.WithCancel(context.Background())
		}
		w := newWorld(t, &sc)
		paths := make([]sched.Path, len(sc.paths))
		for i, k := range sc.paths {
			paths[i] = w.path(i, k, &sc)
		}
		return sched.World{Paths: paths, Check: w.check, Final: w.final, Stop: w.stop}
	}}
}

// TestEveryInterleaving runs the short set (with PURGATORY_LONG=1 the long
// set too): every schedule within the bound (sched.Bound) for up to three
// paths, PCT's random schedules for four. Under -race it runs underRace's
// few at a bound of 1, the README's test command's share; CI's checker step
// runs them all at 2 without -race.
func TestEveryInterleaving(t *testing.T) {
	for _, sc := range sched.Scenarios(cscenarios, longScenarios, func(sc cscenario) string { return sc.name }, underRace) {
		t.Run(sc.name, func(t *testing.T) { sched.Check(t, sc.scenario(), len(sc.paths)) })
	}
}

// underRace are the scenarios the README's go test -race runs (a
// checker's goroutines run one at a time, so the race detector sees
// little, at ten times the time).
var underRace = map[string]bool{"add, check, force": true, "park, handoff, force": true, "add A+B, handoff A, force": true}

// cscenarios are the short set, CI's checker step: three paths each (or
// four, which PCT samples), and the clock where the operation has a timeout.
// The model this checker replaced ran the same thirty-one, on a copy of the
// code; the heaviest of them, those of an operation used twice and of
// Shutdown, are in the long set, and lighter ones of each kind stand here.
var cscenarios = []cscenario{
	{name: "add, check, force", paths: ps(pAdd, pCheck, pForce), keys: keyA, timed: true},
	{name: "add, handoff, force", paths: ps(pAdd, pHandOff, pForce), keys: keyA, timed: true},
	{name: "add, check, handoff", paths: ps(pAdd, pCheck, pHandOff), keys: keyA, timed: true},
	{name: "add, check, check", paths: ps(pAdd, pCheck, pCheck), keys: keyA, timed: true},
	{name: "add, push+handoff, push+handoff (no timeout)", paths: ps(pAdd, pPushHand, pPushHand), keys: keyA, handOff: true},
	{name: "add, push+handoff, check (no timeout)", paths: ps(pAdd, pPushHand, pCheck), keys: keyA, handOff: true},
	{name: "add, handoff, context (no timeout)", paths: ps(pAdd, pHandOff, pContext), keys: keyA, context: true},
	{name: "park, handoff, force", paths: ps(pPark, pHandOff, pForce), keys: keyA, timed: true},
	{name: "park, push+handoff, push+handoff", paths: ps(pPark, pPushHand, pPushHand), keys: keyA, timed: true, handOff: true},
	{name: "push+handoff, park, repark", paths: ps(pPushHand, pPark, pRepark), keys: keyA, timed: true, handOff: true},
	{name: "two watched before it; add, push+check, force those two (no timeout)", paths: ps(pAdd, pPushCheck, pFillers), keys: keyA, handOff: true, fillers: 2},
	{name: "add, check, cancel", paths: ps(pAdd, pCheck, pCancel), keys: keyA, timed: true},
	{name: "add, handoff, forcekey", paths: ps(pAdd, pHandOff, pForceKey), keys: keyA, timed: true},
	{name: "add, check, close", paths: ps(pAdd, pCheck, pClose), keys: keyA, timed: true},
	{name: "park, handoff, close", paths: ps(pPark, pHandOff, pClose), keys: keyA, timed: true},
	// A check rings the parked use's bell, and its waiter tries it (bell.go):
	// with no timeout, an event it missed leaves it waiting beside an item.
	{name: "park, push+check, push+check (no timeout)", paths: ps(pPark, pPushCheck, pPushCheck), keys: keyA, handOff: true},
	{name: "park, check, push+check (no timeout)", paths: ps(pPark, pCheck, pPushCheck), keys: keyA, handOff: true},
	{name: "park, push+check, force (no timeout)", paths: ps(pPark, pPushCheck, pForce), keys: keyA, handOff: true},
	{name: "park, push+check, push+handoff (no timeout)", paths: ps(pPark, pPushCheck, pPushHand), keys: keyA, handOff: true},
	{name: "add, reuse, push+handoff (no timeout)", paths: ps(pAdd, pReuse, pPushHand), keys: keyA, handOff: true},
	{name: "add, reuse, cancel, push+handoff (no timeout)", paths: ps(pAdd, pReuse, pCancel, pPushHand), keys: keyA, handOff: true},
	{name: "add, reuse, force, check", paths: ps(pAdd, pReuse, pForce, pCheck), keys: keyA, timed: true},
	{name: "add A+B, handoff A, force", paths: ps(pAdd, pHandOff, pForce|onB), keys: keyAB, timed: true},
	{name: "add A+B, push+handoff A, push+handoff B (no timeout)", paths: ps(pAdd, pPushHand, pPushHand|onB), keys: keyAB, handOff: true},
	{name: "add A+B, reuse on B, cancel A", paths: ps(pAdd, pReuse, pCancel), keys: keyAB, timed: true, reuseOnB: true},
	{name: "add A+B, check A, cancel B", paths: ps(pAdd, pCheck, pCancel|onB), keys: keyAB, timed: true},
	{name: "add A+B, handoff B, close", paths: ps(pAdd, pHandOff|onB, pClose), keys: keyAB, timed: true},
	{name: "add at a level, advance, check", paths: ps(pAdd, pAdvance, pCheck), keys: keyA, timed: true, level: 1},
	{name: "add at a level, advance, handoff, force", paths: ps(pAdd, pAdvance, pHandOff, pForce), keys: keyA, level: 1},
	{name: "add at a level, advance, cancel", paths: ps(pAdd, pAdvance, pCancel), keys: keyA, timed: true, level: 1},
	{name: "park at a level, advance, force", paths: ps(pPark, pAdvance, pForce), keys: keyA, timed: true, level: 1},
	{name: "add, check, force; tries panic", paths: ps(pAdd, pCheck, pForce), keys: keyA, timed: true, panics: true},
	{name: "add, handoff, check; tries panic", paths: ps(pAdd, pHandOff, pCheck), keys: keyA, timed: true, panics: true},
	{name: "park, handoff, force; tries panic", paths: ps(pPark, pHandOff, pForce), keys: keyA, timed: true, panics: true},
	{name: "park, check, force; tries panic", paths: ps(pPark, pCheck, pForce), keys: keyA, timed: true, panics: true},
	{name: "add with a Locker, check, force", paths: ps(pAdd, pCheck, pForce), keys: keyA, timed: true, locker: true},
	{name: "add with a Locker, push+handoff, forcekey (no timeout)", paths: ps(pAdd, pPushHand, pForceKey), keys: keyA, handOff: true, locker: true},
	{name: "add, push+handoff, shutdown (no timeout)", paths: ps(pAdd, pPushHand, pShutdown), keys: keyA, handOff: true},
	{name: "own wheel: add, push+handoff, shutdown done (no timeout)", paths: ps(pAdd, pPushHand, pShutdownDone), keys: keyA, handOff: true, own: true},
	{name: "own wheel: add, handoff, close", paths: ps(pAdd, pHandOff, pClose), keys: keyA, timed: true, own: true},
	{name: "add, push+handoff, forcekey (no timeout)", paths: ps(pAdd, pPushHand, pForceKey), keys: keyA, handOff: true},
	{name: "add, push+handoff, cancel (no timeout)", paths: ps(pAdd, pPushHand, pCancel), keys: keyA, handOff: true},
}

// longScenarios are CI's long step's (PURGATORY_LONG=1): the rest of the
// model's thirty-one, its six of four paths, and Shutdown against a walk
// and a parked waiter.
var longScenarios = []cscenario{
	// use 0 may end in its own add by its second try (the checker answers the
	// tries): a token that add's leave failed to take would meet use 1.
	{name: "park, check, repark", paths: ps(pPark, pCheck, pRepark), keys: keyA, timed: true},
	{name: "add, reuse, check", paths: ps(pAdd, pReuse, pCheck), keys: keyA, timed: true},
	{name: "add, check, context", paths: ps(pAdd, pCheck, pContext), keys: keyA, timed: true, context: true},
	{name: "park, check, check", paths: ps(pPark, pCheck, pCheck), keys: keyA, timed: true},
	{name: "add, reuse, cancel", paths: ps(pAdd, pReuse, pCancel), keys: keyA, timed: true},
	{name: "add, reuse, forcekey", paths: ps(pAdd, pReuse, pForceKey), keys: keyA, timed: true},
	{name: "add A+B, check A, check B", paths: ps(pAdd, pCheck, pCheck|onB), keys: keyAB, timed: true},
	{name: "add, reuse, check; tries panic", paths: ps(pAdd, pReuse, pCheck), keys: keyA, timed: true, panics: true},
	{name: "add, check, shutdown", paths: ps(pAdd, pCheck, pShutdown), keys: keyA, timed: true},
	{name: "park, handoff, shutdown", paths: ps(pPark, pHandOff, pShutdown), keys: keyA, timed: true},
	{name: "add, check, handoff, force", paths: ps(pAdd, pCheck, pHandOff, pForce), keys: keyA, timed: true},
	{name: "add, push+handoff, push+handoff, check (no timeout)", paths: ps(pAdd, pPushHand, pPushHand, pCheck), keys: keyA, handOff: true},
	{name: "add, reuse, check, handoff", paths: ps(pAdd, pReuse, pCheck, pHandOff), keys: keyA, timed: true},
	{name: "add, check, force, context", paths: ps(pAdd, pCheck, pForce, pContext), keys: keyA, timed: true, context: true},
	{name: "add A+B, check A, handoff B, force", paths: ps(pAdd, pCheck, pHandOff|onB, pForce), keys: keyAB, timed: true},
	{name: "park, check, handoff, close; tries panic", paths: ps(pPark, pCheck, pHandOff, pClose), keys: keyA, timed: true, panics: true},
}

func ps(ks ...pathKind) []pathKind { return ks }
