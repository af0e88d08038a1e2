package purgatory_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// gated is an operation whose next try, once held, waits inside TryComplete
// until the test answers it; OnComplete records the purgatory call it ran in.
type gated struct {
	*testkit.Op
	hold    atomic.Bool
	entered chan struct{}
	answer  chan bool
	ranIn   atomic.Value // string: the outermost purgatory call OnComplete ran in
}

func newGated(timeout time.Duration) *gated {
	return &gated{Op: testkit.NewOp(timeout), entered: make(chan struct{}), answer: make(chan bool)}
}

func (g *gated) TryComplete() bool {
	ok := g.Op.TryComplete() // counts it, and overlaps
	if g.hold.CompareAndSwap(true, false) {
		g.entered <- struct{}{}
		return <-g.answer
	}
	return ok
}

func (g *gated) OnComplete() {
	g.ranIn.Store(purgatoryCall())
	g.Op.OnComplete()
}

// purgatoryCall names the outermost exported purgatory function or method
// on the calling goroutine's stack, or "a library goroutine".
func purgatoryCall() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	name := "a library goroutine"
	for {
		f, more := frames.Next()
		fn := f.Function
		if i := strings.LastIndex(fn, "/purgatory/purgatory."); i >= 0 {
			short := fn[i+len("/purgatory/purgatory."):]
			short = short[strings.LastIndex(short, ".")+1:]
			if short != "" && short[0] >= 'A' && short[0] <= 'Z' {
				name = short
			}
		}
		if !more {
			return name
		}
	}
}

// A path that ends an operation from outside, and what it answers.
type outside struct {
	name    string
	outcome Outcome
	timeout time.Duration
	// do runs the path on the test goroutine while a try of op runs on
	// another, and checks what it returns: that it decided op's end.
	do func(t *testing.T, p *purgatory.Purgatory[string], op *gated, cancel context.CancelFunc)
}

// Outcome is purgatory.Outcome, for the table.
type Outcome = purgatory.Outcome

var outsides = []outside{
	{"ForceComplete", purgatory.Forced, time.Hour, func(t *testing.T, _ *purgatory.Purgatory[string], op *gated, _ context.CancelFunc) {
		require.True(t, purgatory.ForceComplete(op), "op was pending: ForceComplete decides")
		require.False(t, purgatory.ForceComplete(op), "an outcome is left already")
	}},
	{"timeout", purgatory.Expired, time.Second, func(t *testing.T, _ *purgatory.Purgatory[string], op *gated, _ context.CancelFunc) {
		time.Sleep(time.Second) // the wheel fires it; it leaves Expired and returns
	}},
	{"context", purgatory.ContextDone, time.Hour, func(t *testing.T, _ *purgatory.Purgatory[string], op *gated, cancel context.CancelFunc) {
		cancel()
	}},
	{"Close", purgatory.Closed, time.Hour, func(t *testing.T, p *purgatory.Purgatory[string], op *gated, _ context.CancelFunc) {
		p.Close() // returns: the try under way ends op
	}},
	{"CancelForKey", purgatory.Cancelled, time.Hour, func(t *testing.T, p *purgatory.Purgatory[string], op *gated, _ context.CancelFunc) {
		require.Equal(t, []purgatory.Operation{op}, p.CancelForKey("k"), "the operation left to the try is among those cancelled")
	}},
	{"ForceCompleteForKey", purgatory.Forced, time.Hour, func(t *testing.T, p *purgatory.Purgatory[string], op *gated, _ context.CancelFunc) {
		require.Equal(t, 1, p.ForceCompleteForKey("k"), "the operation left to the try counts")
	}},
}

// Issue 44, item 1: a path that meets a running try leaves its outcome for
// the try and never waits for it. The try, on another goroutine, then ends
// the operation: Completed, with OnComplete on its goroutine, if it passes,
// whatever was left; otherwise with the outcome left, its callbacks on the
// trying goroutine (OnExpiration too for a timeout; none for CancelForKey).
// For an operation watched under two keys the walk holds the try bit; under
// one key it tries it without the bit (solo), and the path hands the outcome
// to the walk.
func TestAPathThatMeetsATryLeavesItsOutcome(t *testing.T) {
	for _, path := range outsides {
		for _, keys := range [][]string{{"k"}, {"k", "j"}} {
			for _, pass := range []bool{true, false} {
				name := fmt.Sprintf("%s/keys=%d/pass=%v", path.name, len(keys), pass)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { meetATry(t, path, keys, pass) })
				})
			}
		}
	}
}

