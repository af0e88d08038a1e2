package purgatory_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// firedTimer accounts for one Timer: every arming (AfterFunc or Reset) ends in
// exactly one of a run, a Stop that returned true, a Reset that returned true
// (it replaced a pending arming), or being handed back by the wheel's Stop
// (which this test then runs).
type firedTimer struct {
	t                          *timingwheel.Timer
	armings, runs, stops, reps atomic.Int64
	outsideReset               atomic.Bool // deadline checks stop once reset from outside
	armedAt                    time.Time   // written only before arming from the owning goroutine
	delay                      time.Duration
	selfResets                 int // how many more times the callback re-arms itself
}

// long reports whether the long suite was asked for with PURGATORY_LONG=1
// (docs/design.md, "Tests"): the default test command stays fast, and CI runs both.
func long() bool { return os.Getenv("PURGATORY_LONG") == "1" }

// TestExactlyOnceUnderFire drives one timing wheel and one purgatory from 8
// goroutines at once with every call that can race: AfterFunc, Stop and Reset
// from outside and from inside callbacks, TryCompleteElseWatch,
// CheckAndComplete, ForceComplete, CancelForKey, context cancellation, expiry,
// and Close of the purgatory in mid-flight. Then it accounts for each timer
// arming and each operation, and checks that no timer ran early.
func TestExactlyOnceUnderFire(t *testing.T) {
	total := 50_000
	if long() {
		total = 1_000_000
	}
	const goroutines = 8
	perG := total / goroutines

	tw, err := timingwheel.New(timingwheel.WithExecutor(timingwheel.PoolExecutor(8)))
	require.NoError(t, err)
	p, err := purgatory.New[int]("fire")
	require.NoError(t, err)

	var early, started, inflight atomic.Int64
	var closeOnce sync.Once
	var added atomic.Int64
	timersOf := make([][]*firedTimer, goroutines)
	opsOf := make([][]*testkit.Op, goroutines)

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			var timers []*firedTimer
			var ops []*testkit.Op
			var opKeys [][]int
			var cancels []context.CancelFunc
			for i := range perG {
				if n := added.Add(1); n == int64(total*7/10) {
					closeOnce.Do(p.Close) // in mid-flight: the rest expire as they are added
				}
				switch r := rng.IntN(100); {
				case r < 35: // a new timer, some of which re-arm themselves
					ft := &firedTimer{delay: time.Duration(rng.IntN(2000)) * time.Microsecond, selfResets: rng.IntN(3) / 2}
					var callback func()
					callback = func() {
						started.Add(1)
						inflight.Add(1)
						defer inflight.Add(-1)
						ft.runs.Add(1)
						if !ft.outsideReset.Load() && time.Since(ft.armedAt) < ft.delay {
							early.Add(1)
						}
						if ft.selfResets > 0 && !ft.outsideReset.Load() {
							ft.selfResets--
							ft.armedAt, ft.delay = time.Now(), time.Duration(rand.IntN(500))*time.Microsecond // rng is not ours here
							ft.armings.Add(1)
							if ft.t.Reset(ft.delay) {
								ft.reps.Add(1)
							}
						}
					}
					// Arm an hour away first so that ft.t is set before the
					// callback can read it, then move it to its delay: that
					// is two armings, the first replaced by the Reset.
					ft.armings.Add(1)
					ft.t = tw.AfterFunc(time.Hour, callback)
					ft.armedAt = time.Now()
					ft.armings.Add(1)
					if ft.t.Reset(ft.delay) {
						ft.reps.Add(1)
					}
					timers = append(timers, ft)
				case r < 45 && len(timers) > 0:
					if ft := timers[rng.IntN(len(timers))]; ft.t.Stop() {
						ft.stops.Add(1)
					}
				case r < 50 && len(timers) > 0:
					ft := timers[rng.IntN(len(timers))]
					ft.outsideReset.Store(true)
					ft.armings.Add(1)
					if ft.t.Reset(time.Duration(rng.IntN(1000)) * time.Microsecond) {
						ft.reps.Add(1)
					}
				case r < 80: // a new operation on 1 to 3 of 64 keys
					op := testkit.NewOp(time.Duration(1+rng.IntN(3000)) * time.Microsecond)
					if rng.IntN(5) == 0 {
						ctx, cancel := context.WithCancel(context.Background())
						op.Context = ctx
						cancels = append(cancels, cancel)
					}
					keys := []int{rng.IntN(64), rng.IntN(64), rng.IntN(64)}[:1+rng.IntN(3)]
					p.TryCompleteElseWatch(op, keys...)
					ops, opKeys = append(ops, op), append(opKeys, keys)
				case r < 92 && len(ops) > 0: // a completion event on one of the operation's keys
					j := len(ops) - 1 - rng.IntN(min(len(ops), 50)) // a recent one, likely still pending
					ops[j].Ready.Store(true)
					p.CheckAndComplete(opKeys[j][rng.IntN(len(opKeys[j]))])
				case r < 96 && len(ops) > 0:
					purgatory.ForceComplete(ops[rng.IntN(len(ops))])
				case r < 97:
					p.CancelForKey(rng.IntN(64))
				case len(cancels) > 0:
					cancels[rng.IntN(len(cancels))]()
				}
				if i%1000 == 0 {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond) // let timers come due
				}
			}
			for _, c := range cancels {
				c()
			}
			timersOf[g], opsOf[g] = timers, ops
		})
	}
	wg.Wait()
	closeOnce.Do(p.Close)
	// Quiescence before Stop: nothing pending, and every callback handed to the
	// executor has started and returned, so no callback can re-arm its timer
	// after Stop (where Reset arms nothing).
	for begin := time.Now(); tw.Len() != 0 || inflight.Load() != 0 || started.Load() != tw.Stats().Fired; {
		require.Less(t, time.Since(begin), time.Minute, "the wheel never went quiet")
		time.Sleep(time.Millisecond)
	}
	handedBack := tw.Stop()
	for _, f := range handedBack {
		f() // a handed-back callback is the caller's to run: it counts as the arming's run
	}

	var armings, runs, stops, reps int64
	for _, timers := range timersOf {
		for i, ft := range timers {
			a, r, s, rp := ft.armings.Load(), ft.runs.Load(), ft.stops.Load(), ft.reps.Load()
			require.Equal(t, a, r+s+rp, "timer %d: %d armings ended in %d runs, %d stops, %d replacements", i, a, r, s, rp)
			armings, runs, stops, reps = armings+a, runs+r, stops+s, reps+rp
		}
	}
	require.Zero(t, early.Load(), "timers ran before their deadline")

	var all []*testkit.Op
	for _, ops := range opsOf {
		all = append(all, ops...)
	}
	want := testkit.Tally(t, all)
	want.Added = int64(len(all))
	require.Equal(t, want, p.Stats())
	require.EqualValues(t, 0, tw.Stats().Panics)
	t.Logf("timers: %d armings = %d runs (%d handed back) + %d stops + %d replaced; operations: %+v",
		armings, runs, len(handedBack), stops, reps, want)
}
