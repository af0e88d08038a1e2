package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/purgatory-go/purgatory/purgatory"
)

// W10 is a connection pool: 10 connections lent to goroutines that acquire
// one with a timeout, hold it and release it (issue 51).
//
//   - W10, the stress: 64 goroutines acquire with timeouts of U[50 µs, 500 µs]
//     and hold for U[0, 100 µs], for 10 s: most waits are short, and many
//     time out. How late a timed-out acquire returns (return − timeout) is
//     the figure.
//   - W10acq: G goroutines acquire with 30 s timeouts and hold for 10 µs,
//     for 5 s, G = 64 (contended) and 1 (uncontended): the CPU per
//     acquire+release and how long an acquire waits.
//
// A hold is a time.Sleep, not a spin, so that its CPU is not the pool's; it
// lasts longer than asked where the runtime's sleeps are coarse (about 1 ms
// on the 2-core Linux machines here), the same for every system.
//
// Systems: recipe, docs/api.md's pool as it prints it (w10recipe.go: its
// acquires pooled and put back once Wait returns); purgatory, the same pool
// in the parked form
// (TryCompleteElsePark under the pool's mutex, Parked.Wait after it;
// Release pushes and hands off under the mutex), its operations reused
// through a sync.Pool (Recycler); purgatory-wheel, the same with the
// timeouts on the wheel, as before the parked form (TryCompleteElseWatch,
// and OnComplete answering on a channel of the goroutine's own); channel, a buffered channel of the
// connections, an acquire selecting on it and on a time.Timer of the
// goroutine's own; semaphore, golang.org/x/sync/semaphore's Weighted (its
// waiters are served in order) with a context.WithTimeout per wait, and
// the connections in a mutex-guarded list.
//
// Every system counts a connection acquired while another goroutine holds it
// (held twice) and, at the end, connections neither idle nor held (lost); an
// overtake is an acquire that got a connection before one that began
// earlier and got one later.
var w10Systems = []string{"recipe", "purgatory", "purgatory-wheel", "channel", "semaphore"}

const w10Conns = 10

// w10Conn is a pooled connection; held is 1 while a goroutine holds it.
type w10Conn struct {
	held atomic.Int32
}

// w10Pool is a pool under test.
type w10Pool interface {
	// acquire returns a connection, or nil once timeout has passed.
	acquire(g *w10Goroutine, timeout time.Duration) *w10Conn
	release(c *w10Conn)
	idle() int
	close()
}

// w10Goroutine is one acquiring goroutine's own state, reused.
type w10Goroutine struct {
	timer *time.Timer   // channel's
	conn  *w10Conn      // purgatory's: what its acquire got, copied out by OnComplete
	ended chan struct{} // purgatory-wheel's: OnComplete's answer
}

func newW10Pool(name string) (w10Pool, error) {
	conns := make([]*w10Conn, w10Conns)
	for i := range conns {
		conns[i] = new(w10Conn)
	}
	switch name {
	case "purgatory", "purgatory-wheel":
		p, err := purgatory.New[int]("w10")
		if err != nil {
			return nil, err
		}
		pool := &w10Purgatory{idleConns: conns, p: p, wheel: name == "purgatory-wheel"}
		pool.ops.New = func() any { return &w10Acquire{pool: pool} }
		return pool, nil
	case "recipe":
		p, err := purgatory.New[string]("w10")
		if err != nil {
			return nil, err
		}
		r := &w10Recipe{pool: &Pool{acquires: p}, conns: conns}
		for i := range conns {
			r.pool.idle = append(r.pool.idle, &Conn{ID: i})
		}
		return r, nil
	case "channel":
		ch := make(chan *w10Conn, w10Conns)
		for _, c := range conns {
			ch <- c
		}
		return w10Channel{ch}, nil
	case "semaphore":
		return &w10Semaphore{sem: semaphore.NewWeighted(w10Conns), idleConns: conns}, nil
	}
	return nil, fmt.Errorf("unknown W10 system %q (have %v)", name, w10Systems)
}

// w10Purgatory is docs/api.md's pool, parked, with reused operations.
type w10Purgatory struct {
	mu        sync.Mutex // guards idleConns; held by release's HandOff and acquire's add
	idleConns []*w10Conn
	p         *purgatory.Purgatory[int]
	ops       sync.Pool
	wheel     bool // purgatory-wheel: TryCompleteElseWatch, the timeout on the wheel
}

