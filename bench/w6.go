package main

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// W6, the threshold workload (issue 29): requests wait until their key's
// level, a number that only grows, reaches the level at their arrival plus a
// need; level moves raise random keys. It is Kafka's DelayedProduce (acks=all:
// until the high watermark reaches the produce's offset) and DelayedFetch
// (until enough bytes follow the fetch's position).
var levelSystems = []string{"purgatory-level", "purgatory", "naive", "naive-heap"}

const (
	w6Timeout = time.Second
	w6Step    = 1999 // a move raises its key's level by U[1, w6Step]: 1,000 on average
	w6Tail    = time.Second
)

// levelReq is W6's operation: it completes once its key's level reaches
// target.
type levelReq struct {
	purgatory.Op
	key    int
	target int64
	due    time.Duration // when it arrived, since the run began
	level  *atomic.Int64 // its key's level
	endedN atomic.Int32
	run    *w6run
}

func (r *levelReq) TryComplete() bool { return r.level.Load() >= r.target }
func (r *levelReq) OnComplete() {
	if r.Outcome() != purgatory.Expired {
		r.run.end(r, true)
	}
}
func (r *levelReq) OnExpiration() { r.run.end(r, false) }

// levelSystem is what W6 drives.
type levelSystem interface {
	add(r *levelReq)
	advance(key int, level int64) // key is now at level
	close()
}

func newLevelSystem(name string) (levelSystem, error) {
	switch name {
	case "purgatory-level", "purgatory":
		p, err := purgatory.New[int]("w6")
		if err != nil {
			return nil, err
		}
		return levelLib{p, name == "purgatory-level"}, nil
	case "naive":
		return &levelNaive{lists: map[int][]*naiveLevelReq{}}, nil
	case "naive-heap":
		return &levelNaiveHeap{heaps: map[int]*naiveHeap{}}, nil
	}
	return nil, fmt.Errorf("unknown W6 system %q (have %v)", name, levelSystems)
}

// levelLib is the purgatory: with progress watches (purgatory-level), or
// with every watcher of a key tried at each move (purgatory).
type levelLib struct {
	p      *purgatory.Purgatory[int]
	levels bool
}

func (l levelLib) add(r *levelReq) {
	r.Timeout = w6Timeout
	if l.levels {
		l.p.TryCompleteElseWatchAt(r, purgatory.At(r.key, r.target))
		return
	}
	l.p.TryCompleteElseWatch(r, r.key)
}

func (l levelLib) advance(key int, level int64) {
	if l.levels {
		l.p.Advance(key, level)
		return
	}
	l.p.CheckAndComplete(key)
}

func (l levelLib) close() { l.p.Close() }

// naiveLevelReq is a request in the naive systems: a flag that exactly one
// path wins, and its time.AfterFunc.
type naiveLevelReq struct {
	*levelReq
	done  atomic.Bool
	mu    sync.Mutex // guards timer
	timer *time.Timer
}

func (q *naiveLevelReq) arm() {
	q.mu.Lock()
	q.timer = time.AfterFunc(w6Timeout, func() {
		if q.done.CompareAndSwap(false, true) {
			q.run.end(q.levelReq, false)
		}
	})
	q.mu.Unlock()
}

func (q *naiveLevelReq) complete() {
	q.mu.Lock()
	if q.timer != nil {
		q.timer.Stop()
	}
	q.mu.Unlock()
	q.run.end(q.levelReq, true)
}

// levelNaive is W5's naive purgatory: one mutex over a map of lists, every
// request of a key tried at each of its moves.
type levelNaive struct {
	mu    sync.Mutex
	lists map[int][]*naiveLevelReq
}

func (n *levelNaive) add(r *levelReq) {
	q := &naiveLevelReq{levelReq: r}
	n.mu.Lock()
	n.lists[r.key] = append(n.lists[r.key], q)
	n.mu.Unlock()
	if r.TryComplete() && q.done.CompareAndSwap(false, true) {
		q.run.end(r, true)
		return
	}
	q.arm()
}

func (n *levelNaive) advance(key int, _ int64) {
	var won []*naiveLevelReq
	n.mu.Lock()
	list := n.lists[key]
	keep := list[:0]
	for _, q := range list {
		switch {
		case q.done.Load():
		case q.TryComplete() && q.done.CompareAndSwap(false, true):
			won = append(won, q)
		default:
			keep = append(keep, q)
		}
	}
	clear(list[len(keep):])
	if len(keep) == 0 {
		delete(n.lists, key)
	} else {
		n.lists[key] = keep
	}
	n.mu.Unlock()
	for _, q := range won {
		q.complete()
	}
}

