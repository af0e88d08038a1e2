package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// W9 is a hand-off: one item to one waiter, first come, first served. One
// key; W receivers, each a goroutine that waits for an item with a 30 s
// timeout (a timer armed and stopped per wait), takes one, and waits again at
// once. A producer pushes at 100,000 items/s for 10 s (W9), or at rising
// rates for 5 s each with W = 1,000 (W9sweep); it pushes the items due, and
// before it sleeps hands them off. W9race: 64 receivers whose timeouts of 50
// to 250 µs race 200,000 pushes at 200,000/s.
//
// Systems: purgatory, its receivers' TryComplete taking the item, one
// operation per receiver reused across its waits (a Recycler), and the
// producer's HandOff once for the items pushed at one wake-up (HandOff goes
// on until a try finds none); purgatory-check, the same with
// CheckAndComplete, which tries every receiver (capped at 2 s of pushing at
// W = 100,000); lean-pooled, the leanest hand-written version (one mutex, a
// FIFO list of waiters each with a channel and one reused time.Timer, a
// waiter per receiver, reused; the producer's flush hands queued items to the
// waiters in order); and lean, the same with a new waiter and a
// time.AfterFunc per wait. A receiver that finds an item queued takes it
// without waiting, in every system.
var w9Systems = []string{"purgatory", "purgatory-check", "lean-pooled", "lean"}

// w9Item is one item: its number, when it was due to be pushed and when it
// was, since the run began.
type w9Item struct {
	id          int64
	due, pushed time.Duration
}

// closedItem is what a wait gets when the system shuts down under it.
var closedItem = w9Item{id: -1}

// w9System is a queue with a blocking receive.
type w9System interface {
	// push makes it available; flush hands off what the pushes since the
	// last flush made available (the producer flushes before it sleeps,
	// and after its last push).
	push(it w9Item)
	flush()
	// receive waits up to timeout for an item: ok false if the wait ended
	// without one (expired, or the system closed).
	receive(r *w9Receiver, timeout time.Duration) (it w9Item, ok bool)
	// oldest is when the oldest item still queued was pushed, if any.
	oldest() (time.Duration, bool)
	// queued returns the items still queued, for the final count.
	queued() []w9Item
	// close ends every wait; stop lets go of the rest once every receiver
	// has returned.
	close()
	stop()
}

// w9Receiver is one receiver's own state, reused across its waits.
type w9Receiver struct {
	op     *w9Op       // the purgatory's
	waiter *leanWaiter // lean-pooled's
}

func newW9System(name string) (w9System, error) {
	switch name {
	case "purgatory", "purgatory-check":
		// A wheel of its own that Close does not stop: a use whose timeout a
		// stopped wheel handed back is never over, and its receiver would
		// wait for Recycle for ever.
		tw, err := timingwheel.New()
		if err != nil {
			return nil, err
		}
		p, err := purgatory.New[int]("w9", purgatory.WithTimingWheel(tw))
		if err != nil {
			return nil, err
		}
		return &w9Purgatory{p: p, tw: tw, check: name == "purgatory-check"}, nil
	case "lean-pooled", "lean":
		return &w9Lean{fresh: name == "lean"}, nil
	}
	return nil, fmt.Errorf("unknown W9 system %q (have %v)", name, w9Systems)
}

// w9Queue is a FIFO of items under a mutex, the queue a purgatory's receivers
// take from. Most tries find it empty (a hand-off's last, a receiver's
// first and second): they read some, and take the lock only when it says
// there is an item, so that the lock is taken about as often as lean's.
// some changes only as the queue turns empty or not, so a push or pop in
// a burst writes nothing more than lean's does.
type w9Queue struct {
	some  atomic.Bool // len(items) > 0; written under mu
	mu    sync.Mutex
	items []w9Item
}

func (q *w9Queue) push(it w9Item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	if len(q.items) == 1 {
		q.some.Store(true)
	}
	q.mu.Unlock()
}

func (q *w9Queue) pop() (w9Item, bool) {
	if !q.some.Load() {
		return w9Item{}, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return w9Item{}, false
	}
	it := q.items[0]
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.some.Store(false)
	}
	return it, true
}