func meetATry(t *testing.T, path outside, keys []string, pass bool) {
	p := newPurgatory(t)
	op := newGated(path.timeout)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op.Context = ctx
	require.False(t, p.TryCompleteElseWatch(op, keys...))
	op.hold.Store(true)
	walked := make(chan int)
	go func() { walked <- p.CheckAndComplete("k") }()
	<-op.entered
	path.do(t, p, op, cancel)
	synctest.Wait()
	require.Equal(t, purgatory.Pending, op.Outcome(), "the try under way decides")
	require.Zero(t, op.Completed.Load())

	op.answer <- pass
	n := <-walked
	synctest.Wait()
	want := path.outcome
	if pass {
		want = purgatory.Completed
	}
	require.Equal(t, want, op.Outcome())
	wantCompleted, wantExpired := int32(1), int32(0)
	if want == purgatory.Cancelled {
		wantCompleted = 0
	}
	if want == purgatory.Expired {
		wantExpired = 1
	}
	require.Equal(t, wantCompleted, op.Completed.Load(), "OnComplete")
	require.Equal(t, wantExpired, op.Expired.Load(), "OnExpiration")
	if wantCompleted == 1 {
		require.Equal(t, "CheckAndComplete", op.ranIn.Load(), "OnComplete ran on the trying goroutine")
	}
	if pass {
		require.Equal(t, 1, n, "the walk completed it")
	} else {
		require.Zero(t, n)
	}
	require.Zero(t, op.Overlaps.Load())
	s := p.Stats()
	require.EqualValues(t, 1, s.Ended(want), "counted once, as it ended: %+v", s)
	require.Zero(t, s.Delayed)
}

// A try asked for while ForceComplete's outcome waits for the try under way is
// not made: the outcome ends the operation at that try's "no", so a timeout
// (or any outcome left) is never later than one try.
func TestAnOutcomeLeftEndsAtTheFirstNo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := newGated(time.Hour)
		require.False(t, p.TryCompleteElseWatch(op, "k", "j")) // the walk takes the try bit
		op.hold.Store(true)
		walked := make(chan int)
		go func() { walked <- p.CheckAndComplete("k") }()
		<-op.entered
		require.Zero(t, p.CheckAndComplete("j"), "asks the holder for one more try")
		require.True(t, purgatory.ForceComplete(op))
		op.answer <- false
		require.Zero(t, <-walked)
		require.Equal(t, purgatory.Forced, op.Outcome())
		require.EqualValues(t, 3, op.Tries.Load(), "two in TryCompleteElseWatch, one in the walk: no try after the no")
	})
}

// ForceComplete from inside TryComplete, on the operation being tried, leaves
// Forced for that very try (this goroutine's): a TryComplete that has taken
// what it completes with and returns true ends it Completed; one that returns
// false ends it Forced. In TryCompleteElseWatch's tries and in a walk's, held
// and solo.
func TestForceCompleteInsideItsOwnTry(t *testing.T) {
	for _, where := range []string{"TryCompleteElseWatch", "walk/solo", "walk/held"} {
		for _, pass := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/pass=%v", where, pass), func(t *testing.T) {
				p := newPurgatory(t)
				op := testkit.NewOp(time.Hour)
				var forced bool
				first := int32(1)
				if where != "TryCompleteElseWatch" {
					first = 3 // the walk's
				}
				op.OnTry = func() {
					if op.Tries.Load() == first {
						forced = purgatory.ForceComplete(op)
						op.Ready.Store(pass) // "take and return true"
					}
				}
				keys := []string{"k"}
				if where == "walk/held" {
					keys = append(keys, "j")
				}
				added := p.TryCompleteElseWatch(op, keys...)
				n := 0
				if where != "TryCompleteElseWatch" {
					require.False(t, added)
					n = p.CheckAndComplete("k")
				}
				require.True(t, forced, "ForceComplete decided: op was pending")
				want := purgatory.Forced
				if pass {
					want = purgatory.Completed
				}
				require.Equal(t, want, op.Outcome())
				require.Equal(t, want, op.Seen, "OnComplete saw it")
				require.EqualValues(t, 1, op.Completed.Load())
				if where == "TryCompleteElseWatch" {
					require.Equal(t, pass, added, "TryCompleteElseWatch reports whether its try completed it")
				} else if pass {
					require.Equal(t, 1, n)
				}
			})
		}
	}
}

