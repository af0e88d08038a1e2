package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// W8ledger is W8's add+complete at one goroutine, reused operations against
// pooled lean, taken apart (issue 49's ledger): each line below is a loop of
// its own, timed in one process, the lines in turn for several rounds so that
// a drift of the machine moves them all, and each line's median of the rounds
// reported. A step's cost is the difference of two lines: the timer is
// "timer", the bookkeeping is "total" less "timer". Like W8, 100,000
// operations are parked first on 1 h timeouts under 1,000 other keys.
var ledgerSystems = []string{"purgatory-reused", "lean-pooled"}

// ledgerLines are the lines, in the report's order, with what each times.
var ledgerLines = []struct{ name, what string }{
	{"total", "add+complete: W8's loop at G=1 (timeout U[1 s, 10 s))"},
	{"untimed", "add+complete without a timeout (NoTimeout; lean: no timer)"},
	{"timer", "the timeout alone: arm at U[1 s, 10 s) and stop (an owned Timer on the purgatory's wheel; time.Timer's Reset and Stop)"},
	{"forced", "add, then end it without a walk (ForceComplete; lean has none)"},
	{"walk_no", "a check of a key whose one operation says no: a walk that ends nothing"},
}

// ledgerRounds is how many times each line is timed in a process.
const ledgerRounds = 9

// ledgerSystem runs one line n times.
type ledgerSystem interface {
	line(name string) func(n int, rng *rand.Rand)
	close()
}

// ledger times each line of system's ledger, the lines in turn, and reports
// each line's median ns per loop as "<line>_ns".
func ledger(system string, p params) (result, error) {
	s, err := newLedgerSystem(system, p.n(100_000, 1_000))
	if err != nil {
		return result{}, err
	}
	defer s.close()
	per := time.Duration(p.n(150, 5)) * time.Millisecond // each line, each round
	rng := rand.New(rand.NewPCG(1, 8))
	times := map[string][]float64{}
	for r := range ledgerRounds {
		for i := range ledgerLines {
			l := ledgerLines[(i+r)%len(ledgerLines)]
			if f := s.line(l.name); f != nil {
				times[l.name] = append(times[l.name], timeLine(f, per, rng))
			}
		}
	}
	out := result{Metrics: map[string]float64{}}
	for name, ts := range times {
		slices.Sort(ts)
		out.Metrics[name+"_ns"] = ts[len(ts)/2]
	}
	return out, nil
}

// timeLine runs f for about per, after a short warm-up that sizes the
// batch, and returns its ns per loop.
func timeLine(f func(int, *rand.Rand), per time.Duration, rng *rand.Rand) float64 {
	n := 1_000
	t0 := time.Now()
	f(n, rng)
	if d := time.Since(t0); d > 0 {
		n = max(int(float64(n)*float64(per)/float64(d)), 1_000)
	}
	t0 = time.Now()
	f(n, rng)
	return float64(time.Since(t0).Nanoseconds()) / float64(n)
}

func newLedgerSystem(name string, parked int) (ledgerSystem, error) {
	switch name {
	case "purgatory-reused":
		return newLedgerPurgatory(parked)
	case "lean-pooled":
		n := &lean{watch: map[int][]*leanOp{}}
		for i := range parked {
			n.add(-1-i%1000, &leanOp{}, time.Hour)
		}
		return &ledgerLean{n: n}, nil
	}
	return nil, fmt.Errorf("unknown W8ledger system %q (have %v)", name, ledgerSystems)
}

// The keys of the ledger's loops: one that each add+complete uses, and one
// whose one operation never completes (walk_no).
const (
	ledgerKey   = 0
	ledgerNoKey = 1
)

// ledgerPurgatory is the purgatory on a wheel the bench owns, so that the
// timer line arms a Timer on the same wheel as the operations' timeouts.
type ledgerPurgatory struct {
	tw    *timingwheel.TimingWheel
	p     *purgatory.Purgatory[int]
	pool  sync.Pool
	timer timingwheel.Timer
}