func (q *w9Queue) oldest() (time.Duration, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].pushed, true
}

func (q *w9Queue) queued() []w9Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]w9Item(nil), q.items...)
}

// w9Op is a receive: TryComplete takes an item, and Recycle tells the
// receiver that the use is over (its item, if it took one, is its own).
type w9Op struct {
	purgatory.Op
	q    *w9Queue
	got  w9Item
	took bool
	over chan struct{}
}

func (o *w9Op) TryComplete() bool {
	o.got, o.took = o.q.pop()
	return o.took
}
func (o *w9Op) OnComplete()   {}
func (o *w9Op) OnExpiration() {}
func (o *w9Op) Recycle()      { o.over <- struct{}{} }

type w9Purgatory struct {
	p     *purgatory.Purgatory[int]
	tw    *timingwheel.TimingWheel
	q     w9Queue
	check bool
}

func (s *w9Purgatory) push(it w9Item) { s.q.push(it) }

// flush hands the items pushed since the last flush to the receivers
// waiting: HandOff goes on until a try finds none, so once serves them all.
func (s *w9Purgatory) flush() {
	if s.check {
		s.p.CheckAndComplete(0)
	} else {
		s.p.HandOff(0)
	}
}

// receive takes a queued item without waiting if there is one, as lean's
// does, and otherwise waits in the purgatory, where TryComplete takes it.
func (s *w9Purgatory) receive(r *w9Receiver, timeout time.Duration) (w9Item, bool) {
	if it, ok := s.q.pop(); ok {
		return it, true
	}
	op := r.op
	if op == nil {
		op = &w9Op{q: &s.q, over: make(chan struct{}, 1)}
		r.op = op
	}
	op.Timeout, op.took = timeout, false
	s.p.TryCompleteElseWatch(op, 0)
	<-op.over // nothing of the use runs any more
	if op.took && op.Outcome() == purgatory.Completed {
		return op.got, true
	}
	return w9Item{}, false // a try that took and did not complete would be lost: the count shows it
}

func (s *w9Purgatory) oldest() (time.Duration, bool) { return s.q.oldest() }
func (s *w9Purgatory) queued() []w9Item              { return s.q.queued() }
func (s *w9Purgatory) close()                        { s.p.Close() }
func (s *w9Purgatory) stop()                         { s.tw.Stop() }

// leanWaiter is a waiting receive in lean's FIFO list.
type leanWaiter struct {
	ch         chan w9Item // room for the one item handed to it
	timer      *time.Timer // lean-pooled: one per waiter, Reset per wait
	prev, next *leanWaiter
	listed     bool
}

// w9Lean is the hand-off written by hand: one mutex over the items and a
// FIFO list of waiters. A push queues its item, and flush, once for the
// items pushed at one wake-up as the purgatory's HandOff, hands queued items
// to the waiters in the order they came.
type w9Lean struct {
	mu         sync.Mutex
	items      []w9Item
	head, tail *leanWaiter
	closed     bool
	fresh      bool // a new waiter and a time.AfterFunc per wait
}

func (s *w9Lean) link(w *leanWaiter) {
	w.prev, w.next, w.listed = s.tail, nil, true
	if s.tail == nil {
		s.head = w
	} else {
		s.tail.next = w
	}
	s.tail = w
}