func (n *levelNaive) close() {}

// levelNaiveHeap is the naive purgatory with a min-heap of targets per key,
// written by hand: the best a Go engineer writes for this, and the fair
// baseline. A move pops what it reached; an expired request stays in its heap
// until its target is reached, or its key forgotten.
type levelNaiveHeap struct {
	mu    sync.Mutex
	heaps map[int]*naiveHeap
}

type naiveHeap []*naiveLevelReq

func (h *naiveHeap) push(q *naiveLevelReq) {
	*h = append(*h, q)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent].target <= s[i].target {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *naiveHeap) pop() *naiveLevelReq {
	s := *h
	top, last := s[0], len(s)-1
	s[0], s[last] = s[last], nil
	s = s[:last]
	*h = s
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].target < s[least].target {
			least = l
		}
		if r < len(s) && s[r].target < s[least].target {
			least = r
		}
		if least == i {
			return top
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
}

func (n *levelNaiveHeap) add(r *levelReq) {
	q := &naiveLevelReq{levelReq: r}
	n.mu.Lock()
	h := n.heaps[r.key]
	if h == nil {
		h = &naiveHeap{}
		n.heaps[r.key] = h
	}
	h.push(q)
	n.mu.Unlock()
	if r.TryComplete() && q.done.CompareAndSwap(false, true) {
		q.run.end(r, true)
		return
	}
	q.arm()
}

func (n *levelNaiveHeap) advance(key int, level int64) {
	var won []*naiveLevelReq
	n.mu.Lock()
	h := n.heaps[key]
	for h != nil && len(*h) > 0 && (*h)[0].target <= level {
		if q := h.pop(); q.done.CompareAndSwap(false, true) {
			won = append(won, q)
		}
	}
	if h != nil && len(*h) == 0 {
		delete(n.heaps, key)
	}
	n.mu.Unlock()
	for _, q := range won {
		q.complete()
	}
}

func (n *levelNaiveHeap) close() {}

// history is a key's recent moves, oldest first in a ring: the level it
// reached and when the move was due. It tells when a key first reached a
// target: the ideal completion of a request, from which its lag counts and
// by which it would have completed in an ideal system.
type history struct {
	mu    sync.Mutex
	level []int64
	at    []time.Duration
	start int
	n     int
}

func (h *history) record(level int64, at time.Duration) {
	h.mu.Lock()
	i := (h.start + h.n) % len(h.level)
	if h.n == len(h.level) {
		h.start = (h.start + 1) % len(h.level)
	} else {
		h.n++
	}
	h.level[i], h.at[i] = level, at
	h.mu.Unlock()
}

// reached returns when the key first reached target, if it has: the oldest
// move kept if it had already then (the ring covers a few seconds of moves,
// longer than any request waits).
func (h *history) reached(target int64) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	at := func(j int) int { return (h.start + j) % len(h.level) }
	if h.n == 0 || h.level[at(h.n-1)] < target {
		return 0, false
	}
	lo, hi := 0, h.n-1 // the first with level >= target
	for lo < hi {
		mid := (lo + hi) / 2
		if h.level[at(mid)] >= target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return h.at[at(lo)], true
}

// w6run is one W6 run's shared state.
type w6run struct {
	begin    time.Time
	n        int64
	levels   []atomic.Int64
	hist     []history
	allEnded chan struct{}

	completed, expired, ended, twice, ideal atomic.Int64
	lagMu                                   sync.Mutex
	lags                                    []time.Duration
}

func (w *w6run) elapsed() time.Duration { return time.Since(w.begin) }

// end counts r's ending, and whether an ideal system would have completed
// it: its key reached its target within its timeout.
func (w *w6run) end(r *levelReq, completed bool) {
	if r.endedN.Add(1) > 1 {
		w.twice.Add(1)
	}
	at, ok := w.hist[r.key].reached(r.target)
	if ok && at <= r.due+w6Timeout || completed && !ok {
		w.ideal.Add(1)
	}
	if completed {
		w.completed.Add(1)
		lag := time.Duration(0)
		if ok {
			lag = max(w.elapsed()-max(at, r.due), 0)
		}
		w.lagMu.Lock()
		w.lags = append(w.lags, lag)
		w.lagMu.Unlock()
	} else {
		w.expired.Add(1)
	}
	if w.ended.Add(1) == w.n {
		close(w.allEnded)
	}
}