type w10Acquire struct {
	purgatory.Op
	pool *w10Purgatory
	g    *w10Goroutine
	conn *w10Conn
}

func (a *w10Acquire) TryComplete() bool { // pool.mu is held
	n := len(a.pool.idleConns)
	if n == 0 {
		return false
	}
	a.conn, a.pool.idleConns = a.pool.idleConns[0], a.pool.idleConns[1:]
	return true
}
func (a *w10Acquire) OnComplete() { // before Wait returns; a may be recycled by then
	a.g.conn = a.conn
	if a.pool.wheel {
		a.g.ended <- struct{}{}
	}
}
func (a *w10Acquire) OnExpiration() {}
func (a *w10Acquire) Recycle()      { a.pool.ops.Put(a) }

func (p *w10Purgatory) acquire(g *w10Goroutine, timeout time.Duration) *w10Conn {
	a := p.ops.Get().(*w10Acquire)
	a.Timeout, a.g, a.conn, g.conn = timeout, g, nil, nil
	p.mu.Lock()
	if p.wheel {
		if g.ended == nil {
			g.ended = make(chan struct{}, 1)
		}
		p.p.TryCompleteElseWatch(a, 0)
		p.mu.Unlock()
		<-g.ended
		return g.conn
	}
	parked, _ := p.p.TryCompleteElsePark(a, 0)
	p.mu.Unlock()
	parked.Wait()
	return g.conn
}

func (p *w10Purgatory) release(c *w10Conn) {
	p.mu.Lock()
	p.idleConns = append(p.idleConns, c)
	p.p.HandOff(0)
	p.mu.Unlock()
}

func (p *w10Purgatory) idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idleConns)
}

func (p *w10Purgatory) close() { p.p.Close() }

// w10Recipe runs docs/api.md's Pool (w10recipe.go), its Conn IDs indexing
// the W10 connections that count holds.
type w10Recipe struct {
	pool  *Pool
	conns []*w10Conn
	held  [w10Conns]*Conn // the recipe's Conn of each W10 connection lent
}

func (r *w10Recipe) acquire(_ *w10Goroutine, timeout time.Duration) *w10Conn {
	c, _ := r.pool.Acquire(context.Background(), timeout)
	if c == nil {
		return nil
	}
	r.held[c.ID] = c // only its holder writes it, until it releases c
	return r.conns[c.ID]
}

func (r *w10Recipe) release(c *w10Conn) {
	i := slices.Index(r.conns, c)
	r.pool.Release(r.held[i])
}

func (r *w10Recipe) idle() int {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	return len(r.pool.idle)
}

func (r *w10Recipe) close() { r.pool.acquires.Close() }

// w10Channel is a buffered channel of connections.
type w10Channel struct{ ch chan *w10Conn }

func (p w10Channel) acquire(g *w10Goroutine, timeout time.Duration) *w10Conn {
	select {
	case c := <-p.ch:
		return c
	default:
	}
	if g.timer == nil {
		g.timer = time.NewTimer(timeout)
	} else {
		g.timer.Reset(timeout)
	}
	select {
	case c := <-p.ch:
		g.timer.Stop()
		return c
	case <-g.timer.C:
		return nil
	}
}

func (p w10Channel) release(c *w10Conn) { p.ch <- c }
func (p w10Channel) idle() int          { return len(p.ch) }
func (p w10Channel) close()             {}

// w10Semaphore is x/sync's weighted semaphore over a list of connections.
type w10Semaphore struct {
	sem       *semaphore.Weighted
	mu        sync.Mutex
	idleConns []*w10Conn
}

func (p *w10Semaphore) acquire(_ *w10Goroutine, timeout time.Duration) *w10Conn {
	if !p.sem.TryAcquire(1) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := p.sem.Acquire(ctx, 1)
		cancel()
		if err != nil {
			return nil
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.idleConns[0]
	p.idleConns = p.idleConns[1:]
	return c
}

func (p *w10Semaphore) release(c *w10Conn) {
	p.mu.Lock()
	p.idleConns = append(p.idleConns, c)
	p.mu.Unlock()
	p.sem.Release(1)
}

func (p *w10Semaphore) idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idleConns)
}

func (p *w10Semaphore) close() {}

// w10Shape is one W10 run's load.
type w10Shape struct {
	goroutines     int
	timeoutLo, hiT time.Duration // U[lo, hi]
	holdLo, holdHi time.Duration
	length         time.Duration
}