func (s *w9Lean) unlink(w *leanWaiter) {
	if w.prev == nil {
		s.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		s.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
}

func (s *w9Lean) push(it w9Item) {
	s.mu.Lock()
	s.items = append(s.items, it)
	s.mu.Unlock()
}

// flush hands queued items to the waiters, first come, first served, and
// wakes them once it has let go of the mutex.
func (s *w9Lean) flush() {
	var ws []*leanWaiter
	var its []w9Item
	s.mu.Lock()
	for s.head != nil && len(s.items) > 0 {
		w := s.head
		s.unlink(w)
		ws = append(ws, w)
		its = append(its, s.items[0])
		s.items = s.items[1:]
	}
	s.mu.Unlock()
	for i, w := range ws {
		w.ch <- its[i]
	}
}

func (s *w9Lean) receive(r *w9Receiver, timeout time.Duration) (w9Item, bool) {
	s.mu.Lock()
	if len(s.items) > 0 {
		it := s.items[0]
		s.items = s.items[1:]
		s.mu.Unlock()
		return it, true
	}
	if s.closed {
		s.mu.Unlock()
		return w9Item{}, false
	}
	w := r.waiter
	if s.fresh || w == nil {
		w = &leanWaiter{ch: make(chan w9Item, 1)}
		if !s.fresh {
			w.timer = time.NewTimer(time.Hour)
			w.timer.Stop()
			r.waiter = w
		}
	}
	s.link(w)
	s.mu.Unlock()
	if s.fresh {
		t := time.AfterFunc(timeout, func() { s.expire(w) })
		it := <-w.ch
		t.Stop()
		return it, it.id >= 0
	}
	w.timer.Reset(timeout)
	select {
	case it := <-w.ch:
		w.timer.Stop()
		return it, it.id >= 0
	case <-w.timer.C:
		s.mu.Lock()
		if w.listed {
			s.unlink(w)
			s.mu.Unlock()
			return w9Item{}, false
		}
		s.mu.Unlock()
		it := <-w.ch // a push took it off the list and is handing it an item
		return it, it.id >= 0
	}
}

// expire is lean's time.AfterFunc callback: it ends the wait unless a push
// has taken the waiter off the list already (its item is on the way then).
func (s *w9Lean) expire(w *leanWaiter) {
	s.mu.Lock()
	if !w.listed {
		s.mu.Unlock()
		return
	}
	s.unlink(w)
	s.mu.Unlock()
	w.ch <- w9Item{id: -2} // expired
}

func (s *w9Lean) oldest() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) == 0 {
		return 0, false
	}
	return s.items[0].pushed, true
}

func (s *w9Lean) queued() []w9Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]w9Item(nil), s.items...)
}

func (s *w9Lean) stop() {}

func (s *w9Lean) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for w := s.head; w != nil; w = s.head {
		s.unlink(w)
		w.ch <- closedItem
	}
}

// w9RaceRate is W9race's push rate: 64 receivers keep up with it, each
// taking an item every 320 µs on average, so that most waits are short and
// many expire, racing the hand-offs.
const w9RaceRate = 200_000

// w9Run is one run's shape.
type w9Run struct {
	receivers int
	rate      int           // items per second; 0: as fast as the producer can push
	items     int           // to push
	cap       time.Duration // stop pushing after this long (0: never)
	timeout   func(rng *rand.Rand) time.Duration
}

// w9Shape is the run a child makes of the workload's parameters.
func w9Shape(system string, p params) w9Run {
	if p.race {
		return w9Run{receivers: 64, rate: p.n(w9RaceRate, w9RaceRate/10), items: p.n(200_000, 2_000), timeout: func(rng *rand.Rand) time.Duration {
			return time.Duration(50_000 + rng.Int64N(200_001)) // U[50 µs, 250 µs]
		}}
	}
	length := 10 * time.Second
	if p.duration > 0 {
		length = p.duration
	} else if p.quick {
		length = 300 * time.Millisecond
	}
	rate := p.rate
	if rate == 0 {
		rate = p.n(100_000, 20_000)
	}
	r := w9Run{receivers: p.receivers, rate: rate, items: int(float64(rate) * length.Seconds()),
		timeout: func(*rand.Rand) time.Duration { return 30 * time.Second }}
	if system == "purgatory-check" && p.receivers >= 100_000 {
		r.cap = 2 * time.Second // every push tries every receiver
	}
	return r
}

