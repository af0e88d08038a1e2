package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// W11 is a blocking query (issue 72): a store of keys with one modification
// index, as Consul's ?index=N&wait=… or an etcd watch. Get(key, min, wait)
// answers at once if the key's index is past min, else blocks until a Put
// moves it past or wait ends; Put bumps the index and wakes the key's
// waiters. 100,000 goroutines loop Get(key, last, wait) on key i mod K, a
// goroutine makes the Puts, to uniformly random keys at a fixed rate, and the
// figure is the process's CPU per wake: per Get that returned news in W-A and
// W-B, per Get returned in W-C (mostly timeouts).
//
//   - W-A: 10,000 keys, 20,000 Puts/s, wait 1 s, for 10 s;
//   - W-B: 100 keys, 5,000 Puts/s, wait 1 s, for 6 s (1,000 waiters a key);
//   - W-C: 10,000 keys, 100 Puts/s, wait 100 ms, for 6 s.
//
// Systems: wait, purgatory.Wait with a plain watch, as the README leads to;
// parked, TryCompleteElsePark with operations in a sync.Pool, put back once
// Wait returns; level-parked, the parked form at the level min+1 of the key
// (TryCompleteElseParkAt), each Put an Advance; channel, Consul's channel per
// key, closed and replaced by each Put, a waiter selecting on it and on a
// time.Timer of its goroutine's own; list, a sharded waiter list written by
// hand, each waiter a one-slot channel and a time.Timer of its goroutine's
// own, a Put sending to each waiter of its key under the shard's mutex.
var w11Systems = []string{"wait", "parked", "level-parked", "channel", "list"}

// w11Shape is one of W11's shapes.
type w11Shape struct {
	name   string
	keys   int
	rate   int // Puts per second
	wait   time.Duration
	length time.Duration
}

var w11Shapes = []w11Shape{
	{"W-A", 10_000, 20_000, time.Second, 10 * time.Second},
	{"W-B", 100, 5_000, time.Second, 6 * time.Second},
	{"W-C", 10_000, 100, 100 * time.Millisecond, 6 * time.Second},
}

const w11Waiters = 100_000

// w11Store is a store under test. get returns the key's index and whether it
// is past min (false: wait ended first).
type w11Store interface {
	get(g *w11Goroutine, key int, min uint64, wait time.Duration) (uint64, bool)
	put(key int, index uint64) // stores index as key's, and wakes its waiters
	close()
}

// w11Goroutine is a polling goroutine's own state, reused across its Gets.
type w11Goroutine struct {
	timer  *time.Timer   // channel's and list's
	signal chan struct{} // list's
}

// w11Index is the keys' indexes, read by every store and written by its put:
// the channel and the list store under the mutex that orders their wakes,
// so that no waiter is woken for an index it has seen (a spurious wake,
// which a Get would count as an expiry before its time); the purgatory
// stores before it checks the key, which tries each waiter again.
type w11Index []atomic.Uint64

func newW11Store(name string, keys int, idx w11Index) (w11Store, error) {
	switch name {
	case "wait", "parked", "level-parked":
		p, err := purgatory.New[int]("w11")
		if err != nil {
			return nil, err
		}
		s := &w11Purgatory{p: p, idx: idx, system: name}
		s.ops.New = func() any { return &w11Get{idx: idx} }
		return s, nil
	case "channel":
		s := &w11Channel{idx: idx, chans: make([]chan struct{}, keys)}
		for i := range s.chans {
			s.chans[i] = make(chan struct{})
		}
		return s, nil
	case "list":
		return &w11List{idx: idx, waiters: make([][]*w11Goroutine, keys)}, nil
	}
	return nil, fmt.Errorf("unknown W11 system %q (have %v)", name, w11Systems)
}

// w11Purgatory is the store on the purgatory.
type w11Purgatory struct {
	p      *purgatory.Purgatory[int]
	idx    w11Index
	system string
	ops    sync.Pool // *w11Get
}

// w11Get is a parked Get.
type w11Get struct {
	purgatory.Op
	idx w11Index
	key int
	min uint64
}

func (g *w11Get) TryComplete() bool { return g.idx[g.key].Load() > g.min }
func (*w11Get) OnComplete()         {}
func (*w11Get) OnExpiration()       {}