func w10ShapeOf(p params) w10Shape {
	length := func(full time.Duration) time.Duration {
		if p.quick {
			return full / 100
		}
		return full
	}
	if p.goroutines == 0 { // W10, the stress
		return w10Shape{64, 50 * time.Microsecond, 500 * time.Microsecond, 0, 100 * time.Microsecond, length(10 * time.Second)}
	}
	return w10Shape{p.goroutines, 30 * time.Second, 30 * time.Second, 10 * time.Microsecond, 10 * time.Microsecond, length(5 * time.Second)}
}

// w10Record is one acquire: when it began and returned (since the run
// began), its timeout, and the order it got a connection in (0: none).
type w10Record struct {
	start, end time.Duration
	timeout    time.Duration
	got        int64
}

func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

func w10(system string, p params) (result, error) {
	pool, err := newW10Pool(system)
	if err != nil {
		return result{}, err
	}
	shape := w10ShapeOf(p)
	var twice, gotSeq atomic.Int64
	records := make([][]w10Record, shape.goroutines)
	began := time.Now()
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	for i := range shape.goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 10))
			g := &w10Goroutine{}
			for time.Since(began) < shape.length {
				timeout := uniform(rng, shape.timeoutLo, shape.hiT)
				r := w10Record{start: time.Since(began), timeout: timeout}
				c := pool.acquire(g, timeout)
				r.end = time.Since(began)
				if c != nil {
					r.got = gotSeq.Add(1)
					if !c.held.CompareAndSwap(0, 1) {
						twice.Add(1)
					}
					if hold := uniform(rng, shape.holdLo, shape.holdHi); hold > 0 {
						time.Sleep(hold)
					}
					c.held.Store(0)
					pool.release(c)
				}
				records[i] = append(records[i], r)
			}
		})
	}
	wg.Wait()
	cpu := cpuTime() - cpu0
	lost := w10Conns - pool.idle()
	pool.close()
	return result{Metrics: w10Metrics(slices.Concat(records...), cpu, twice.Load(), lost)}, nil
}

// w10Metrics summarizes the acquires: lateness of those that timed out,
// wait of those that got a connection, CPU per acquire+release, overtakes.
func w10Metrics(rs []w10Record, cpu time.Duration, twice int64, lost int) map[string]float64 {
	var late, wait []time.Duration
	var pairs int
	for _, r := range rs {
		if r.got == 0 {
			late = append(late, r.end-r.start-r.timeout)
			continue
		}
		pairs++
		wait = append(wait, r.end-r.start)
	}
	slices.Sort(late)
	slices.Sort(wait)
	m := map[string]float64{
		"acquires":        float64(len(rs)),
		"timed_out_pct":   100 * float64(len(late)) / float64(max(len(rs), 1)),
		"cpu_us_per_pair": cpu.Seconds() * 1e6 / float64(max(pairs, 1)),
		"wait_p50_ms":     quantileMs(wait, 0.5),
		"wait_p99_ms":     quantileMs(wait, 0.99),
		"overtakes_pct":   100 * float64(overtakes(rs)) / float64(max(pairs, 1)),
		"held_twice":      float64(twice),
		"lost":            float64(lost),
		"late_p50_ms":     quantileMs(late, 0.5),
		"late_p99_ms":     quantileMs(late, 0.99),
		"late_max_ms":     quantileMs(late, 1),
		"early":           float64(countBelow(late, 0)),
	}
	for k, v := range m {
		if v != v { // NaN: no sample (no acquire timed out)
			delete(m, k)
		}
	}
	return m
}

// overtakes counts the acquires that got a connection before another that
// began earlier and got one later.
func overtakes(rs []w10Record) int {
	var got []w10Record
	for _, r := range rs {
		if r.got != 0 {
			got = append(got, r)
		}
	}
	slices.SortFunc(got, func(a, b w10Record) int { return int(a.got - b.got) })
	n := 0
	earliest := time.Duration(1<<63 - 1) // the earliest start among those that got one later
	for i := len(got) - 1; i >= 0; i-- {
		if got[i].start > earliest {
			n++
		}
		earliest = min(earliest, got[i].start)
	}
	return n
}

func countBelow(sorted []time.Duration, v time.Duration) int {
	n, _ := slices.BinarySearch(sorted, v)
	return n
}
