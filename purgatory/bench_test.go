package purgatory_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// request is what both systems run: it completes once its event has arrived
// (ready), and records how it ended. Each system makes its own
// (system.newRequest): the purgatory's is a libRequest, with the purgatory.Op
// that a user's operation embeds, in one allocation; naive's carries no Op,
// which it would never use.
type request struct {
	ready atomic.Bool
	ended func(r *request, expired bool)
	op    *libRequest // the purgatory's operation that holds this request; nil in naive's
}

func (r *request) TryComplete() bool { return r.ready.Load() }

// libRequest is a request as the purgatory's operation.
type libRequest struct {
	purgatory.Op
	request
}

func (r *libRequest) OnComplete() {
	if r.Outcome() != purgatory.Expired {
		r.ended(&r.request, false)
	}
}
func (r *libRequest) OnExpiration() { r.ended(&r.request, true) }

// system is what the benchmarks drive: this library, or the naive reference.
type system interface {
	newRequest(ended func(*request, bool)) *request
	add(r *request, key int, timeout time.Duration)
	check(key int) int
	close()
}

type lib struct{ p *purgatory.Purgatory[int] }

func (lib) newRequest(ended func(*request, bool)) *request {
	o := &libRequest{}
	o.op, o.ended = o, ended
	return &o.request
}

func (l lib) add(r *request, key int, timeout time.Duration) {
	r.op.Timeout = timeout
	l.p.TryCompleteElseWatch(r.op, key)
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

func (*naive) newRequest(ended func(*request, bool)) *request { return &request{ended: ended} }

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
			s.add(s.newRequest(ended), 1000+i%1000, time.Hour)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r := s.newRequest(ended)
			s.add(r, i%1000, 30*time.Second)
			r.ready.Store(true)
			if s.check(i%1000) != 1 {
				b.Fatal("the request did not complete")
			}
			i++
		}
	})
}

// BenchmarkWatchCompleteParallel is BenchmarkWatchComplete on every P at
// once, each goroutine on keys of its own: what the purgatory's shared state
// (its counters, its shards' locks, the timing wheel's shards) costs when several
// cores add and complete.
func BenchmarkWatchCompleteParallel(b *testing.B) {
	systems(b, func(b *testing.B, s system) {
		ended := func(*request, bool) {}
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			base := int(next.Add(1)) * 1000
			i := 0
			for pb.Next() {
				key := base + i%1000
				r := s.newRequest(ended)
				s.add(r, key, 30*time.Second)
				r.ready.Store(true)
				if s.check(key) != 1 {
					b.Error("the request did not complete")
					return
				}
				i++
			}
		})
	})
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
			s.add(s.newRequest(func(*request, bool) {}), i%keys, time.Hour)
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
				r := lib{p}.newRequest(ended)
				lib{p}.add(r, i%1000, 30*time.Second)
				r.ready.Store(true)
				p.CheckAndComplete(i % 1000)
				i++
			}
		})
	}
}

// threshold waits until its key's level, kept by the benchmark, reaches at.
type threshold struct {
	purgatory.Op
	level *int64
	at    int64
}

func (t *threshold) TryComplete() bool { return *t.level >= t.at }
func (t *threshold) OnComplete()       {}
func (t *threshold) OnExpiration()     {}

