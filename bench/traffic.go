package main

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// traffic is W5's traffic, generated while it runs so that memory measures the
// system under test rather than a pre-built workload: n requests arrive evenly
// over length, each watched under one of keys keys (W5: w5Keys) with a w5Timeout timeout,
// and a w5EventShare of them get a completion event at U[0, w5EventWindow)
// after it is sent. One goroutine delivers the events: it marks a request ready
// and checks its key.
//
// Events wait in 1 ms slots and a slot is delivered once it has passed, so an
// event is never delivered before it is due and at most about 1 ms after.
//
// It also tallies how the requests end, from their callbacks.
//
// Open loop (W5over), arrivals never wait for the system: the generator queues
// each request on time (intake), and a goroutine of its own hands them to the
// system as fast as the system takes them. A request's timeout and event
// then count from when it was due to arrive, not from when the system took
// it, so a system that falls behind pays for it in expiries (a request it
// takes more than the timeout late expires at once unless it can complete),
// never with a lighter load; and only completions by that deadline count as
// goodput (onTime).
type traffic struct {
	d           delayed
	keys        int              // requests are spread over this many keys
	onCompleted func(r *request) // if not nil, called as each completion is counted
	onArrival   func()           // if not nil, called by the arrivals goroutine as each request is made
	open        *intake          // open loop: the queue to the adder; nil otherwise

	begin    time.Time
	n        int64         // requests to send; set before any is
	allEnded chan struct{} // closed when all n have ended

	added, completed, expired, shed, ended atomic.Int64
	onTime                                 atomic.Int64 // open loop: completed by their deadline
	twice                                  atomic.Int64 // requests that ended more than once
	behind                                 atomic.Int64 // how late the last arrival was, ns
	// lateArrivals samples how late arrivals were sent (every
	// arrivalSample-th one), written by the arrivals goroutine only; span
	// is when the last one was sent. A histogram, so that a long run's
	// samples take no more memory than a short one's.
	lateArrivals durations
	// lateIntake samples, open loop, how long after they were due the
	// system took requests; written by the adder only.
	lateIntake durations
	span       time.Duration
	cursor     atomic.Int64 // the next slot the event goroutine takes; written under mu
	mu         sync.Mutex
	slots      map[int64][]*request // by due millisecond since begin
	arrived    bool                 // every request has arrived; guarded by mu
}

func newTraffic(d delayed, keys int, onCompleted func(r *request)) *traffic {
	return &traffic{d: d, keys: keys, onCompleted: onCompleted, allEnded: make(chan struct{}), slots: map[int64][]*request{}}
}

// run sends the n requests and their events, and returns once the last
// event has been delivered. Requests may still be pending then, until they
// expire; allEnded says when none is.
func (t *traffic) run(n int, length time.Duration, seed uint64) {
	t.start(n)
	t.send(n, length, seed)
}

// start sets the run's size and its clock going. Whatever reads elapsed
// from another goroutine starts the run itself, before it starts send there.
func (t *traffic) start(n int) {
	t.n = int64(n)
	t.begin = time.Now()
}

// send is run after start.
func (t *traffic) send(n int, length time.Duration, seed uint64) {
	var wg sync.WaitGroup
	wg.Go(func() { t.arrivals(n, length, seed) })
	wg.Go(t.events)
	if t.open != nil {
		wg.Go(t.adder)
	}
	wg.Wait()
}

// elapsed is the time since run began.
func (t *traffic) elapsed() time.Duration { return time.Since(t.begin) }

// eventsLag is how far the event goroutine is behind the clock.
func (t *traffic) eventsLag() time.Duration {
	return max(t.elapsed()-time.Duration(t.cursor.Load()+1)*time.Millisecond, 0)
}

