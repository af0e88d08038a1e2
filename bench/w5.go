package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

var purgatorySystems = []string{"purgatory", "naive"}

// overloadSystems are W5over's: also the purgatory with a bound on what it
// parks (WithMaxDelayed), which sheds the rest at once (purgatory-shed) or
// holds the rest back until there is room (purgatory-admit, which calls Admit
// before each add).
var overloadSystems = []string{"purgatory", "purgatory-shed", "purgatory-admit", "naive"}

// floorSystem is no purgatory at all, for W5's workloads when named with
// -system: each request ends (as expired) as it is added, and an event finds
// nothing to check. Its CPU is what the bench itself spends per request (the
// generator, the event schedule, the bookkeeping), which every system's CPU
// includes; subtract it to compare the systems' own costs.
const floorSystem = "floor"

// shedBound is purgatory-shed's WithMaxDelayed: about what W5 keeps waiting
// at 190,000 requests/s (0.8 s on average each), under the highest rate the
// purgatory keeps up with.
const shedBound = 150_000

// admitBound is purgatory-admit's: the largest of 100,000, 120,000 and
// 150,000 with which it completed about all it could (40 %) at both W5over
// rates, one process each on the CI machine. At 150,000 its walks fell
// behind at 450,000/s.
const admitBound = 100_000

// request is W5's request: it can complete once its completion event has
// arrived. Each system makes its own (delayed.newRequest): the purgatory's is
// the request in a libRequest, with the purgatory.Op that a user's operation
// embeds, in one allocation; naive's carries no Op, which it would never use.
type request struct {
	ready   atomic.Bool
	due     time.Duration // when it was due to arrive, since the run began
	event   time.Duration // when its event was due, since the run began
	key     int           // the key it is watched under (soak)
	endedN  atomic.Int32  // how many times it ended: must be exactly 1
	traffic *traffic      // counts how it ends
	op      *libRequest   // the purgatory's request that holds this one; nil in naive's
}

func (r *request) TryComplete() bool { return r.ready.Load() }
func (r *request) end(how ending)    { r.traffic.end(r, how) }

// libRequest is a request as the purgatory's operation. The request follows
// the Op, so that ready shares a cache line with the Op's last word, which a
// try reads too.
type libRequest struct {
	purgatory.Op
	request
}

func (r *libRequest) OnComplete() {
	switch r.Outcome() {
	case purgatory.Expired: // counted by OnExpiration
	case purgatory.Shed:
		r.end(endShed)
	default:
		r.end(endCompleted)
	}
}
func (r *libRequest) OnExpiration() { r.end(endExpired) }

// delayed is what W5 drives: this library's purgatory, or the naive one.
type delayed interface {
	// newRequest returns a new request in the system's own form.
	newRequest() *request
	add(r *request, key int, timeout time.Duration)
	check(key int)
	close()
}

func newDelayed(name string) (delayed, error) {
	switch name {
	case "purgatory":
		p, err := purgatory.New[int]("w5")
		if err != nil {
			return nil, err
		}
		return lib{p}, nil
	case "purgatory-shed":
		p, err := purgatory.New[int]("w5", purgatory.WithMaxDelayed(shedBound))
		if err != nil {
			return nil, err
		}
		return lib{p}, nil
	case "purgatory-admit":
		p, err := purgatory.New[int]("w5", purgatory.WithMaxDelayed(admitBound))
		if err != nil {
			return nil, err
		}
		return admitting{lib{p}}, nil
	case "naive":
		return &naive{lists: map[int][]*naiveReq{}}, nil
	case floorSystem:
		return floor{}, nil
	}
	return nil, fmt.Errorf("unknown purgatory system %q (have %v, the shedding and admitting ones in W5over only, and %s)", name, overloadSystems, floorSystem)
}

type lib struct{ p *purgatory.Purgatory[int] }

func (lib) newRequest() *request {
	o := &libRequest{}
	o.op = o
	return &o.request
}