// BenchmarkAdvance is the level heap's hot path, W6 without the clock: each
// op watches a request at a level up to 800 above its key's (one of 100
// keys), then advances another key by 100, which completes the requests whose
// level it reached (about one per op), with 8,000 waiting in all.
func BenchmarkAdvance(b *testing.B) {
	const keys = 100
	p, err := purgatory.New[int]("bench")
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	levels := make([]int64, keys)
	rng := rand.New(rand.NewPCG(1, 2))
	add := func(i int) {
		k := i % keys
		t := &threshold{Op: purgatory.Op{Timeout: time.Hour}, level: &levels[k], at: levels[k] + 1 + rng.Int64N(800)}
		p.TryCompleteElseWatchAt(t, purgatory.At(k, t.at))
	}
	for i := range 8000 {
		add(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		add(i)
		k := (i + keys/2) % keys
		levels[k] += 100
		p.Advance(k, levels[k])
		i++
	}
}

// BenchmarkIdlePurgatory measures what an idle purgatory with its own wheel
// holds: the live heap per purgatory, b.N alive at once (run it with
// -benchtime 50x; its wheel has a shard per GOMAXPROCS: -cpu 2,8).
func BenchmarkIdlePurgatory(b *testing.B) {
	ps := make([]*purgatory.Purgatory[int], 0, b.N)
	before := testkit.LiveHeap()
	for i := range b.N {
		p, err := purgatory.New[int](fmt.Sprintf("idle-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	b.ReportMetric(float64(testkit.LiveHeap()-before)/float64(b.N)/1024, "KiB/purgatory")
	for _, p := range ps {
		p.Close()
	}
}

// slot is a hand-off waiter on one goroutine: it takes an item of its line in
// TryComplete, and is passed again (reused) as soon as it is over.
type slot struct {
	purgatory.Op
	items *int
}

func (s *slot) TryComplete() bool {
	if *s.items == 0 {
		return false
	}
	*s.items--
	return true
}
func (*slot) OnComplete()   {}
func (*slot) OnExpiration() {}

// BenchmarkHandOff: W waiters on one key, each reused; an op pushes one item,
// hands it off (the first waiter takes it, the next finds none) and adds the
// served waiter back at the end of the line with a 30 s timeout. The cost per
// push is the same at 10 and at 100,000 waiting: a hand-off reads what it
// passes, not the list. One goroutine: the items need no lock.
func BenchmarkHandOff(b *testing.B) {
	for _, w := range []int{10, 1000, 100_000} {
		b.Run(fmt.Sprintf("waiting=%d", w), func(b *testing.B) {
			p, err := purgatory.New[int]("bench")
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			items := 0
			line := make([]*slot, w)
			for i := range line {
				line[i] = &slot{Op: purgatory.Op{Timeout: 30 * time.Second}, items: &items}
				p.TryCompleteElseWatch(line[i], 0)
			}
			next := 0
			for b.Loop() {
				items++
				if p.HandOff(0) != 1 {
					b.Fatal("the push was not handed off")
				}
				served := line[next]
				next = (next + 1) % w
				p.TryCompleteElseWatch(served, 0) // its use is over: no timer, no context left
			}
		})
	}
}

// reusedRequest is a request that the purgatory hands back (Recycler): one
// operation reused for every add, as a service with a pool reuses them.
type reusedRequest struct {
	libRequest
	recycled bool
}

func (r *reusedRequest) Recycle() { r.recycled = true }

// BenchmarkWatchCompleteReused is the add+complete of W8 and issue 49's
// ledger at one goroutine: one reused operation added on key 0 and
// completed by a check of it, with 100,000 others pending on 1 h timeouts
// under 1,000 other keys; timed with a 5 s timeout (W8 draws U[1 s, 10 s)), and untimed
// (NoTimeout), so that the difference is the timer's part.
func BenchmarkWatchCompleteReused(b *testing.B) {
	for _, timeout := range []time.Duration{5 * time.Second, purgatory.NoTimeout} {
		name := "timeout=5s"
		if timeout == purgatory.NoTimeout {
			name = "timeout=none"
		}
		b.Run(name, func(b *testing.B) {
			p, err := purgatory.New[int]("bench")
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ended := func(*request, bool) {}
			for i := range 100_000 {
				lib{p}.add(lib{p}.newRequest(ended), 1+i%1000, time.Hour)
			}
			r := &reusedRequest{}
			r.ended = ended
			b.ReportAllocs()
			for b.Loop() {
				r.ready.Store(false)
				r.recycled = false
				r.Timeout = timeout
				p.TryCompleteElseWatch(r, 0)
				r.ready.Store(true)
				if p.CheckAndComplete(0) != 1 || !r.recycled {
					b.Fatal("the request did not complete, or was not recycled")
				}
			}
		})
	}
}

// BenchmarkCheckSparse is W5's check at many keys, alone: 0.8 requests per
// key on average, that cannot complete, spread at random over keys (most hold
// none, one or two), and CheckAndComplete on a random key, so that the key's
// map slot, its list and its operations are cache misses, one after another.
// In W5 the same check costs several times more, the other goroutines' work
// evicting what this loop keeps in the cache (docs/benchmarks.md, Trials).
func BenchmarkCheckSparse(b *testing.B) {
	for _, keys := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			systems(b, func(b *testing.B, s system) {
				rng := rand.New(rand.NewPCG(3, 4))
				for range keys * 4 / 5 {
					s.add(s.newRequest(func(*request, bool) {}), rng.IntN(keys), time.Hour)
				}
				for b.Loop() {
					if s.check(rng.IntN(keys)) != 0 {
						b.Fatal("a request that cannot complete completed")
					}
				}
			})
		})
	}
}
