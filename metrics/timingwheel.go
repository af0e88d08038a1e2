package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// TimingWheelStats is what NewTimingWheelCollector reads;
// *timingwheel.TimingWheel satisfies it.
type TimingWheelStats interface {
	Stats() timingwheel.Stats
}

// A TimingWheelOption adds to what NewTimingWheelCollector exports.
type TimingWheelOption func(*wheelCollector)

// WithLatenessHistogram exports o's two histograms under the wheel's label:
// timingwheel_lateness_seconds (deadline to hand-off to the executor) and
// timingwheel_start_lateness_seconds (deadline to the callback's start). Pass the same o to timingwheel.WithObserver when
// you make the wheel; for a purgatory's timeouts, make that wheel yourself and
// give it to purgatory.WithTimingWheel. A nil o is a misuse and panics.
func WithLatenessHistogram(o *TimingWheelObserver) TimingWheelOption {
	if o == nil {
		panic("metrics: WithLatenessHistogram(nil); pass the *TimingWheelObserver given to timingwheel.WithObserver")
	}
	return func(c *wheelCollector) { c.obs = o }
}

type wheelCollector struct {
	src                              TimingWheelStats
	name                             string
	pending, fired, panics, rejected *prometheus.Desc
	busy, queued, oldest, wakeups    *prometheus.Desc
	lateness, startLateness          *prometheus.Desc // nil without WithLatenessHistogram
	obs                              *TimingWheelObserver
}

// NewTimingWheelCollector returns a collector of tw's counters, labelled
// wheel=name (a wheel has no name of its own: this is where it gets one, and
// it must not be empty), read at each scrape. With [WithLatenessHistogram] it
// also exports that observer's histograms, under the same label. Wheel names
// are unique per registry, as purgatory names are.
//
//	timingwheel_pending_timers              gauge
//	timingwheel_fired_total                 counter   timers handed to the executor
//	timingwheel_callback_panics_total       counter   panics recovered from callbacks
//	timingwheel_rejected_timers_total       counter   timers scheduled after Stop (never run)
//	timingwheel_busy_callbacks              gauge     callbacks running (Stats.Busy)
//	timingwheel_queued_callbacks            gauge     callbacks handed over, not started (Stats.Queued)
//	timingwheel_oldest_queued_seconds       gauge     how late the next queued callback already is (Stats.OldestQueued)
//	timingwheel_driver_wakeups_total        counter   the driver's wake-ups from its sleep (Stats.Wakeups)
//	timingwheel_lateness_seconds            histogram deadline to hand-off (WithLatenessHistogram)
//	timingwheel_start_lateness_seconds      histogram deadline to the callback's start (WithLatenessHistogram)
//
// Busy at the executor's bound with Queued growing means callbacks block:
// no other timer of the wheel fires meanwhile (see timingwheel.StuckAfter).
func NewTimingWheelCollector(tw TimingWheelStats, name string, opts ...TimingWheelOption) prometheus.Collector {
	if name == "" {
		panic("metrics: NewTimingWheelCollector needs a name for the wheel (its wheel label), unique per registry")
	}
	labels := prometheus.Labels{"wheel": name}
	c := &wheelCollector{
		src: tw, name: name,
		pending: prometheus.NewDesc("timingwheel_pending_timers",
			"Timers waiting to fire.", nil, labels),
		fired: prometheus.NewDesc("timingwheel_fired_total",
			"Timers whose time came and that were handed to the executor.", nil, labels),
		panics: prometheus.NewDesc("timingwheel_callback_panics_total",
			"Panics recovered from timer callbacks.", nil, labels),
		rejected: prometheus.NewDesc("timingwheel_rejected_timers_total",
			"Timers scheduled after the wheel was stopped; they never run.", nil, labels),
		busy: prometheus.NewDesc("timingwheel_busy_callbacks",
			"Callbacks running now.", nil, labels),
		queued: prometheus.NewDesc("timingwheel_queued_callbacks",
			"Callbacks handed to the executor and not yet started.", nil, labels),
		oldest: prometheus.NewDesc("timingwheel_oldest_queued_seconds",
			"How long past its deadline the next queued callback is; 0 if none is queued.", nil, labels),
		wakeups: prometheus.NewDesc("timingwheel_driver_wakeups_total",
			"Wake-ups of the wheel's driver goroutine from its sleep: at a deadline, or woken for a sooner one.", nil, labels),
	}
	for _, o := range opts {
		o(c)
	}
	if c.obs != nil {
		c.lateness = prometheus.NewDesc("timingwheel_lateness_seconds",
			"How long after its deadline each timer was handed to the executor.", nil, labels)
		c.startLateness = prometheus.NewDesc("timingwheel_start_lateness_seconds",
			"How long after its deadline each timer's callback started to run.", nil, labels)
	}
	return c
}

func (c *wheelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.fired
	ch <- c.panics
	ch <- c.rejected
	ch <- c.busy
	ch <- c.queued
	ch <- c.oldest
	ch <- c.wakeups
	if c.lateness != nil {
		ch <- c.lateness
		ch <- c.startLateness
	}
}

func (c *wheelCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(c.fired, prometheus.CounterValue, float64(s.Fired))
	ch <- prometheus.MustNewConstMetric(c.panics, prometheus.CounterValue, float64(s.Panics))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(s.Rejected))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(s.Busy))
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.Queued))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.OldestQueued.Seconds())
	ch <- prometheus.MustNewConstMetric(c.wakeups, prometheus.CounterValue, float64(s.Wakeups))
	if c.obs != nil {
		ch <- snapshot(c.obs.hist, c.lateness)
		ch <- snapshot(c.obs.start, c.startLateness)
	}
}

// DefaultLatenessBuckets are the buckets of timingwheel_lateness_seconds and
// timingwheel_start_lateness_seconds: 50 µs to about 0.8 s, doubling.
var DefaultLatenessBuckets = prometheus.ExponentialBuckets(0.00005, 2, 15)

// TimingWheelObserver is a timingwheel.StartObserver that records how long
// after its deadline each timer was handed to the executor, and how long
// after it the callback started (the difference is the wait behind other
// callbacks). Pass it to timingwheel.WithObserver, and to
// NewTimingWheelCollector with WithLatenessHistogram, which exports it as the
// histograms timingwheel_lateness_seconds and
// timingwheel_start_lateness_seconds, labelled with the wheel's name. It
// costs the wheel one clock read per callback. It is safe for concurrent use.
type TimingWheelObserver struct {
	hist, start prometheus.Histogram
}

// NewTimingWheelObserver returns a TimingWheelObserver with the given buckets
// in seconds, or DefaultLatenessBuckets if buckets is nil.
func NewTimingWheelObserver(buckets []float64) *TimingWheelObserver {
	if buckets == nil {
		buckets = DefaultLatenessBuckets
	}
	return &TimingWheelObserver{
		hist:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "timingwheel_lateness_seconds", Buckets: buckets}),
		start: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "timingwheel_start_lateness_seconds", Buckets: buckets}),
	}
}

// TimerFired implements timingwheel.Observer.
func (o *TimingWheelObserver) TimerFired(lateness time.Duration) { o.hist.Observe(lateness.Seconds()) }

// CallbackStarted implements timingwheel.StartObserver.
func (o *TimingWheelObserver) CallbackStarted(lateness time.Duration) {
	o.start.Observe(lateness.Seconds())
}
