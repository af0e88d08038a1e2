package purgatory_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// TestClockSoak is the clock's soak in real time (issue 69), CI's own step:
// PURGATORY_SOAK=1m go test -run TestClockSoak. Four goroutines arm, in
// bursts while the driver sleeps, runs and is brought forward, timers
// (AfterFunc, an owned Timer's Reset), contexts, operations watched with a
// Timeout, parked waits and Waits, with durations drawn from the extremes
// or up to 1.5 s, and stop or complete some of them. Every end is checked
// when it comes (once, never early), and at the end every one that was due
// has ended, within 1 s of its deadline (the clock did not stop; the log
// gives the latenesses), and the wheel holds nothing.
func TestClockSoak(t *testing.T) {
	length, err := time.ParseDuration(os.Getenv("PURGATORY_SOAK"))
	if err != nil {
		t.Skip("a real-time soak: set PURGATORY_SOAK to its length, 1m in CI")
	}
	tw, err := timingwheel.New()
	require.NoError(t, err)
	defer tw.Stop()
	p, err := purgatory.New[int]("soak", purgatory.WithTimingWheel(tw))
	require.NoError(t, err)
	defer p.Close()
	tw.AfterFunc(time.Hour, noop) // the driver always has a later deadline to sleep on
	s := &soak{tw: tw, p: p}
	var wg sync.WaitGroup
	until := time.Now().Add(length)
	for g := range 4 {
		wg.Go(func() { s.run(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(g))), until) })
	}
	wg.Wait()
	s.settle(t)
}

// soakEnd is one arming of the soak: its deadline, whether something else
// ended it first (a Stop, a completion), and its ends.
type soakEnd struct {
	start    time.Time
	d        time.Duration
	ends     atomic.Int32
	early    atomic.Int64 // how early its end came, if it did
	at       atomic.Int64 // its end, in nanoseconds since start
	ended    atomic.Bool  // stopped or completed instead: no timed end is due
	stop     func() bool  // stops it, if it can be stopped
	complete func()
}

// end records a timed end: once, never early.
func (e *soakEnd) end() {
	el := time.Since(e.start)
	e.at.Store(int64(el))
	if e.ends.Add(1) == 1 && el < max(e.d, 0) {
		e.early.Store(int64(max(e.d, 0) - el))
	}
}

type soak struct {
	tw      *timingwheel.TimingWheel
	p       *purgatory.Purgatory[int]
	keys    atomic.Int64
	waits   sync.WaitGroup
	mu      sync.Mutex
	all     []*soakEnd      // those still open when their goroutine stopped arming
	late    []time.Duration // the timed ends' latenesses
	armings int
}

// done reports whether e needs no more looking after: it ended, or
// something else ended it, and it ended once and never early (else it is
// kept, for settle to report).
func (e *soakEnd) done() bool {
	return (e.ends.Load() == 1 || e.ended.Load() && e.ends.Load() == 0) && e.early.Load() == 0
}

// lateness is how long after its deadline e ended.
func (e *soakEnd) lateness() time.Duration { return time.Duration(e.at.Load()) - max(e.d, 0) }

// pickSoak returns a duration: an extreme for one in three, else up to 1.5 s.
func pickSoak(r *rand.Rand) time.Duration {
	if r.IntN(3) == 0 {
		return extremes[r.IntN(len(extremes))]
	}
	return time.Duration(r.Int64N(int64(1500 * time.Millisecond)))
}

// run arms bursts until until, letting go of each arming once it is done
// (so that a minute's millions are not all held), and hands the rest to
// settle.
func (s *soak) run(r *rand.Rand, until time.Time) {
	var mine []*soakEnd
	var late []time.Duration
	armings := 0
	for time.Now().Before(until) {
		for range 25 {
			e := &soakEnd{d: pickSoak(r), start: time.Now()}
			s.arm(r.IntN(10), e)
			mine = append(mine, e)
			armings++
			if r.IntN(8) == 0 {
				s.cut(e)
			}
		}
		mine = slices.DeleteFunc(mine, func(e *soakEnd) bool {
			if e.ends.Load() == 1 && e.done() {
				late = append(late, e.lateness())
			}
			return e.done()
		})
		time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, mine...)
	s.late = append(s.late, late...)
	s.armings += armings
}

