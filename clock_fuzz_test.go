package purgatory_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// FuzzClock is a differential fuzzer of the wheel with its driver, and of
// the purgatory's timeouts, in a synctest bubble (issue 69). A program of
// AfterFunc, NewTimer and owned timers' Reset and Stop, recurring
// schedules, contexts, operations watched with a Timeout or a Context,
// parked and Wait, completions, sleeps, the purgatory's Close and the
// wheel's Stop, half its durations drawn from the extremes, runs against
// the same program made of time.AfterFunc, time.Timer and the context
// package in the same bubble. After every step: the same callbacks have
// run, each once, never before the reference and at most a tick after it;
// the same operations have ended, with the same outcomes; Stop, Reset and
// CheckAndComplete answer as the reference; Len, Stats.Fired and the
// purgatory's Stats agree with it; and the Observer's latenesses are true.
func FuzzClock(f *testing.F) {
	for _, seed := range clockSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 600 {
			prog = prog[:600] // a program of at most 200 steps
		}
		synctest.Test(t, func(t *testing.T) { runClock(t, prog) })
	})
}

// clockSeeds: ordinary programs (the first two bytes choose the shards and
// the executor; then each step's byte and its arguments: see step), and
// issue 69's reproduction.
var clockSeeds = [][]byte{
	{0, 0, 0, 229, 1, 161, 2, 45, 13, 8, 4, 1, 5, 0, 0, 13, 40, 3, 5, 13, 100},
	{1, 0, 6, 161, 0, 6, 2, 1, 8, 45, 9, 161, 10, 229, 11, 45, 13, 20, 12, 1, 7, 0, 13, 200, 15, 40},
	{0, 1, 0, 161, 3, 9, 8, 229, 10, 161, 6, 229, 1, 13, 10, 15, 5, 0, 45, 13, 100},
	{1, 1, 2, 7, 5, 0, 3, 4, 2, 13, 4, 4, 0, 12, 0, 11, 161, 12, 0, 13, 60, 15, 50, 8, 45, 13, 90},
	// issue 69: AfterFunc(1 s); 10 ms; AfterFunc(MinInt64); 10 ms; AfterFunc(10 ms); the
	// final sleep: then the same with operations' Timeouts.
	{1, 1, 0, 229, 13, 40, 0, 0, 13, 40, 0, 161},
	{1, 1, 8, 229, 13, 40, 8, 0, 13, 40, 8, 161},
}

// clockWorld is a program's wheel and purgatory, its reference, and every
// slot armed so far.
type clockWorld struct {
	t       *testing.T
	prog    []byte
	tw      *timingwheel.TimingWheel
	p       *purgatory.Purgatory[int]
	made    time.Time
	late    latenesses
	timers  []*fuzzTimer
	ctxs    []*fuzzCtx
	ops     []*fuzzOp
	stopped bool      // the wheel's Stop has run
	stopAt  time.Time // when
	closed  bool      // the purgatory is closed (by Close, or by the wheel's Stop)
	waits   sync.WaitGroup
	trace   []string
}

func runClock(t *testing.T, prog []byte) {
	w := &clockWorld{t: t, prog: prog, made: time.Now()}
	opts := []timingwheel.Option{timingwheel.WithShards(1 + int(w.byte()%2)), timingwheel.WithObserver(&w.late), timingwheel.WithLogger(slog.New(slog.DiscardHandler))}
	if w.byte()%2 == 0 {
		opts = append(opts, timingwheel.WithExecutor(timingwheel.InlineExecutor()))
	}
	var err error
	w.tw, err = timingwheel.New(opts...)
	require.NoError(t, err)
	w.p, err = purgatory.New[int]("fuzz", purgatory.WithTimingWheel(w.tw))
	require.NoError(t, err)
	defer w.close()
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CLOCKTRACE") == "1" {
			t.Logf("the program:\n\t%s", strings.Join(w.trace, "\n\t"))
		}
	})
	for len(w.prog) > 0 {
		w.step(w.byte())
		synctest.Wait()
		w.check()
	}
	w.sleep(2 * time.Second) // every deadline within reach comes
	synctest.Wait()
	w.check()
}

// close ends what is left, so that no goroutine outlives the bubble.
func (w *clockWorld) close() {
	for _, c := range w.ctxs {
		c.cancel[0]()
		c.cancel[1]()
	}
	w.p.Close()
	w.tw.Stop()
	for _, ft := range w.timers {
		ft.refStop()
	}
	for _, o := range w.ops {
		o.refEnd(purgatory.Closed)
	}
	w.waits.Wait()
}

func (w *clockWorld) byte() byte {
	if len(w.prog) == 0 {
		return 0
	}
	b := w.prog[0]
	w.prog = w.prog[1:]
	return b
}