func (t *traffic) arrivals(n int, length time.Duration, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range n {
		at := arrivalAt(i, n, length)
		// Sleep only when the next arrival is in the future; one wake-up then
		// serves every arrival that has come due meanwhile.
		if ahead := at - t.elapsed(); ahead > 0 {
			time.Sleep(ahead)
		}
		sent := t.elapsed()
		if i%arrivalSample == 0 {
			t.lateArrivals.add(sent - at)
		}
		r := t.d.newRequest()
		r.traffic, r.key, r.due = t, rng.IntN(t.keys), at
		if t.onArrival != nil {
			t.onArrival()
		}
		if rng.Float64() < w5EventShare {
			// Closed loop, the event is due after the request is sent, not
			// after it was meant to be: a system that holds back its own
			// arrivals must not see their events sooner, and complete more,
			// for it. Open loop, arrivals are on time and it is due after
			// that.
			from := sent
			if t.open != nil {
				from = at
			}
			r.event = from + time.Duration(rng.Int64N(int64(w5EventWindow)))
			t.mu.Lock()
			// A slot the event goroutine has taken is never taken again.
			slot := max(int64(r.event/time.Millisecond), t.cursor.Load())
			t.slots[slot] = append(t.slots[slot], r)
			t.mu.Unlock()
		}
		if t.open != nil {
			t.open.push(r)
			continue
		}
		t.added.Add(1)
		t.d.add(r, r.key, w5Timeout)
	}
	if t.open != nil {
		t.open.close()
	}
	t.span = t.elapsed()
	t.behind.Store(int64(t.span - length))
	t.mu.Lock()
	t.arrived = true
	t.mu.Unlock()
}

// adder hands the open loop's requests to the system, oldest first, each with
// what is left of its timeout.
func (t *traffic) adder() {
	i := 0
	for {
		batch, ok := t.open.take()
		if !ok {
			return
		}
		for _, r := range batch {
			now := t.elapsed()
			if i%arrivalSample == 0 {
				t.lateIntake.add(now - r.due)
			}
			i++
			t.added.Add(1)
			t.d.add(r, r.key, timeLeft(r.due+w5Timeout-now))
		}
	}
}

// ending is how a request ended, as W5 counts it.
type ending int

const (
	endCompleted ending = iota
	endExpired
	endShed // not parked: over purgatory-shed's bound
)

// end counts r's ending; the request's callbacks call it.
func (t *traffic) end(r *request, how ending) {
	if r.endedN.Add(1) > 1 {
		t.twice.Add(1)
	}
	switch how {
	case endExpired:
		t.expired.Add(1)
	case endShed:
		t.shed.Add(1)
	default:
		t.completed.Add(1)
		if t.open != nil && t.elapsed() <= r.due+w5Timeout {
			t.onTime.Add(1)
		}
		if t.onCompleted != nil {
			t.onCompleted(r)
		}
	}
	if t.ended.Add(1) == t.n {
		close(t.allEnded)
	}
}

// arrivalSample is how often an arrival's lateness is sampled: a sample per
// 64 keeps the samples' memory out of the peak RSS measured.
const arrivalSample = 64

// arrivalAt is when request i of n arriving evenly over length arrives. It
// computes in float64, because i × length in nanoseconds overflows int64 from
// the 15.4-millionth request of a 10-minute run.
func arrivalAt(i, n int, length time.Duration) time.Duration {
	return time.Duration(float64(i) * float64(length) / float64(n))
}

func (t *traffic) events() {
	for slot := int64(0); ; slot++ {
		if ahead := time.Duration(slot+1)*time.Millisecond - t.elapsed(); ahead > 0 {
			time.Sleep(ahead)
		}
		t.mu.Lock()
		due := t.slots[slot]
		delete(t.slots, slot)
		t.cursor.Store(slot + 1)
		last := t.arrived && len(t.slots) == 0
		t.mu.Unlock()
		for _, r := range due {
			r.ready.Store(true)
			t.d.check(r.key)
		}
		if last {
			return
		}
	}
}