func newLedgerPurgatory(parked int) (*ledgerPurgatory, error) {
	tw, err := timingwheel.New()
	if err != nil {
		return nil, err
	}
	p, err := purgatory.New[int]("w8ledger", purgatory.WithTimingWheel(tw))
	if err != nil {
		tw.Stop()
		return nil, err
	}
	for i := range parked {
		op := &w8op{}
		op.Timeout = time.Hour
		p.TryCompleteElseWatch(op, -1-i%1000)
	}
	never := &w8op{}
	never.Timeout = purgatory.NoTimeout
	p.TryCompleteElseWatch(never, ledgerNoKey)
	s := &ledgerPurgatory{tw: tw, p: p}
	tw.InitTimer(&s.timer, timingwheel.HandlerFunc(func() {}))
	return s, nil
}

func (s *ledgerPurgatory) get() *w8op {
	if op, ok := s.pool.Get().(*w8op); ok {
		op.ready.Store(false)
		return op
	}
	return &w8op{pool: &s.pool}
}

func (s *ledgerPurgatory) line(name string) func(int, *rand.Rand) {
	switch name {
	case "total", "untimed":
		timed := name == "total"
		return func(n int, rng *rand.Rand) {
			for range n {
				op := s.get()
				op.Timeout = purgatory.NoTimeout
				if timed {
					op.Timeout = w8Timeout(rng)
				}
				s.p.TryCompleteElseWatch(op, ledgerKey)
				op.ready.Store(true)
				if s.p.CheckAndComplete(ledgerKey) != 1 {
					panic("W8ledger: the operation did not complete")
				}
			}
		}
	case "timer":
		return func(n int, rng *rand.Rand) {
			for range n {
				s.timer.Reset(w8Timeout(rng))
				s.timer.Stop()
			}
		}
	case "forced":
		return func(n int, rng *rand.Rand) {
			for range n {
				op := s.get()
				op.Timeout = w8Timeout(rng)
				s.p.TryCompleteElseWatch(op, ledgerKey)
				if !purgatory.ForceComplete(op) {
					panic("W8ledger: ForceComplete found the operation ended")
				}
			}
		}
	case "walk_no":
		return func(n int, _ *rand.Rand) {
			for range n {
				if s.p.CheckAndComplete(ledgerNoKey) != 0 {
					panic("W8ledger: an operation that never completes completed")
				}
			}
		}
	}
	return nil
}

func (s *ledgerPurgatory) close() {
	s.p.Close()
	s.tw.Stop()
}

// ledgerLean is W8's lean-pooled, taken apart the same way.
type ledgerLean struct {
	n     *lean
	pool  sync.Pool // the total line's operations, each with its timer
	bare  sync.Pool // the untimed line's, with none
	timer *time.Timer
	never *leanOp
}

func (s *ledgerLean) get(pool *sync.Pool) *leanOp {
	o, _ := pool.Get().(*leanOp)
	if o == nil {
		o = &leanOp{}
	}
	o.ready.Store(false)
	o.ended.Store(false)
	return o
}

func (s *ledgerLean) line(name string) func(int, *rand.Rand) {
	switch name {
	case "total", "untimed":
		timed, pool := name == "total", &s.pool
		if !timed {
			pool = &s.bare
		}
		return func(n int, rng *rand.Rand) {
			for range n {
				o := s.get(pool)
				if timed {
					s.n.addPooled(ledgerKey, o, w8Timeout(rng))
				} else {
					s.n.addUntimed(ledgerKey, o)
				}
				o.ready.Store(true)
				if s.n.check(ledgerKey) != 1 {
					panic("W8ledger: the lean operation did not complete")
				}
				pool.Put(o)
			}
		}
	case "timer":
		if s.timer == nil {
			s.timer = time.AfterFunc(time.Hour, func() {})
		}
		return func(n int, rng *rand.Rand) {
			for range n {
				s.timer.Reset(w8Timeout(rng))
				s.timer.Stop()
			}
		}
	case "walk_no":
		if s.never == nil {
			s.never = &leanOp{}
			s.n.addUntimed(ledgerNoKey, s.never)
		}
		return func(n int, _ *rand.Rand) {
			for range n {
				if s.n.check(ledgerNoKey) != 0 {
					panic("W8ledger: a lean operation that never completes completed")
				}
			}
		}
	}
	return nil // no forced: the lean version has no way to end an operation but its check or its timer
}

func (s *ledgerLean) close() {
	if s.timer != nil {
		s.timer.Stop()
	}
}
