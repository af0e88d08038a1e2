package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// W8 is the loop a broker runs most: a request that cannot complete yet is
// added, its event arrives, and a check of its key completes it. Each of G
// goroutines loops add+complete on a key of its own, each operation with a
// timeout drawn from U[1 s, 10 s), after 100,000 operations are parked on 1 h
// timeouts under 1,000 other keys. Systems: the purgatory with a fresh
// operation per request, and with operations it recycles; lean, the leanest
// hand-written version (a mutex, one map of watch lists, a time.AfterFunc per
// operation whose callback only marks it ended; a check ends the ready ones
// under the lock and compacts the list), fresh and pooled (a sync.Pool of
// operations, each with one time.Timer it Resets); and the bench's naive.
var w8Systems = []string{"purgatory", "purgatory-reused", "lean", "lean-pooled", "naive"}

// w8Loop is one goroutine's loop: it runs one add+complete.
type w8Loop func(rng *rand.Rand)

type w8System interface {
	loop(g int) w8Loop
	close()
}

// w8Timeout is an operation's timeout, U[1 s, 10 s).
func w8Timeout(rng *rand.Rand) time.Duration {
	return time.Second + time.Duration(rng.Int64N(int64(9*time.Second)))
}

func newW8System(name string, parked int) (w8System, error) {
	switch name {
	case "purgatory", "purgatory-reused":
		p, err := purgatory.New[int]("w8")
		if err != nil {
			return nil, err
		}
		for i := range parked {
			op := &w8op{}
			op.Timeout = time.Hour
			p.TryCompleteElseWatch(op, -1-i%1000)
		}
		return &w8Purgatory{p: p, reuse: name == "purgatory-reused"}, nil
	case "lean", "lean-pooled":
		n := &lean{watch: map[int][]*leanOp{}}
		for i := range parked {
			n.add(-1-i%1000, &leanOp{}, time.Hour)
		}
		return &w8Lean{n: n, pooled: name == "lean-pooled"}, nil
	case "naive":
		n := &naive{lists: map[int][]*naiveReq{}}
		t := &traffic{allEnded: make(chan struct{})}
		for i := range parked {
			n.add(&request{traffic: t}, -1-i%1000, time.Hour)
		}
		return &w8Naive{n: n}, nil
	}
	return nil, fmt.Errorf("unknown W8 system %q (have %v)", name, w8Systems)
}

// w8op is W8's purgatory operation: it completes once ready is set. Reused,
// it goes back to its pool once the purgatory is done with it (Recycle).
type w8op struct {
	purgatory.Op
	ready atomic.Bool
	pool  *sync.Pool // nil: not reused
}

func (o *w8op) TryComplete() bool { return o.ready.Load() }
func (o *w8op) OnComplete()       {}
func (o *w8op) OnExpiration()     {}

// Recycle puts a reused operation back in its pool: the purgatory is done
// with it.
func (o *w8op) Recycle() {
	if o.pool != nil {
		o.pool.Put(o)
	}
}

type w8Purgatory struct {
	p     *purgatory.Purgatory[int]
	reuse bool
	pool  sync.Pool
}

func (s *w8Purgatory) loop(g int) w8Loop {
	return func(rng *rand.Rand) {
		op := s.get()
		op.Timeout = w8Timeout(rng)
		s.p.TryCompleteElseWatch(op, g)
		op.ready.Store(true)
		if s.p.CheckAndComplete(g) != 1 {
			panic("W8: the operation did not complete")
		}
	}
}

func (s *w8Purgatory) get() *w8op {
	if !s.reuse {
		return &w8op{}
	}
	if op, ok := s.pool.Get().(*w8op); ok {
		op.ready.Store(false)
		return op
	}
	return &w8op{pool: &s.pool}
}

func (s *w8Purgatory) close() { s.p.Close() }

// lean is the lean version, exactly.
type leanOp struct {
	ready, ended atomic.Bool
	t            *time.Timer
}

type lean struct {
	mu    sync.Mutex
	watch map[int][]*leanOp
}

func (n *lean) add(key int, o *leanOp, d time.Duration) { // no try before watching: the op is not ready
	n.mu.Lock()
	n.watch[key] = append(n.watch[key], o)
	n.mu.Unlock()
	o.t = time.AfterFunc(d, func() { o.ended.CompareAndSwap(false, true) }) // expiry: no callback beyond the CAS
}

func (n *lean) check(key int) (c int) { // ends ready ops under the lock, compacts in place
	n.mu.Lock()
	l := n.watch[key]
	k := 0
	for _, o := range l {
		if o.ready.Load() && o.ended.CompareAndSwap(false, true) {
			if o.t != nil { // nil: added untimed (W8ledger)
				o.t.Stop()
			}
			c++
			continue
		}
		l[k] = o
		k++
	}
	clear(l[k:])
	n.watch[key] = l[:k]
	n.mu.Unlock()
	return c
}

// addPooled is add for an operation from the pool: its one timer, made on
// its first use, is Reset.
func (n *lean) addPooled(key int, o *leanOp, d time.Duration) {
	n.mu.Lock()
	n.watch[key] = append(n.watch[key], o)
	n.mu.Unlock()
	if o.t == nil {
		o.t = time.AfterFunc(d, func() { o.ended.CompareAndSwap(false, true) })
		return
	}
	o.t.Reset(d)
}