// w9 runs one hand-off run and reports CPU per item delivered, push-to-receive
// latency (from when each item was due to be pushed to when its receiver had
// it), the rate pushed, the items lost (neither delivered nor queued at the
// end) and delivered twice, the waits that expired while an item had been
// queued for more than 1 ms, and whether it kept up (p50 under 10 ms, and
// every item pushed delivered within a second of the last push).
func w9(system string, p params) (result, error) {
	s, err := newW9System(system)
	if err != nil {
		return result{}, err
	}
	run := w9Shape(system, p)
	delivered := make([]atomic.Int32, run.items)
	var (
		stop                  atomic.Bool
		expired, queuedExpiry atomic.Int64
		got                   atomic.Int64
		lats                  [16]struct { // 32 KB each: a few shared, not one a receiver
			sync.Mutex
			h durations
		}
		begin   time.Time
		started sync.WaitGroup
		wg      sync.WaitGroup
	)
	elapsed := func() time.Duration { return time.Since(begin) }
	begin = time.Now()
	started.Add(run.receivers)
	for i := range run.receivers {
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		wg.Go(func() {
			r := &w9Receiver{}
			first := true
			lat := &lats[i%len(lats)]
			for !stop.Load() {
				if first {
					started.Done()
					first = false
				}
				waited, timeout := elapsed(), run.timeout(rng)
				it, ok := s.receive(r, timeout)
				if !ok {
					if stop.Load() {
						break
					}
					expired.Add(1)
					// The oldest item queued now was queued at the wait's
					// deadline, the earliest it could expire, for over 1 ms.
					if pushed, ok := s.oldest(); ok && pushed < waited+timeout-time.Millisecond {
						queuedExpiry.Add(1)
					}
					continue
				}
				d := elapsed() - it.due
				lat.Lock()
				lat.h.add(d)
				lat.Unlock()
				delivered[it.id].Add(1)
				got.Add(1)
			}
		})
	}
	started.Wait()
	time.Sleep(p.settle()) // the receivers' first waits are parked
	runtime.GC()
	pushed, start, cpu0 := 0, elapsed(), cpuTime()
	for i := range run.items {
		at := start
		if run.rate > 0 {
			at += arrivalAt(i, run.items, time.Duration(float64(run.items)/float64(run.rate)*float64(time.Second)))
			if ahead := at - elapsed(); ahead > 0 {
				s.flush() // the items due so far, before the wait for the next
				time.Sleep(ahead)
			}
		} else {
			at = elapsed()
		}
		if run.cap > 0 && elapsed()-start > run.cap {
			break
		}
		s.push(w9Item{id: int64(i), due: at, pushed: elapsed()})
		pushed++
	}
	s.flush()
	pushedFor := elapsed() - start
	for t := elapsed(); got.Load() < int64(pushed) && elapsed()-t < time.Second; {
		time.Sleep(time.Millisecond)
	}
	cpu, drained := cpuTime()-cpu0, got.Load() == int64(pushed)
	stop.Store(true)
	s.close()
	wg.Wait()
	s.stop()
	var lat durations
	for i := range lats {
		lat.merge(&lats[i].h)
	}

	lost, twice := int64(0), int64(0)
	queued := make(map[int64]int, 16)
	for _, it := range s.queued() {
		queued[it.id]++
	}
	for i := range pushed {
		switch n := delivered[i].Load(); {
		case n > 1:
			twice++
		case n == 0 && queued[int64(i)] == 0:
			lost++
		}
	}
	n := float64(got.Load())
	keepsUp := 0.0
	if drained && lat.quantileMs(0.5) < 10 {
		keepsUp = 1
	}
	return result{Metrics: map[string]float64{
		"cpu_us_per_item":      cpu.Seconds() * 1e6 / n,
		"cpu_s":                cpu.Seconds(),
		"items_per_s":          float64(pushed) / pushedFor.Seconds(),
		"pushed":               float64(pushed),
		"lat_p50_ms":           lat.quantileMs(0.5),
		"lat_p99_ms":           lat.quantileMs(0.99),
		"lat_p999_ms":          lat.quantileMs(0.999),
		"lost":                 float64(lost),
		"twice":                float64(twice),
		"expired":              float64(expired.Load()),
		"expired_while_queued": float64(queuedExpiry.Load()),
		"keeps_up":             keepsUp,
		"peak_rss_mb":          peakRSSMB(),
	}}, nil
}

// settle is how long the receivers get to park their first waits before the
// producer starts.
func (p params) settle() time.Duration {
	if p.quick {
		return 50 * time.Millisecond
	}
	return 500 * time.Millisecond
}

// merge adds o's counts to h.
func (h *durations) merge(o *durations) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}
