package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// result is what a child process reports for one (system, workload) run. W4
// also reports its lateness in ms at each of latenessQuantiles, as metrics
// named by quantileMetric, for the distribution chart.
type result struct {
	Metrics map[string]float64 `json:"metrics"`
}

func quantileMetric(i int) string { return fmt.Sprintf("lateness_q%03d", i) }

// params sizes a workload: DESIGN.md's sizes, or a hundredth of them with
// -quick, so that CI can run the whole suite in seconds.
type params struct {
	quick      bool
	parked     int           // W2 and W3: timers parked at 30 min (0: the default)
	rate       int           // W5: requests per second (0: the default)
	keys       int           // W5: keys the requests are spread over (0: w5Keys)
	duration   time.Duration // W5 and soak: how long requests arrive (0: the default)
	open       bool          // W5: arrivals in an open loop (traffic)
	goroutines int           // W7: goroutines that loop at once
	receivers  int           // W9: receivers waiting for items
	race       bool          // W9: W9race's receivers, whose timeouts race the pushes
	shape      int           // W11: the index of its shape in w11Shapes
	// soak: a leak of the bench's own, to show the soak fails: bytes kept
	// per request, goroutines started a minute.
	leakBytes, leakGoroutines int
}

func (p params) n(full, quick int) int {
	if p.quick {
		return quick
	}
	return full
}

func (p params) parkedOr(full, quick int) int {
	if p.parked > 0 {
		return p.parked
	}
	return p.n(full, quick)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMB is the process's peak resident set size (Linux reports KiB).
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Maxrss) / 1024
}

type memSnap struct{ bytes, allocs uint64 }

func mem() memSnap {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnap{m.TotalAlloc, m.Mallocs}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func park(t timers, n int) []stopper {
	parked := make([]stopper, n)
	fill(t, parked)
	return parked
}

// fill parks a timer at 30 min in each slot of parked.
func fill(t timers, parked []stopper) {
	for i := range parked {
		parked[i] = t.AfterFunc(30*time.Minute, func() {})
	}
}

// w1 schedules n callbacks with delays U[1 ms, 1000 ms) from one goroutine and
// waits for all of them.
func w1(t timers, p params) result {
	n, maxDelay := p.n(1_000_000, 10_000), time.Duration(p.n(1000, 100))*time.Millisecond
	rng := rand.New(rand.NewPCG(1, 1))
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Millisecond + time.Duration(rng.Int64N(int64(maxDelay-time.Millisecond)))
	}
	var left atomic.Int64
	left.Store(int64(n))
	done := make(chan struct{})
	f := func() {
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	runtime.GC()
	m0, cpu0, t0 := mem(), cpuTime(), time.Now()
	for _, d := range delays {
		t.AfterFunc(d, f)
	}
	schedule := time.Since(t0)
	m1 := mem()
	<-done
	cpu := cpuTime() - cpu0
	return result{Metrics: map[string]float64{
		"schedule_ns_op": float64(schedule.Nanoseconds()) / float64(n),
		"cpu_s":          cpu.Seconds(),
		"peak_rss_mb":    peakRSSMB(),
		"bytes_op":       float64(m1.bytes-m0.bytes) / float64(n),
		"allocs_op":      float64(m1.allocs-m0.allocs) / float64(n),
	}}
}

// w2 parks timers at 30 min, then schedules a timer at 30 s and stops it, over
// and over, from one goroutine (goroutines = 1) or from several at once (W2p).
func w2(t timers, p params, goroutines int) result {
	parkedN, pairs := p.parkedOr(1_000_000, 10_000), p.n(5_000_000, 50_000)
	if p.parked > 0 { // the chart's sweep: enough pairs for a stable mean
		pairs = p.n(1_000_000, 20_000)
	}
	// The harness's own slice exists before the baseline, so the difference
	// is what the timers themselves hold.
	parked := make([]stopper, parkedN)
	before := liveHeap()
	fill(t, parked)
	heapPerParked := float64(liveHeap()-before) / float64(parkedN)

	per := pairs / goroutines
	m0, t0 := mem(), time.Now()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range per {
				t.AfterFunc(30*time.Second, noop).Stop()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	m1 := mem()
	total := float64(per * goroutines)
	runtime.KeepAlive(parked)
	return result{Metrics: map[string]float64{
		"pair_ns":           float64(elapsed.Nanoseconds()) / total,
		"pair_bytes":        float64(m1.bytes-m0.bytes) / total,
		"pair_allocs":       float64(m1.allocs-m0.allocs) / total,
		"heap_bytes_parked": heapPerParked,
		"peak_rss_mb":       peakRSSMB(),
	}}
}

// w3 parks timers at 30 min and measures the CPU the process uses while idle.
func w3(t timers, p params) result {
	parked := park(t, p.parkedOr(1_000_000, 10_000))
	runtime.GC()
	time.Sleep(time.Second) // let the collector and the scavenger settle
	idle := time.Duration(p.n(10, 1)) * time.Second
	cpu0 := cpuTime()
	time.Sleep(idle)
	cpu := cpuTime() - cpu0
	runtime.KeepAlive(parked)
	return result{Metrics: map[string]float64{
		"idle_cpu_s": cpu.Seconds(),
		"idle_s":     idle.Seconds(),
	}}
}

// latenessQuantiles are the quantiles W4 reports for the distribution chart.
var latenessQuantiles = func() []float64 {
	var q []float64
	for i := 0; i <= 100; i++ {
		q = append(q, float64(i)/100)
	}
	return append(q, 0.995, 0.999)
}()

// w4 schedules timers with delays U[10 ms, 2000 ms) and measures in each
// callback how late it ran: elapsed since the AfterFunc call, minus the delay.
func w4(t timers, p params) result {
	n, maxDelay := p.n(100_000, 1_000), time.Duration(p.n(2000, 200))*time.Millisecond
	rng := rand.New(rand.NewPCG(4, 4))
	late := make([]time.Duration, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		d := 10*time.Millisecond + time.Duration(rng.Int64N(int64(maxDelay-10*time.Millisecond)))
		at := time.Now()
		t.AfterFunc(d, func() {
			late[i] = time.Since(at) - d
			wg.Done()
		})
	}
	wg.Wait()
	slices.Sort(late)
	early := 0
	for _, l := range late {
		if l < 0 {
			early++
		}
	}
	ms := func(q float64) float64 { return float64(late[min(int(q*float64(n)), n-1)]) / 1e6 }
	r := result{Metrics: map[string]float64{
		"late_p50_ms":  ms(0.5),
		"late_p99_ms":  ms(0.99),
		"late_p999_ms": ms(0.999),
		"late_max_ms":  float64(late[n-1]) / 1e6,
		"early_pct":    100 * float64(early) / float64(n),
	}}
	for i, q := range latenessQuantiles {
		r.Metrics[quantileMetric(i)] = ms(q)
	}
	return r
}

func runTimerWorkload(workload, system string, p params) (result, error) {
	t, err := newTimers(system)
	if err != nil {
		return result{}, err
	}
	defer t.Close()
	switch workload {
	case "W1":
		return w1(t, p), nil
	case "W2":
		return w2(t, p, 1), nil
	case "W2p":
		return w2(t, p, runtime.GOMAXPROCS(0)), nil
	case "W3":
		return w3(t, p), nil
	case "W4":
		return w4(t, p), nil
	}
	return result{}, fmt.Errorf("unknown workload %q", workload)
}