// duration reads a duration: an extreme for an even byte; else, by v of
// 0 to 63 in the byte's upper bits, v quarter ticks below 48 and (v-47)
// tenths of a second from there, a nanosecond more for some.
func (w *clockWorld) duration() time.Duration {
	b := w.byte()
	if b%2 == 0 {
		return extremes[int(b/2)%len(extremes)]
	}
	ns := time.Duration(b >> 1 & 1)
	if v := time.Duration(b >> 2); v < 48 {
		return v*tick/4 + ns
	} else {
		return (v-47)*100*time.Millisecond + ns
	}
}

// interval reads a recurring schedule's interval: a tick or more, so that
// a program's sleeps see a bounded number of runs.
func (w *clockWorld) interval() time.Duration {
	switch b := w.byte(); b % 4 {
	case 0:
		return math.MaxInt64
	case 1:
		return tick + time.Duration(b>>2)
	default:
		return tick * time.Duration(1+b%32)
	}
}

func (w *clockWorld) log(format string, a ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%v: ", time.Since(w.made))+fmt.Sprintf(format, a...))
}

// step runs one step of the program, chosen by b.
func (w *clockWorld) step(b byte) {
	switch b % 16 {
	case 0, 1, 2:
		w.armTimer(b%16, w.duration())
	case 3:
		w.schedule(w.interval())
	case 4:
		w.stopTimer(w.byte())
	case 5:
		w.resetTimer(w.byte(), w.duration())
	case 6:
		w.newCtx(w.duration(), w.byte()%2 == 0)
	case 7:
		w.cancelCtx(w.byte())
	case 8, 9, 10, 11:
		w.addOp(opKind(b%16-8), w.duration())
	case 12:
		w.complete(w.byte())
	case 13, 14:
		w.sleep(time.Duration(w.byte()) * tick / 4)
	case 15:
		w.stopOrClose(w.byte())
	}
}

// onTime requires an end of ours at at to come with the reference's, at
// ref: never before it, at most a tick after it.
func (w *clockWorld) onTime(name string, at, ref time.Time) {
	require.False(w.t, at.Before(ref), "%s at %v: %v before the reference", name, at.Sub(w.made), ref.Sub(at))
	require.LessOrEqual(w.t, at.Sub(ref), tick, "%s at %v: %v after the reference", name, at.Sub(w.made), at.Sub(ref))
}

// check compares everything with the reference.
func (w *clockWorld) check() {
	resident, fired := 0, int64(0)
	for _, ft := range w.timers {
		ft.check(w)
		ft.mu.Lock()
		fired += int64(len(ft.refRuns))
		if ft.refPending {
			resident++
		}
		ft.mu.Unlock()
	}
	for _, c := range w.ctxs {
		c.check(w)
		if c.resident(w.stopped) {
			resident++
		}
		if w.firedOnWheel(c.armed && c.ref.Err() == context.DeadlineExceeded, c.doneAt()) {
			fired++
		}
	}
	for _, o := range w.ops {
		o.check(w)
		if o.resident() && !w.stopped {
			resident++
		}
		if out, at := o.refEnded(); o.kind == watched && w.firedOnWheel(out == purgatory.Expired, at) {
			fired++
		}
	}
	require.Equal(w.t, resident, w.tw.Len(), "Len: the timers, contexts and operations' timeouts waiting on the wheel")
	require.Equal(w.t, fired, w.tw.Stats().Fired, "Stats.Fired: the timers' runs, and the contexts and operations the wheel expired")
	w.checkStats()
	w.late.check(w.t, w.made)
}

// firedOnWheel reports whether an end at at was the wheel's: one that
// came (by the reference, ended) while the wheel ran.
func (w *clockWorld) firedOnWheel(ended bool, at time.Time) bool {
	return ended && (!w.stopped || !at.After(w.stopAt))
}

// checkStats requires the purgatory's Stats to count the operations as the
// references ended.
func (w *clockWorld) checkStats() {
	var want purgatory.Stats
	for _, o := range w.ops {
		if !o.counted {
			continue
		}
		want.Added++
		o.mu.Lock()
		if o.ref == purgatory.Pending {
			want.Delayed++
		} else {
			*statField(&want, o.ref)++
		}
		o.mu.Unlock()
	}
	got := w.p.Stats()
	got.Watched, got.Panics = 0, 0
	require.Equal(w.t, want, got, "the purgatory's Stats")
}

func statField(s *purgatory.Stats, o purgatory.Outcome) *int64 {
	switch o {
	case purgatory.Completed:
		return &s.Completed
	case purgatory.Expired:
		return &s.Expired
	case purgatory.ContextDone:
		return &s.ContextDone
	}
	return &s.Closed
}
