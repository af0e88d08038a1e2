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
	Observer() timingwheel.Observer
}

type wheelCollector struct {
	src                              TimingWheelStats
	pending, fired, panics, rejected *prometheus.Desc
	lateness                         *prometheus.Desc // nil without a TimingWheelObserver
	obs                              *TimingWheelObserver
}

// NewTimingWheelCollector returns a collector of tw's counters, labelled
// wheel=name (a wheel has no name of its own: this is where it gets one),
// read at each scrape. If tw was made with timingwheel.WithObserver(o) and o
// is a *TimingWheelObserver, the collector also exports o's histogram, under
// the same label.
//
//	timingwheel_pending_timers            gauge
//	timingwheel_fired_total               counter  timers handed to the executor
//	timingwheel_callback_panics_total     counter  panics recovered from callbacks
//	timingwheel_rejected_timers_total     counter  timers scheduled after Stop
//	timingwheel_lateness_seconds          histogram (with a TimingWheelObserver)
func NewTimingWheelCollector(tw TimingWheelStats, name string) prometheus.Collector {
	labels := prometheus.Labels{"wheel": name}
	c := &wheelCollector{
		src: tw,
		pending: prometheus.NewDesc("timingwheel_pending_timers",
			"Timers waiting to fire.", nil, labels),
		fired: prometheus.NewDesc("timingwheel_fired_total",
			"Timers whose time came and that were handed to the executor.", nil, labels),
		panics: prometheus.NewDesc("timingwheel_callback_panics_total",
			"Panics recovered from timer callbacks.", nil, labels),
		rejected: prometheus.NewDesc("timingwheel_rejected_timers_total",
			"Timers scheduled after the wheel was stopped; they never run.", nil, labels),
	}
	if o, ok := tw.Observer().(*TimingWheelObserver); ok && o != nil {
		c.obs = o
		c.lateness = prometheus.NewDesc("timingwheel_lateness_seconds",
			"How long after its deadline each timer was handed to the executor.", nil, labels)
	}
	return c
}

func (c *wheelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.fired
	ch <- c.panics
	ch <- c.rejected
	if c.lateness != nil {
		ch <- c.lateness
	}
}

func (c *wheelCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(c.fired, prometheus.CounterValue, float64(s.Fired))
	ch <- prometheus.MustNewConstMetric(c.panics, prometheus.CounterValue, float64(s.Panics))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(s.Rejected))
	if c.obs != nil {
		ch <- snapshot(c.obs.hist, c.lateness)
	}
}

// DefaultLatenessBuckets are the buckets of timingwheel_lateness_seconds:
// 50 µs to about 0.8 s, doubling.
var DefaultLatenessBuckets = prometheus.ExponentialBuckets(0.00005, 2, 15)

// TimingWheelObserver is a timingwheel.Observer that records how long after
// its deadline each timer was handed to the executor. Pass it to
// timingwheel.WithObserver; NewTimingWheelCollector of that wheel exports it
// as the histogram timingwheel_lateness_seconds, labelled with the wheel's
// name. It is safe for concurrent use.
type TimingWheelObserver struct {
	hist prometheus.Histogram
}

// NewTimingWheelObserver returns a TimingWheelObserver with the given buckets
// in seconds, or DefaultLatenessBuckets if buckets is nil.
func NewTimingWheelObserver(buckets []float64) *TimingWheelObserver {
	if buckets == nil {
		buckets = DefaultLatenessBuckets
	}
	return &TimingWheelObserver{hist: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "timingwheel_lateness_seconds", Buckets: buckets,
	})}
}

// TimerFired implements timingwheel.Observer.
func (o *TimingWheelObserver) TimerFired(lateness time.Duration) { o.hist.Observe(lateness.Seconds()) }
