package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// W7 is scaling (DESIGN.md): G goroutines each loop one operation for a fixed
// time, with 100,000 timers (or operations) parked first, and the report
// gives total operations per second against G. An operation is an add+stop
// pair on a timer (wheel, owned, stdlib), or one operation added to a
// purgatory and completed by a check of its key (purgatory, naive): on a key
// of the goroutine's own, or on one of 16 keys that every goroutine shares
// (the -shared systems).
var scalingSystems = []string{"wheel", "owned", "stdlib", "purgatory", "naive", "purgatory-shared", "naive-shared"}

// sharedKeys is how many keys the -shared systems' goroutines share.
const sharedKeys = 16

func scalingGoroutines(p params) []int { return []int{1, 2, 4, 8} }

// loop is one goroutine's operation: it returns after one operation.
type loop func()

// scaler makes each goroutine's loop, and undoes what the system set up.
type scaler interface {
	loop(g int) loop
	close()
}

func newScaler(system string, parked int) (scaler, error) {
	switch system {
	case "wheel", "owned":
		tw, err := timingwheel.New()
		if err != nil {
			return nil, err
		}
		w := &wheelScaler{tw: tw, owned: system == "owned"}
		w.park(parked)
		return w, nil
	case "stdlib":
		s := &stdlibScaler{}
		for range parked {
			s.parked = append(s.parked, time.AfterFunc(30*time.Minute, func() {}))
		}
		return s, nil
	case "purgatory", "purgatory-shared":
		p, err := purgatory.New[int]("w7")
		if err != nil {
			return nil, err
		}
		s := &purgatoryScaler{p: p, shared: system == "purgatory-shared"}
		s.park(parked)
		return s, nil
	case "naive", "naive-shared":
		n := &naive{lists: map[int][]*naiveReq{}}
		s := &naiveScaler{n: n, shared: system == "naive-shared"}
		s.park(parked)
		return s, nil
	}
	return nil, fmt.Errorf("unknown W7 system %q (have %v)", system, scalingSystems)
}

// wheelScaler is this library's wheel: AfterFunc+Stop, or (owned) Reset+Stop
// of a Timer embedded in a record of the goroutine's own.
type wheelScaler struct {
	tw     *timingwheel.TimingWheel
	owned  bool
	parked []*timingwheel.Timer
}

type ownedRecord struct {
	timer timingwheel.Timer
	_     [64]byte // records of different goroutines on lines of their own
}

func (*ownedRecord) Fire() {}

func (w *wheelScaler) park(n int) {
	for range n {
		w.parked = append(w.parked, w.tw.AfterFunc(30*time.Minute, func() {}))
	}
}

func (w *wheelScaler) loop(int) loop {
	if !w.owned {
		return func() { w.tw.AfterFunc(30*time.Second, noop).Stop() }
	}
	r := new(ownedRecord)
	w.tw.InitTimer(&r.timer, r)
	return func() {
		r.timer.Reset(30 * time.Second)
		r.timer.Stop()
	}
}

func (w *wheelScaler) close() { w.tw.Stop() }

type stdlibScaler struct{ parked []*time.Timer }

func (*stdlibScaler) loop(int) loop {
	return func() { time.AfterFunc(30*time.Second, noop).Stop() }
}

func (s *stdlibScaler) close() {
	for _, t := range s.parked {
		t.Stop()
	}
}

func noop() {}

// w7op is W7's purgatory operation: it completes once ready is set.
type w7op struct {
	purgatory.Op
	ready atomic.Bool
}

func (o *w7op) TryComplete() bool { return o.ready.Load() }
func (o *w7op) OnComplete()       {}
func (o *w7op) OnExpiration()     {}

// keyOf is the key goroutine g uses for its i-th operation: its own, or one
// of the shared ones in turn. Parked operations live on keys below 0.
func keyOf(g, i int, shared bool) int {
	if shared {
		return (g + i) % sharedKeys
	}
	return g
}

type purgatoryScaler struct {
	p      *purgatory.Purgatory[int]
	shared bool
}

// park adds n operations that never complete, 100 per key, on keys nobody
// checks.
func (s *purgatoryScaler) park(n int) {
	for i := range n {
		op := &w7op{}
		op.Timeout = 30 * time.Minute
		s.p.TryCompleteElseWatch(op, -1-i/100)
	}
}

func (s *purgatoryScaler) loop(g int) loop {
	i := 0
	return func() {
		key := keyOf(g, i, s.shared)
		i++
		op := &w7op{}
		op.Timeout = 30 * time.Second
		s.p.TryCompleteElseWatch(op, key)
		op.ready.Store(true)
		s.p.CheckAndComplete(key)
	}
}

func (s *purgatoryScaler) close() { s.p.Close() }

// naiveScaler drives W5's naive purgatory the same way. Its requests count
// their endings on a traffic of the goroutine's own, so that the count
// shares nothing between goroutines.
type naiveScaler struct {
	n      *naive
	shared bool
	parked *traffic
}

func (s *naiveScaler) park(n int) {
	s.parked = &traffic{allEnded: make(chan struct{})}
	for i := range n {
		s.n.add(&request{traffic: s.parked}, -1-i/100, 30*time.Minute)
	}
}

func (s *naiveScaler) loop(g int) loop {
	t := &traffic{allEnded: make(chan struct{})}
	i := 0
	return func() {
		key := keyOf(g, i, s.shared)
		i++
		r := &request{traffic: t}
		s.n.add(r, key, 30*time.Second)
		r.ready.Store(true)
		s.n.check(key)
	}
}

func (s *naiveScaler) close() {}

// w7 runs G goroutines of system's loop for the workload's length after
// parking, and reports total operations per second (in millions), the CPU
// the process used per million operations, and how many cores it kept busy.
func w7(system string, goroutines int, p params) (result, error) {
	s, err := newScaler(system, p.n(100_000, 1_000))
	if err != nil {
		return result{}, err
	}
	defer s.close()
	length := time.Duration(p.n(1500, 50)) * time.Millisecond
	loops := make([]loop, goroutines)
	for g := range loops {
		loops[g] = s.loop(g)
	}
	runtime.GC()
	var stop atomic.Bool
	counts := make([]struct {
		n int64
		_ [56]byte
	}, goroutines)
	var ready, wg sync.WaitGroup
	ready.Add(goroutines)
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			ready.Done()
			<-start
			f, n := loops[g], int64(0)
			for !stop.Load() {
				for range 64 {
					f()
				}
				n += 64
			}
			counts[g].n = n
		})
	}
	ready.Wait()
	cpu0, t0 := cpuTime(), time.Now()
	close(start)
	time.Sleep(length)
	stop.Store(true)
	wg.Wait()
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	var total int64
	for _, c := range counts {
		total += c.n
	}
	return result{Metrics: map[string]float64{
		"mops_per_s":     float64(total) / wall.Seconds() / 1e6,
		"cpu_s_per_mops": cpu.Seconds() / (float64(total) / 1e6),
		"cores":          cpu.Seconds() / wall.Seconds(),
	}}, nil
}
