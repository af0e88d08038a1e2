package main

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// traffic is W5's traffic, generated while it runs so that memory measures the
// system under test rather than a pre-built workload: n requests arrive evenly
// over length, each watched under one of w5Keys keys with a w5Timeout timeout,
// and a w5EventShare of them get a completion event at U[0, w5EventWindow)
// after arrival. One goroutine delivers the events: it marks a request ready
// and checks its key.
//
// Events wait in 1 ms slots and a slot is delivered once it has passed, so an
// event is never delivered before it is due and at most about 1 ms after.
type traffic struct {
	d     delayed
	onEnd func(r *request, expired bool)

	begin   time.Time
	added   atomic.Int64
	behind  atomic.Int64 // how late the last arrival was, ns
	cursor  atomic.Int64 // the next slot the event goroutine takes; written under mu
	mu      sync.Mutex
	slots   map[int64][]*request // by due millisecond since begin
	arrived bool                 // every request has arrived; guarded by mu
}

func newTraffic(d delayed, onEnd func(r *request, expired bool)) *traffic {
	return &traffic{d: d, onEnd: onEnd, slots: map[int64][]*request{}}
}

// run sends the n requests and their events, and returns once the last
// event has been delivered. Requests may still be pending then, until they
// expire.
func (l *traffic) run(n int, length time.Duration, seed uint64) {
	l.begin = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { l.arrivals(n, length, seed) })
	wg.Go(l.events)
	wg.Wait()
}

// elapsed is the time since run began.
func (l *traffic) elapsed() time.Duration { return time.Since(l.begin) }

// eventsLag is how far the event goroutine is behind the clock.
func (l *traffic) eventsLag() time.Duration {
	return max(l.elapsed()-time.Duration(l.cursor.Load()+1)*time.Millisecond, 0)
}

func (l *traffic) arrivals(n int, length time.Duration, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range n {
		at := arrivalAt(i, n, length)
		// Sleep only when the next arrival is in the future; one wake-up then
		// serves every arrival that has come due meanwhile.
		if ahead := at - l.elapsed(); ahead > 0 {
			time.Sleep(ahead)
		}
		r := &request{onEnd: l.onEnd, key: rng.IntN(w5Keys)}
		if rng.Float64() < w5EventShare {
			r.event = at + time.Duration(rng.Int64N(int64(w5EventWindow)))
			l.mu.Lock()
			// A slot the event goroutine has taken is never taken again.
			slot := max(int64(r.event/time.Millisecond), l.cursor.Load())
			l.slots[slot] = append(l.slots[slot], r)
			l.mu.Unlock()
		}
		l.added.Add(1)
		l.d.add(r, r.key, w5Timeout)
	}
	l.behind.Store(int64(l.elapsed() - length))
	l.mu.Lock()
	l.arrived = true
	l.mu.Unlock()
}

// arrivalAt is when request i of n arriving evenly over length arrives. It
// computes in float64, because i × length in nanoseconds overflows int64 from
// the 15.4-millionth request of a 10-minute run.
func arrivalAt(i, n int, length time.Duration) time.Duration {
	return time.Duration(float64(i) * float64(length) / float64(n))
}

func (l *traffic) events() {
	for slot := int64(0); ; slot++ {
		if ahead := time.Duration(slot+1)*time.Millisecond - l.elapsed(); ahead > 0 {
			time.Sleep(ahead)
		}
		l.mu.Lock()
		due := l.slots[slot]
		delete(l.slots, slot)
		l.cursor.Store(slot + 1)
		last := l.arrived && len(l.slots) == 0
		l.mu.Unlock()
		for _, r := range due {
			r.ready.Store(true)
			l.d.check(r.key)
		}
		if last {
			return
		}
	}
}