// arm arms e by one of the entries.
func (s *soak) arm(kind int, e *soakEnd) {
	switch kind {
	case 0, 1, 2:
		e.stop = s.tw.AfterFunc(e.d, e.end).Stop
	case 3:
		tm := new(timingwheel.Timer)
		s.tw.InitTimer(tm, timingwheel.HandlerFunc(e.end))
		tm.Reset(e.d)
		e.stop = tm.Stop
	case 4, 5:
		ctx, cancel := s.tw.WithTimeout(context.Background(), e.d)
		stop := context.AfterFunc(ctx, func() {
			if ctx.Err() == context.DeadlineExceeded {
				e.end()
			}
		})
		e.stop = func() bool { ok := stop(); cancel(); return ok }
	case 6, 7, 8:
		s.watch(e, false)
	default:
		s.watch(e, true)
	}
}

// watch adds an operation timed by e.d, on the wheel or parked.
func (s *soak) watch(e *soakEnd, parked bool) {
	key := int(s.keys.Add(1))
	op := &soakOp{e: e}
	op.Timeout = e.d
	if e.d == 0 {
		op.Timeout = -1 // zero is a forgotten field
		e.d = -1
	}
	e.complete = func() { op.ready.Store(true); s.p.CheckAndComplete(key) }
	if !parked {
		s.p.TryCompleteElseWatch(op, key)
		return
	}
	w, _ := s.p.TryCompleteElsePark(op, key)
	s.waits.Go(func() { w.Wait() }) // OnExpiration runs here, and ends e
}

// cut ends e before its time, if it still can be.
func (s *soak) cut(e *soakEnd) {
	switch {
	case e.stop != nil:
		e.ended.Store(e.stop())
	case e.complete != nil:
		e.complete()
	}
}

type soakOp struct {
	purgatory.Op
	e     *soakEnd
	ready atomic.Bool
}

func (o *soakOp) TryComplete() bool { return o.ready.Load() }
func (o *soakOp) OnComplete() {
	if o.Outcome() == purgatory.Completed {
		o.e.ended.Store(true)
	}
}
func (o *soakOp) OnExpiration() { o.e.end() }

// settle waits for every due end, then checks each and the wheel.
func (s *soak) settle(t *testing.T) {
	due := func(e *soakEnd) bool { return !e.ended.Load() && e.d < horizon }
	for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !slices.ContainsFunc(s.all, func(e *soakEnd) bool { return due(e) && e.ends.Load() == 0 }) {
			break
		}
	}
	late := s.late
	for _, e := range s.all {
		require.Zero(t, e.early.Load(), "an end of d=%v came early", e.d)
		require.LessOrEqual(t, e.ends.Load(), int32(1), "d=%v ended twice", e.d)
		switch {
		case due(e):
			require.EqualValues(t, 1, e.ends.Load(), "d=%v never ended: the clock stopped (Len %d)", e.d, s.tw.Len())
			late = append(late, e.lateness())
		case e.d >= horizon:
			assert.Zero(t, e.ends.Load(), "d=%v ended", e.d)
		}
		if e.stop != nil {
			e.stop()
		}
	}
	s.p.Close()
	s.waits.Wait()
	slices.Sort(late)
	require.NotEmpty(t, late)
	t.Logf("%d armings, %d timed ends: lateness p50 %v, p99 %v, max %v", s.armings, len(late),
		late[len(late)/2], late[len(late)*99/100], late[len(late)-1])
	require.LessOrEqual(t, late[len(late)-1], time.Second, "an end came more than a second late")
	require.Equal(t, 1, s.tw.Len(), "the wheel holds only the hour-long timer")
}
