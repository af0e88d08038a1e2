package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// The soak's bounds. Under a steady load nothing should grow: a live heap
// or a goroutine count that rises over the run is a leak. The slopes are
// least-squares fits over the samples taken while the load is steady, so
// that the noise of one sample (a few hundred kilobytes of live heap, a few
// pool workers) averages out over the run; a soak fails when a slope passes
// its bound by more than twice its standard error, so that a run too short
// to tell fails on a gross leak only, never on noise.
const (
	// maxHeapSlope is the most live heap the soak may gain per request
	// served: 0.02 bytes, 0.12 MB a minute at 100,000 requests/s. A leak of
	// one 8-byte word per 400 requests crosses it. Soaks without a leak
	// (bench/README.md gives their slopes) measure a small fraction of it.
	maxHeapSlope = 0.02
	// maxGoroutineSlope is the most goroutines the soak may gain a minute:
	// a goroutine that never ends, started once a minute or more, crosses
	// it; the pool workers that come and go between samples do not.
	maxGoroutineSlope = 0.5
)

// soak keeps W5's load on a purgatory for p.duration (default 10 minutes), at
// p.rate requests per second (default 100,000), generating requests as it goes
// instead of in advance. At every sampling interval (a minute, or a thirtieth
// of a shorter run) it collects the garbage, reads the live heap and the
// goroutines, and prints a line to stderr. It fails if any request is lost or
// ends twice, or if the live heap or the goroutines grow past their bounds.
// p.leakBytes and p.leakGoroutines inject a leak of the bench's own (bytes
// kept per request, goroutines started a minute), to show that it fails.
func soak(p params) (result, error) {
	length, rate := cmpOr(p.duration, 10*time.Minute), cmpOr(p.rate, 100_000)
	every := min(time.Minute, length/30)
	warm := max(5*time.Second, length/10) // the purgatory fills in its first seconds

	pg, err := purgatory.New[int]("soak")
	if err != nil {
		return result{}, err
	}
	leak := newLeak(p.leakBytes, p.leakGoroutines)
	defer leak.stop()
	t := newTraffic(lib{pg}, w5Keys, nil)
	t.onArrival = leak.request
	n := int64(float64(rate) * length.Seconds())
	done := make(chan struct{})
	t.start(int(n)) // here, since this goroutine reads t.elapsed
	go func() {
		defer close(done)
		t.send(int(n), length, 9)
	}()

	fmt.Fprintf(os.Stderr, "soak: %d requests/s for %v; a sample every %v, after a garbage collection\n", rate, length, every)
	fmt.Fprintf(os.Stderr, "%8s %10s %9s %10s %13s %9s %12s %12s %10s\n", "elapsed", "added", "delayed", "goroutines", "live heap MB", "RSS MB", "completed", "expired", "events lag")
	var s samples
	tick := time.NewTicker(every)
	for running := true; running; {
		select {
		case <-tick.C:
			leak.tick(t.elapsed())
			at, heap, gs := t.elapsed(), liveHeap(), runtime.NumGoroutine()
			if at >= warm && t.added.Load() < n { // the load is steady: filled, and arriving
				s.add(at, float64(heap)/(1<<20), float64(gs))
			}
			fmt.Fprintf(os.Stderr, "%8v %10d %9d %10d %13.1f %9.1f %12d %12d %10v\n", at.Round(time.Second), t.added.Load(),
				pg.Delayed(), gs, float64(heap)/(1<<20), rssMB(), t.completed.Load(), t.expired.Load(), t.eventsLag().Round(time.Millisecond))
		case <-done:
			running = false
		}
	}
	tick.Stop()
	select { // the last timeouts, if the driver runs behind
	case <-t.allEnded:
	case <-time.After(5 * time.Second):
	}
	pg.Close()
	return s.verdict(t, rate, length)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// samples are the soak's readings after the warm-up, in time order.
type samples struct {
	at, heapMB, goroutines []float64 // at in minutes
}

func (s *samples) add(at time.Duration, heapMB, goroutines float64) {
	s.at = append(s.at, at.Minutes())
	s.heapMB = append(s.heapMB, heapMB)
	s.goroutines = append(s.goroutines, goroutines)
}

// verdict is the soak's result, and an error if a request was lost or ended
// twice or something grew past its bound.
func (s *samples) verdict(t *traffic, rate int, length time.Duration) (result, error) {
	total := t.added.Load()
	heapSlope, heapErr := slope(s.at, s.heapMB)
	goSlope, goErr := slope(s.at, s.goroutines)
	perReq := heapSlope * (1 << 20) / (float64(rate) * 60) // bytes per request
	m := map[string]float64{
		"rate":                   float64(rate),
		"minutes":                length.Minutes(),
		"samples":                float64(len(s.at)),
		"live_heap_mb":           median(s.heapMB),
		"live_heap_slope_mb_min": heapSlope,
		"live_heap_slope_se":     heapErr,
		"live_heap_b_per_req":    perReq,
		"goroutines":             median(s.goroutines),
		"goroutine_slope_min":    goSlope,
		"goroutine_slope_se":     goErr,
		"peak_rss_mb":            peakRSSMB(),
		"completed_pct":          100 * float64(t.completed.Load()) / float64(total),
		"lost":                   float64(total - t.ended.Load()),
		"ended_twice":            float64(t.twice.Load()),
	}
	fmt.Fprintf(os.Stderr, "soak: %d added, %d completed, %d expired, %d ended twice, %d lost; live heap %+.3f MB/min (± %.3f; %.4f B per request, bound %v), goroutines %+.2f/min (± %.2f, bound %v)\n",
		total, t.completed.Load(), t.expired.Load(), t.twice.Load(), total-t.ended.Load(), heapSlope, heapErr, perReq, maxHeapSlope, goSlope, goErr, maxGoroutineSlope)
	var errs []error
	switch {
	case t.twice.Load() != 0 || t.ended.Load() != total:
		errs = append(errs, fmt.Errorf("soak: %d requests ended twice and %d were lost", t.twice.Load(), total-t.ended.Load()))
	case len(s.at) < 3:
		errs = append(errs, fmt.Errorf("soak: %d samples after the warm-up; run it longer", len(s.at)))
	}
	if goSlope-2*goErr > maxGoroutineSlope {
		errs = append(errs, fmt.Errorf("soak: goroutines grew by %.2f a minute (± %.2f), past the bound of %v by more than twice its error: a leak", goSlope, goErr, maxGoroutineSlope))
	}
	if heapSlope-2*heapErr > maxHeapSlope*float64(rate)*60/(1<<20) {
		errs = append(errs, fmt.Errorf("soak: the live heap grew %.3f MB a minute (± %.3f), %.4f bytes per request, past the bound of %v by more than twice its error: a leak", heapSlope, heapErr, perReq, maxHeapSlope))
	}
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	return result{Metrics: m}, nil
}

// slope fits y = a + b·x by least squares and returns b and its standard
// error (NaN with fewer than three points).
func slope(x, y []float64) (b, se float64) {
	n := float64(len(x))
	if len(x) < 3 {
		return math.NaN(), math.NaN()
	}
	var mx, my float64
	for i := range x {
		mx += x[i] / n
		my += y[i] / n
	}
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	b = sxy / sxx
	var rss float64
	for i := range x {
		r := y[i] - (my + b*(x[i]-mx))
		rss += r * r
	}
	return b, math.Sqrt(rss / (n - 2) / sxx)
}

// leak is a leak of the bench's own, for showing that the soak fails: bytes
// kept for every request, and goroutines started every minute that wait
// until the soak ends.
type leak struct {
	bytes      int
	goroutines int
	kept       [][]byte
	started    int
	quit       chan struct{}
}

func newLeak(bytes, goroutines int) *leak {
	return &leak{bytes: bytes, goroutines: goroutines, quit: make(chan struct{})}
}

// request keeps l.bytes for a request; the arrivals goroutine calls it.
func (l *leak) request() {
	if l.bytes > 0 {
		l.kept = append(l.kept, make([]byte, l.bytes))
	}
}

// tick starts the goroutines due by elapsed.
func (l *leak) tick(elapsed time.Duration) {
	for ; l.started < int(elapsed.Minutes()*float64(l.goroutines)); l.started++ {
		go func() { <-l.quit }()
	}
}

func (l *leak) stop() { close(l.quit) }

// rssMB reads the current resident set size from /proc/self/statm.
func rssMB() float64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(data)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}