// A TryComplete that panics after another path left its outcome does not lose
// it: the operation ends with that outcome (its callbacks run) before the
// panic goes on, in a walk and in TryCompleteElseWatch, which then is not
// undone.
func TestPanicAfterAnOutcomeWasLeft(t *testing.T) {
	for _, where := range []string{"TryCompleteElseWatch", "walk/solo", "walk/held"} {
		t.Run(where, func(t *testing.T) {
			p := newPurgatory(t)
			op := testkit.NewOp(time.Hour)
			first := int32(1)
			if where != "TryCompleteElseWatch" {
				first = 3
			}
			op.OnTry = func() {
				if op.Tries.Load() == first {
					require.True(t, purgatory.ForceComplete(op))
					op.PanicIn.Store(testkit.PanicTry)
				}
			}
			keys := []string{"k"}
			if where == "walk/held" {
				keys = append(keys, "j")
			}
			if where == "TryCompleteElseWatch" {
				require.True(t, testkit.PanickedInjected(t, func() { p.TryCompleteElseWatch(op, keys...) }))
			} else {
				require.False(t, p.TryCompleteElseWatch(op, keys...))
				require.True(t, testkit.PanickedInjected(t, func() { p.CheckAndComplete("k") }))
			}
			require.Equal(t, purgatory.Forced, op.Outcome())
			require.EqualValues(t, 1, op.Completed.Load())
			require.Equal(t, purgatory.Stats{Added: 1, Forced: 1}, p.Stats(), "counted, not withdrawn")
			require.NoError(t, p.ListsAtRest())
		})
	}
}

// A solo operation's timeout that fires while its key's walk is held up in
// another operation's TryComplete ends it right after that try, not when the
// walk is over: the walk applies what was handed to it after each try.
func TestAHandedOutcomeWaitsForOneTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		early := testkit.NewOp(time.Second) // tried first; expires during slow's try
		slow := newGated(time.Hour)
		late := testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(early, "k"))
		require.False(t, p.TryCompleteElseWatch(slow, "k"))
		require.False(t, p.TryCompleteElseWatch(late, "k"))
		var seenByLate Outcome
		late.OnTry = func() { seenByLate = early.Outcome() }
		slow.hold.Store(true)
		walked := make(chan int)
		go func() { walked <- p.CheckAndComplete("k") }()
		<-slow.entered
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, purgatory.Pending, early.Outcome(), "the walk may still be trying it: relayed")
		slow.answer <- false
		require.Zero(t, <-walked)
		require.Equal(t, purgatory.Expired, seenByLate, "ended right after the try under way, before the next")
		require.EqualValues(t, 1, early.Expired.Load())
		require.EqualValues(t, 1, early.Recycled.Load())
	})
}

// An operation relayed to a walk stays relayed when CancelForKey takes the
// key's list from under that walk, whether it was relayed before the list was
// taken (ForceComplete, first) or by CancelForKey itself: the walk still ends
// it, and the use is over (recycled).
func TestRelayedOutcomesOutliveTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		forced, cancelled := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
		slow := newGated(time.Hour)
		for _, op := range []purgatory.Operation{forced, cancelled, slow} {
			require.False(t, p.TryCompleteElseWatch(op, "k"))
		}
		slow.hold.Store(true)
		walked := make(chan int)
		go func() { walked <- p.CheckAndComplete("k") }()
		<-slow.entered
		require.True(t, purgatory.ForceComplete(forced))
		require.ElementsMatch(t, []purgatory.Operation{cancelled, slow}, p.CancelForKey("k"))
		for _, op := range []*testkit.Op{forced, cancelled} {
			require.Equal(t, purgatory.Pending, op.Outcome(), "handed to the walk, which has passed it")
		}
		slow.answer <- false
		require.Zero(t, <-walked)
		require.Equal(t, purgatory.Forced, forced.Outcome())
		require.Equal(t, purgatory.Cancelled, cancelled.Outcome())
		require.Equal(t, purgatory.Cancelled, slow.Outcome())
		for _, op := range []*testkit.Op{forced, cancelled, slow.Op} {
			require.EqualValues(t, 1, op.Recycled.Load(), "the use is over")
		}
		require.Equal(t, purgatory.Stats{Added: 3, Forced: 1, Cancelled: 2}, p.Stats())
	})
}