func (s *w11Purgatory) get(_ *w11Goroutine, key int, min uint64, wait time.Duration) (uint64, bool) {
	if v := s.idx[key].Load(); v > min {
		return v, true
	}
	switch s.system {
	case "wait":
		s.p.Wait(context.Background(), wait, func() bool { return s.idx[key].Load() > min }, key)
	default:
		g := s.ops.Get().(*w11Get)
		g.key, g.min, g.Timeout = key, min, wait
		var parked purgatory.Parked
		if s.system == "parked" {
			parked, _ = s.p.TryCompleteElsePark(g, key)
		} else {
			parked, _ = s.p.TryCompleteElseParkAt(g, purgatory.At(key, int64(min)+1))
		}
		parked.Wait()
		s.ops.Put(g) // the use is over once Wait has returned
	}
	v := s.idx[key].Load()
	return v, v > min
}

func (s *w11Purgatory) put(key int, index uint64) {
	s.idx[key].Store(index)
	if s.system == "level-parked" {
		s.p.Advance(key, int64(index))
		return
	}
	s.p.CheckAndComplete(key)
}

func (s *w11Purgatory) close() { s.p.Close() }

// w11Channel is Consul's: a channel per key, closed and replaced by each Put.
type w11Channel struct {
	mu    [64]sync.Mutex // key mod 64's: guards the key's channel and orders its index with it
	idx   w11Index
	chans []chan struct{}
}

func (s *w11Channel) get(g *w11Goroutine, key int, min uint64, wait time.Duration) (uint64, bool) {
	mu := &s.mu[key%len(s.mu)]
	mu.Lock()
	if v := s.idx[key].Load(); v > min {
		mu.Unlock()
		return v, true
	}
	ch := s.chans[key]
	mu.Unlock()
	resetTimer(&g.timer, wait)
	select {
	case <-ch:
		g.timer.Stop()
	case <-g.timer.C:
	}
	v := s.idx[key].Load()
	return v, v > min
}

func (s *w11Channel) put(key int, index uint64) {
	mu := &s.mu[key%len(s.mu)]
	mu.Lock()
	s.idx[key].Store(index)
	close(s.chans[key])
	s.chans[key] = make(chan struct{})
	mu.Unlock()
}

func (s *w11Channel) close() {}

// w11List is a sharded waiter list: a Put signals each waiter of its key,
// under the shard's mutex, on the waiter's one-slot channel.
type w11List struct {
	mu      [64]sync.Mutex
	idx     w11Index
	waiters [][]*w11Goroutine
}

func (s *w11List) get(g *w11Goroutine, key int, min uint64, wait time.Duration) (uint64, bool) {
	mu := &s.mu[key%len(s.mu)]
	mu.Lock()
	if v := s.idx[key].Load(); v > min {
		mu.Unlock()
		return v, true
	}
	if g.signal == nil {
		g.signal = make(chan struct{}, 1)
	}
	s.waiters[key] = append(s.waiters[key], g)
	mu.Unlock()
	resetTimer(&g.timer, wait)
	select {
	case <-g.signal:
		g.timer.Stop()
	case <-g.timer.C:
		mu.Lock()
		ws := s.waiters[key]
		found := false
		for i, w := range ws {
			if w == g {
				ws[i] = ws[len(ws)-1]
				s.waiters[key] = ws[:len(ws)-1]
				found = true
				break
			}
		}
		mu.Unlock()
		if !found { // a Put took it and signalled, under the mutex
			<-g.signal
		}
	}
	v := s.idx[key].Load()
	return v, v > min
}

func (s *w11List) put(key int, index uint64) {
	mu := &s.mu[key%len(s.mu)]
	mu.Lock()
	s.idx[key].Store(index)
	for _, w := range s.waiters[key] {
		w.signal <- struct{}{} // one slot, empty: each waiter is in one list at a time
	}
	s.waiters[key] = s.waiters[key][:0]
	mu.Unlock()
}

func (s *w11List) close() {}

// resetTimer arms *t for d, made at its first use.
func resetTimer(t **time.Timer, d time.Duration) {
	if *t == nil {
		*t = time.NewTimer(d)
		return
	}
	(*t).Reset(d)
}

// w11Counts is what the polling goroutines count while the run is measured.
type w11Counts struct {
	gets, news, expired, early, stale, missed atomic.Int64
	late                                      [64]struct { // lateness of the Gets that expired, goroutine i's in late[i mod 64]
		mu sync.Mutex
		h  durations
	}
}

// addLate records goroutine i's Get that expired d after its wait.
func (c *w11Counts) addLate(i int, d time.Duration) {
	l := &c.late[i%len(c.late)]
	l.mu.Lock()
	l.h.add(d)
	l.mu.Unlock()
}