// addUntimed is add with no timer (W8ledger's untimed line).
func (n *lean) addUntimed(key int, o *leanOp) {
	n.mu.Lock()
	n.watch[key] = append(n.watch[key], o)
	n.mu.Unlock()
}

type w8Lean struct {
	n      *lean
	pooled bool
	pool   sync.Pool
}

func (s *w8Lean) loop(g int) w8Loop {
	return func(rng *rand.Rand) {
		if !s.pooled {
			o := &leanOp{}
			s.n.add(g, o, w8Timeout(rng))
			o.ready.Store(true)
			if s.n.check(g) != 1 {
				panic("W8: the lean operation did not complete")
			}
			return
		}
		o, _ := s.pool.Get().(*leanOp)
		if o == nil {
			o = &leanOp{}
		}
		o.ready.Store(false)
		o.ended.Store(false)
		s.n.addPooled(g, o, w8Timeout(rng))
		o.ready.Store(true)
		if s.n.check(g) != 1 {
			panic("W8: the lean operation did not complete")
		}
		s.pool.Put(o) // its timer was stopped before it fired: nothing of it runs later
	}
}

func (s *w8Lean) close() {}

type w8Naive struct{ n *naive }

func (s *w8Naive) loop(g int) w8Loop {
	t := &traffic{allEnded: make(chan struct{})}
	return func(rng *rand.Rand) {
		r := &request{traffic: t}
		s.n.add(r, g, w8Timeout(rng))
		r.ready.Store(true)
		s.n.check(g)
	}
}

func (s *w8Naive) close() {}

// w8Caller is what the caller allocates per operation in each system, its
// one operation, which W8's allocation figures leave out: objects and bytes.
// A pooled system's caller allocates none.
func w8Caller(system string) (objects, bytes float64) {
	switch system {
	case "purgatory-reused", "lean-pooled":
		return 0, 0
	case "purgatory":
		return 1, bytesOf(func() any { return &w8op{} })
	case "lean":
		return 1, bytesOf(func() any { return &leanOp{} })
	}
	return 1, bytesOf(func() any { return &request{} })
}

// bytesOf is how many heap bytes one value that alloc returns takes, its
// size class included.
func bytesOf(alloc func() any) float64 {
	const n = 1000
	objs := make([]any, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range objs {
		objs[i] = alloc()
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(objs)
	return float64(after.TotalAlloc-before.TotalAlloc) / n
}

// The runtime's counters W8 reads.
const (
	allocBytes   = "/gc/heap/allocs:bytes"
	allocObjects = "/gc/heap/allocs:objects"
	cpuTotal     = "/cpu/classes/total:cpu-seconds"
	cpuGC        = "/cpu/classes/gc/total:cpu-seconds"
	cpuAssist    = "/cpu/classes/gc/mark/assist:cpu-seconds"
	cpuIdleMark  = "/cpu/classes/gc/mark/idle:cpu-seconds"
)

// readMetrics returns the named runtime metrics, each as a float64 (counts
// as they are).
func readMetrics(names ...string) []float64 {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	out := make([]float64, len(s))
	for i := range s {
		switch s[i].Value.Kind() {
		case metrics.KindUint64:
			out[i] = float64(s[i].Value.Uint64())
		case metrics.KindFloat64:
			out[i] = s[i].Value.Float64()
		}
	}
	return out
}

// w8 runs G goroutines of system's loop for the workload's length after
// parking, and reports ns per add+complete (wall, all goroutines),
// operations per CPU-second, cores busy, the system's own allocations and
// bytes per operation (the caller's operation left out), and the collector's
// share of the CPU, with its mark assists and idle marking apart.
func w8(system string, goroutines int, p params) (result, error) {
	s, err := newW8System(system, p.n(100_000, 1_000))
	if err != nil {
		return result{}, err
	}
	defer s.close()
	callerObjects, callerBytes := w8Caller(system)
	length := time.Duration(p.n(2000, 50)) * time.Millisecond
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
		f := s.loop(g)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 8))
			ready.Done()
			<-start
			n := int64(0)
			for !stop.Load() {
				for range 64 {
					f(rng)
				}
				n += 64
			}
			counts[g].n = n
		})
	}
	ready.Wait()
	names := []string{allocBytes, allocObjects, cpuTotal, cpuGC, cpuAssist, cpuIdleMark}
	m0, cpu0, t0 := readMetrics(names...), cpuTime(), time.Now()
	close(start)
	time.Sleep(length)
	stop.Store(true)
	wg.Wait()
	wall, cpu, m1 := time.Since(t0), cpuTime()-cpu0, readMetrics(names...)
	var total int64
	for _, c := range counts {
		total += c.n
	}
	d := func(i int) float64 { return m1[i] - m0[i] }
	share := func(i int) float64 { // the runtime updates its CPU classes at each collection
		if d(2) == 0 {
			return 0 // none ran
		}
		return 100 * d(i) / d(2)
	}
	ops := float64(total)
	return result{Metrics: map[string]float64{
		"ns_per_op":         wall.Seconds() * 1e9 / ops,
		"ops_per_cpu_s":     ops / cpu.Seconds(),
		"cores":             cpu.Seconds() / wall.Seconds(),
		"own_allocs_per_op": d(1)/ops - callerObjects,
		"own_bytes_per_op":  d(0)/ops - callerBytes,
		"caller_bytes":      callerBytes,
		"gc_cpu_pct":        share(3),
		"gc_assist_pct":     share(4),
		"gc_idle_mark_pct":  share(5),
	}}, nil
}
