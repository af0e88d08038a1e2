package purgatory_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// request is the operation both systems run: it completes once its event has
// arrived (ready), and records how it ended.
type request struct {
	purgatory.Op
	ready   atomic.Bool
	readyAt atomic.Int64 // ns since the run began, when the event arrived
	ended   func(r *request, expired bool)
}

func (r *request) TryComplete() bool { return r.ready.Load() }
func (r *request) OnComplete() {
	if r.Outcome() != purgatory.Expired {
		r.ended(r, false)
	}
}
func (r *request) OnExpiration() { r.ended(r, true) }

// system is what the benchmarks drive: this library, or the naive reference.
type system interface {
	add(r *request, key int, timeout time.Duration)
	check(key int) int
	close()
}

type lib struct{ p *purgatory.Purgatory[int] }

func (l lib) add(r *request, key int, timeout time.Duration) {
	r.Timeout = timeout
	l.p.TryCompleteElseWatch(r, key)
}
func (l lib) check(key int) int { return l.p.CheckAndComplete(key) }
func (l lib) close()            { l.p.Close() }

// naive is the purgatory one writes first: a mutex over a map of watch lists,
// and a time.AfterFunc per operation. Expired operations leave a list only when
// its key is checked.
type naive struct {
	mu    sync.Mutex
	lists map[int][]*naiveReq
}

type naiveReq struct {
	*request
	done  atomic.Bool
	mu    sync.Mutex
	timer *time.Timer
}

func (n *naive) add(r *request, key int, timeout time.Duration) {
	q := &naiveReq{request: r}
	if r.TryComplete() && q.done.CompareAndSwap(false, true) {
		r.ended(r, false)
		return
	}
	n.mu.Lock()
	n.lists[key] = append(n.lists[key], q)
	n.mu.Unlock()
	if r.TryComplete() && q.done.CompareAndSwap(false, true) {
		r.ended(r, false)
		return
	}
	q.mu.Lock()
	q.timer = time.AfterFunc(timeout, func() {
		if q.done.CompareAndSwap(false, true) {
			r.ended(r, true)
		}
	})
	q.mu.Unlock()
}

func (n *naive) check(key int) int {
	var won []*naiveReq
	n.mu.Lock()
	keep := n.lists[key][:0]
	for _, q := range n.lists[key] {
		switch {
		case q.done.Load():
		case q.TryComplete() && q.done.CompareAndSwap(false, true):
			won = append(won, q)
		default:
			keep = append(keep, q)
		}
	}
	clear(n.lists[key][len(keep):])
	n.lists[key] = keep
	n.mu.Unlock()
	for _, q := range won {
		q.mu.Lock()
		if q.timer != nil {
			q.timer.Stop()
		}
		q.mu.Unlock()
		q.ended(q.request, false)
	}
	return len(won)
}

func (n *naive) close() {}

func systems(b *testing.B, run func(b *testing.B, s system)) {
	b.Run("system=purgatory", func(b *testing.B) {
		p, err := purgatory.New[int]("bench")
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		run(b, lib{p})
	})
	b.Run("system=naive", func(b *testing.B) { run(b, &naive{lists: map[int][]*naiveReq{}}) })
}

// BenchmarkWatchComplete: each op adds a request on one of 1,000 keys that
// cannot complete yet, then its event arrives and CheckAndComplete completes
// it, with 100,000 other requests pending on 1 h timeouts under other keys.
func BenchmarkWatchComplete(b *testing.B) {
	systems(b, func(b *testing.B, s system) {
		ended := func(*request, bool) {}
		for i := range 100_000 {
			s.add(&request{ended: ended}, 1000+i%1000, time.Hour)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r := &request{ended: ended}
			s.add(r, i%1000, 30*time.Second)
			r.ready.Store(true)
			if s.check(i%1000) != 1 {
				b.Fatal("the request did not complete")
			}
			i++
		}
	})
}

// BenchmarkW5 is workload W5 of DESIGN.md at a tenth of its length: requests
// arrive at 100,000/s for 1 s, each watching 1 of 1,000 keys with a 1 s
// timeout; 80 % get a completion event (CheckAndComplete on their key, from one
// goroutine) at U[0, 2 s) after arrival, so about 40 % complete and 60 % expire.
// Reported per run: completed-% and expired-% of all requests, cpu-s (user +
// system CPU of the process during the run) and lag-ms-p50 (from an event to
// its request completing).
func BenchmarkW5(b *testing.B) {
	systems(b, func(b *testing.B, s system) {
		var completedPct, expiredPct, cpu, lag float64
		for b.Loop() {
			completedPct, expiredPct, cpu, lag = runW5(b, s, 100_000, time.Second)
		}
		b.ReportMetric(completedPct, "completed-%")
		b.ReportMetric(expiredPct, "expired-%")
		b.ReportMetric(cpu, "cpu-s")
		b.ReportMetric(lag, "lag-ms-p50")
	})
}