// lateMs returns the q-quantile of the lateness, in milliseconds.
func (c *w11Counts) lateMs(q float64) float64 {
	var all durations
	for i := range c.late {
		h := &c.late[i].h
		for b, n := range h.counts {
			all.counts[b] += n
		}
		all.n += h.n
		all.max = max(all.max, h.max)
	}
	return all.quantileMs(q)
}

func w11(system string, p params) (result, error) {
	shape := w11Shapes[p.shape]
	waiters, length := w11Waiters, shape.length
	if p.quick {
		waiters, length = waiters/100, length/10
	}
	idx := make(w11Index, shape.keys)
	lastPut := make([]atomic.Int64, shape.keys) // when each key's index last moved, since began
	store, err := newW11Store(system, shape.keys, idx)
	if err != nil {
		return result{}, err
	}
	var measuring, stop atomic.Bool
	var c w11Counts
	runtime.GC() // before the goroutines start: under W-C's load a forced collection takes minutes
	began := time.Now()
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			key := i % shape.keys
			g := &w11Goroutine{}
			var last uint64
			for !stop.Load() {
				start := time.Since(began)
				v, ok := store.get(g, key, last, shape.wait)
				end := time.Since(began)
				if !measuring.Load() {
					last = max(last, v)
					continue
				}
				c.gets.Add(1)
				switch {
				case ok && v <= last:
					c.stale.Add(1)
				case ok:
					c.news.Add(1)
				default:
					c.expired.Add(1)
					if end-start < shape.wait {
						c.early.Add(1)
					}
					c.addLate(i, end-start-shape.wait)
					if v > last && time.Duration(lastPut[key].Load()) < start+shape.wait-time.Millisecond {
						c.missed.Add(1) // news came over 1 ms before the wait ended, and the Get did not see it
					}
				}
				last = max(last, v)
			}
		})
	}
	trace := func(what string) { // W11_TRACE=1 prints when each phase ends, to stderr
		if os.Getenv("W11_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "w11: %s at %v\n", what, time.Since(began))
		}
	}
	trace("started")
	var index uint64
	put := func(rng *rand.Rand) {
		key := rng.IntN(shape.keys)
		index++
		lastPut[key].Store(int64(time.Since(began)))
		store.put(key, index)
	}
	// Let every goroutine make its first Get (answered at once, index 0 is
	// nobody's news) and park, then measure.
	rng := rand.New(rand.NewPCG(11, uint64(p.shape)))
	for range shape.keys {
		put(rng)
	}
	trace("put")
	time.Sleep(shape.wait + shape.wait/2)
	trace("slept")
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	stopProfile := w11Profile()
	measuring.Store(true)
	t0 := time.Now()
	var done float64
	for tick := time.NewTicker(time.Millisecond); time.Since(t0) < length; <-tick.C {
		due := time.Since(t0).Seconds() * float64(shape.rate)
		for ; done+1 <= due; done++ {
			put(rng)
		}
	}
	measuring.Store(false)
	stopProfile()
	trace(fmt.Sprintf("measured %v, %d puts,", time.Since(t0), int(done)))
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	rss := peakRSSMB()
	stop.Store(true)
	for k := range shape.keys { // end the waits: every key's index moves once more
		index++
		store.put(k, index)
	}
	trace("stopped")
	wg.Wait()
	trace("all ended")
	store.close()
	per := c.news.Load()
	if shape.name == "W-C" {
		per = c.gets.Load()
	}
	m := map[string]float64{
		"cpu_us_per_wake": cpu.Seconds() * 1e6 / float64(max(per, 1)),
		"gets":            float64(c.gets.Load()),
		"news":            float64(c.news.Load()),
		"expired_pct":     100 * float64(c.expired.Load()) / float64(max(c.gets.Load(), 1)),
		"late_p50_ms":     c.lateMs(0.5),
		"late_p99_ms":     c.lateMs(0.99),
		"early":           float64(c.early.Load()),
		"stale":           float64(c.stale.Load()),
		"missed":          float64(c.missed.Load()),
		"peak_rss_mb":     rss,
		"gcs":             float64(ms1.NumGC - ms0.NumGC),
		"puts_per_s":      done / length.Seconds(),
	}
	maps.DeleteFunc(m, func(_ string, v float64) bool { return math.IsNaN(v) }) // no Get expired: no lateness
	return result{Metrics: m}, nil
}

// w11Profile starts a CPU profile of the measured time alone, to the file
// that W11_PROFILE names (-cpuprofile covers the set-up of 100,000
// goroutines too), and returns what stops it.
func w11Profile() func() {
	name := os.Getenv("W11_PROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