// w6 runs W6: requests arrive evenly at rate per second for length, each on
// one of keys keys; moves per second raise random keys' levels, in 1 ms
// slots, until w6Tail after the last arrival. A request's need is
// U[1, 2.5 × what a key gains per second on average], so that about 40 %
// complete within their timeout.
func w6(d levelSystem, rate, moves, keys int, length time.Duration) result {
	n := int(float64(rate) * length.Seconds())
	w := &w6run{n: int64(n), levels: make([]atomic.Int64, keys), hist: make([]history, keys), allEnded: make(chan struct{})}
	perKey := float64(moves) * (1 + w6Step) / 2 / float64(keys) // level gained per key per second
	maxNeed := int64(2.5 * perKey)
	ring := max(64, int(3*float64(moves)/float64(keys)))
	for i := range w.hist {
		w.hist[i].level, w.hist[i].at = make([]int64, ring), make([]time.Duration, ring)
	}
	cpu0 := cpuTime()
	w.begin = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { // arrivals
		rng := rand.New(rand.NewPCG(6, 6))
		for i := range n {
			at := arrivalAt(i, n, length)
			if ahead := at - w.elapsed(); ahead > 0 {
				time.Sleep(ahead)
			}
			key := rng.IntN(keys)
			r := &levelReq{key: key, level: &w.levels[key], due: w.elapsed(), run: w}
			r.target = r.level.Load() + 1 + rng.Int64N(maxNeed)
			d.add(r)
		}
	})
	wg.Go(func() { // moves, in 1 ms slots; only this goroutine writes levels
		rng := rand.New(rand.NewPCG(7, 7))
		perSlot := float64(moves) / 1000
		slots := int((length + w6Tail) / time.Millisecond)
		done := 0.0
		for slot := range slots {
			due := time.Duration(slot+1) * time.Millisecond
			if ahead := due - w.elapsed(); ahead > 0 {
				time.Sleep(ahead)
			}
			for done += perSlot; done >= 1; done-- {
				key := rng.IntN(keys)
				level := w.levels[key].Load() + 1 + rng.Int64N(w6Step)
				w.hist[key].record(level, due) // before anyone can see the level
				w.levels[key].Store(level)
				d.advance(key, level)
			}
		}
	})
	wg.Wait()
	select {
	case <-w.allEnded:
	case <-time.After(w6Timeout + 30*time.Second):
	}
	cpu := cpuTime() - cpu0

	w.lagMu.Lock()
	defer w.lagMu.Unlock()
	slices.Sort(w.lags)
	completedPct := 100 * float64(w.completed.Load()) / float64(n)
	expectedPct := 100 * float64(w.ideal.Load()) / float64(n)
	keepsUp := 0.0
	if quantileMs(w.lags, 0.5) < 10 && math.Abs(completedPct-expectedPct) <= 1 {
		keepsUp = 1
	}
	m := map[string]float64{
		"rate":           float64(rate),
		"keys":           float64(keys),
		"completed_pct":  completedPct,
		"expected_pct":   expectedPct,
		"lost":           float64(int64(n) - w.ended.Load()),
		"ended_twice":    float64(w.twice.Load()),
		"cpu_s":          cpu.Seconds(),
		"cpu_us_per_req": cpu.Seconds() * 1e6 / float64(n),
		"peak_rss_mb":    peakRSSMB(),
		"lag_p50_ms":     quantileMs(w.lags, 0.5),
		"lag_p99_ms":     quantileMs(w.lags, 0.99),
		"keeps_up":       keepsUp,
	}
	maps.DeleteFunc(m, func(_ string, v float64) bool { return math.IsNaN(v) })
	return result{Metrics: m}
}

func runLevelWorkload(system string, p params) (result, error) {
	d, err := newLevelSystem(system)
	if err != nil {
		return result{}, err
	}
	defer d.close()
	rate, length, keys := p.rate, p.duration, p.keys
	if rate == 0 {
		rate = p.n(100_000, 20_000)
	}
	if length == 0 {
		length = time.Duration(p.n(10_000, 500)) * time.Millisecond
	}
	if keys == 0 {
		keys = 1000
	}
	return w6(d, rate, p.n(100_000, 20_000), keys, length), nil
}