func runW5(b *testing.B, s system, rate int, length time.Duration) (completedPct, expiredPct, cpu, lagMs float64) {
	const keys, timeout = 1000, time.Second
	n := int(float64(rate) * length.Seconds())
	rng := rand.New(rand.NewPCG(5, 5))
	type event struct {
		at  time.Duration
		req *request
		key int
	}
	var completed, expired, endings atomic.Int64
	var lagMu sync.Mutex
	lags := make([]time.Duration, 0, n)
	begin := time.Now()
	allEnded := make(chan struct{})
	ended := func(r *request, exp bool) {
		if exp {
			expired.Add(1)
		} else {
			completed.Add(1)
			l := time.Since(begin) - time.Duration(r.readyAt.Load())
			lagMu.Lock()
			lags = append(lags, l)
			lagMu.Unlock()
		}
		if endings.Add(1) == int64(n) {
			close(allEnded)
		}
	}
	reqs := make([]*request, n)
	keyOf := make([]int, n)
	var events []event
	for i := range reqs {
		reqs[i] = &request{ended: ended}
		keyOf[i] = rng.IntN(keys)
		if rng.IntN(10) < 8 {
			arrival := time.Duration(i) * length / time.Duration(n)
			events = append(events, event{arrival + time.Duration(rng.Int64N(int64(2*time.Second))), reqs[i], keyOf[i]})
		}
	}
	slices.SortFunc(events, func(a, b event) int { return int(a.at - b.at) })

	cpuBefore := cpuTime()
	begin = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { // arrivals, paced in 1 ms steps
		for i, r := range reqs {
			if at := time.Duration(i) * length / time.Duration(n); at > time.Since(begin)+time.Millisecond {
				time.Sleep(at - time.Since(begin))
			}
			s.add(r, keyOf[i], timeout)
		}
	})
	wg.Go(func() { // completion events, from one goroutine
		for _, e := range events {
			if e.at > time.Since(begin)+time.Millisecond {
				time.Sleep(e.at - time.Since(begin))
			}
			e.req.readyAt.Store(int64(time.Since(begin)))
			e.req.ready.Store(true)
			s.check(e.key)
		}
	})
	wg.Wait()
	select {
	case <-allEnded:
	case <-time.After(10 * time.Second):
		b.Fatalf("only %d of %d requests ended", endings.Load(), n)
	}
	cpu = (cpuTime() - cpuBefore).Seconds()
	slices.Sort(lags)
	if len(lags) > 0 {
		lagMs = float64(lags[len(lags)/2]) / 1e6
	}
	return 100 * float64(completed.Load()) / float64(n), 100 * float64(expired.Load()) / float64(n), cpu, lagMs
}

// BenchmarkCheckWalk is W5's steady state without the clock: 80,000 requests
// that cannot complete, 80 on each of 1,000 keys, and CheckAndComplete on a
// random key. It reports ns per operation tried, the cost that W5's quadratic
// walk multiplies; the requests are allocated interleaved across keys, as
// arrivals are, so every try is a fresh cache line.
func BenchmarkCheckWalk(b *testing.B) {
	const keys, perKey = 1000, 80
	systems(b, func(b *testing.B, s system) {
		for i := range keys * perKey {
			s.add(&request{ended: func(*request, bool) {}}, i%keys, time.Hour)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			if s.check(rng.IntN(keys)) != 0 {
				b.Fatal("a request that cannot complete completed")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perKey, "ns/try")
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type noopObserver struct{}

func (noopObserver) OperationEnded(purgatory.Outcome, time.Duration) {}

// BenchmarkObserver is BenchmarkWatchComplete's pair with no observer and with
// one that does nothing: the cost of the hook itself.
func BenchmarkObserver(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []purgatory.Option
	}{{"none", nil}, {"noop", []purgatory.Option{purgatory.WithObserver(noopObserver{})}}} {
		b.Run("observer="+tc.name, func(b *testing.B) {
			p, err := purgatory.New[int]("bench", tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ended := func(*request, bool) {}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r := &request{ended: ended}
				lib{p}.add(r, i%1000, 30*time.Second)
				r.ready.Store(true)
				p.CheckAndComplete(i % 1000)
				i++
			}
		})
	}
}