func (l lib) add(r *request, key int, timeout time.Duration) {
	r.op.Timeout = timeout
	l.p.TryCompleteElseWatch(r.op, key)
}
func (l lib) check(key int) { l.p.CheckAndComplete(key) }
func (l lib) close()        { l.p.Close() }

// wheelWakeups is how often the purgatory's wheel's driver has woken
// (timingwheel.Stats.Wakeups), for W5's driver_wakeups_per_s.
func (l lib) wheelWakeups() int64 { return l.p.TimingWheel().Stats().Wakeups }

// wakeupCounter is a system whose timers are on this library's wheel.
type wakeupCounter interface{ wheelWakeups() int64 }

// admitting is the purgatory with backpressure: add waits in Admit while the
// purgatory is at its bound, and counts that wait against the timeout.
type admitting struct{ lib }

func (a admitting) add(r *request, key int, timeout time.Duration) {
	start := time.Now()
	if err := a.p.Admit(context.Background()); err != nil {
		panic(err) // context.Background is never done
	}
	a.lib.add(r, key, timeLeft(timeout-time.Since(start)))
}

// timeLeft is what is left of a request's timeout, or -1 once none is: a
// deadline already passed, so that it expires at once unless it can complete
// (a zero Op.Timeout would be a forgotten one).
func timeLeft(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// floor is floorSystem.
type floor struct{}

func (floor) newRequest() *request                   { return &request{} }
func (floor) add(r *request, _ int, _ time.Duration) { r.end(endExpired) }
func (floor) check(int)                              {}
func (floor) close()                                 {}

// naive is the purgatory one writes first: one mutex over a map of watch lists
// and a time.AfterFunc per request; completed and expired requests leave a list
// when its key is checked.
type naive struct {
	mu    sync.Mutex
	lists map[int][]*naiveReq
}

type naiveReq struct {
	*request
	done  atomic.Bool
	mu    sync.Mutex // guards timer
	timer *time.Timer
}

func (*naive) newRequest() *request { return &request{} }

func (n *naive) add(r *request, key int, timeout time.Duration) {
	q := &naiveReq{request: r}
	n.mu.Lock()
	n.lists[key] = append(n.lists[key], q)
	n.mu.Unlock()
	if r.TryComplete() && q.done.CompareAndSwap(false, true) {
		r.end(endCompleted)
		return
	}
	q.mu.Lock()
	q.timer = time.AfterFunc(timeout, func() {
		if q.done.CompareAndSwap(false, true) {
			r.end(endExpired)
		}
	})
	q.mu.Unlock()
}

func (n *naive) check(key int) {
	var won []*naiveReq
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
	n.lists[key] = keep
	n.mu.Unlock()
	for _, q := range won {
		q.mu.Lock()
		if q.timer != nil {
			q.timer.Stop()
		}
		q.mu.Unlock()
		q.end(endCompleted)
	}
}

func (n *naive) close() {}

// W5's shape, from DESIGN.md.
const (
	w5Keys        = 1000
	w5Timeout     = time.Second
	w5EventShare  = 0.8
	w5EventWindow = 2 * time.Second
	// w5Expected is the completed share the shape implies: 80 % get an event,
	// half of those before their 1 s timeout.
	w5Expected = 100 * w5EventShare * float64(w5Timeout) / float64(w5EventWindow)
)

// w5 runs requests arriving at rate per second for length, in an open loop if
// open; see DESIGN.md and traffic.
func w5(d delayed, rate, keys int, length time.Duration, open bool) result {
	n := int(float64(rate) * length.Seconds())
	var lagMu sync.Mutex
	var lags []time.Duration
	var t *traffic
	t = newTraffic(d, keys, func(r *request) {
		lag := t.elapsed() - r.event
		lagMu.Lock()
		lags = append(lags, lag)
		lagMu.Unlock()
	})
	if open {
		t.open = newIntake()
	}

	wakes, _ := d.(wakeupCounter)
	var wakes0 int64
	if wakes != nil {
		wakes0 = wakes.wheelWakeups()
	}
	began := time.Now()
	cpu0 := cpuTime()
	t.run(n, length, 5)
	select {
	case <-t.allEnded:
	case <-time.After(w5Timeout + 30*time.Second):
	}
	cpu := cpuTime() - cpu0
	wall := time.Since(began)

	lagMu.Lock()
	defer lagMu.Unlock()
	slices.Sort(lags)
	lagMs := func(q float64) float64 {
		if len(lags) == 0 {
			return math.NaN()
		}
		return float64(lags[min(int(q*float64(len(lags))), len(lags)-1)]) / 1e6
	}
	completedPct := 100 * float64(t.completed.Load()) / float64(n)
	keepsUp := 0.0
	if lagMs(0.5) < 10 && math.Abs(completedPct-w5Expected) <= 1 {
		keepsUp = 1
	}
	m := map[string]float64{
		"rate":                float64(rate),
		"keys":                float64(keys),
		"completed_pct":       completedPct,
		"expired_pct":         100 * float64(t.expired.Load()) / float64(n),
		"shed_pct":            100 * float64(t.shed.Load()) / float64(n),
		"lost":                float64(int64(n) - t.ended.Load()),
		"ended_twice":         float64(t.twice.Load()),
		"cpu_s":               cpu.Seconds(),
		"peak_rss_mb":         peakRSSMB(),
		"lag_p50_ms":          lagMs(0.5),
		"lag_p99_ms":          lagMs(0.99),
		"lag_p999_ms":         lagMs(0.999),
		"arrivals_behind_ms":  float64(t.behind.Load()) / 1e6,
		"arrival_late_p99_ms": t.lateArrivals.quantileMs(0.99),
		"arrival_late_max_ms": t.lateArrivals.quantileMs(1),
		// Goodput counts requests completed (before their timeout, or they
		// would have expired) per second of the time it took to send them
		// all: a system whose slowness held its arrivals back is not paid
		// for it with a lighter load. Open loop, the arrivals are on time,
		// and it counts those completed by the deadline their due arrival
		// set.
		"goodput_per_s":  goodput(t, length),
		"cpu_us_per_req": cpu.Seconds() * 1e6 / float64(n),
		"keeps_up":       keepsUp,
	}
	if wakes != nil { // the driver's wake-ups a second, arrivals and expiries included
		m["driver_wakeups_per_s"] = float64(wakes.wheelWakeups()-wakes0) / wall.Seconds()
	}
	if open {
		m["intake_late_p50_ms"] = t.lateIntake.quantileMs(0.5)
		m["intake_late_p99_ms"] = t.lateIntake.quantileMs(0.99)
		m["intake_late_max_ms"] = t.lateIntake.quantileMs(1)
	}
	for i, q := range latenessQuantiles { // the lag's distribution, for the chart
		m[lagQuantileMetric(i)] = lagMs(q)
	}
	maps.DeleteFunc(m, func(_ string, v float64) bool { return math.IsNaN(v) }) // no samples (floor completes nothing): no value
	return result{Metrics: m}
}

// quantileMs is the q-quantile of sorted durations, in milliseconds; NaN if
// there are none.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return float64(sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]) / 1e6
}

func goodput(t *traffic, length time.Duration) float64 {
	if t.open != nil {
		return float64(t.onTime.Load()) / length.Seconds()
	}
	return float64(t.completed.Load()) / max(length, t.span).Seconds()
}

func lagQuantileMetric(i int) string { return fmt.Sprintf("lag_q%03d", i) }

func runPurgatoryWorkload(system string, p params) (result, error) {
	d, err := newDelayed(system)
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
		keys = w5Keys
	}
	return w5(d, rate, keys, length, p.open), nil
}
