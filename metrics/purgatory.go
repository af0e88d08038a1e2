// Package metrics exposes purgatories and timing wheels to Prometheus.
//
// Collectors read a Stats snapshot at scrape time (client_golang's
// DBStatsCollector pattern), so the hot paths pay nothing for them; observers
// are opt-in and feed histograms per event. Nothing here registers anything:
// the caller registers on its own prometheus.Registerer, never the global one
// unless it chooses to, and may prefix names with
// prometheus.WrapRegistererWithPrefix. Labels are bounded: the purgatory or
// wheel name and the outcome, never an operation key.
package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purgatory-go/purgatory/purgatory"
)

// PurgatoryStats is what NewPurgatoryCollector reads; *purgatory.Purgatory[K]
// satisfies it for every K.
type PurgatoryStats interface {
	Name() string
	Stats() purgatory.Stats
}

// A PurgatoryOption adds to what NewPurgatoryCollector exports.
type PurgatoryOption func(*purgatoryCollector)

// WithDurationHistogram exports o's histogram as
// purgatory_operation_duration_seconds{outcome}, under the purgatory's label.
// Pass the same o to purgatory.WithObserver (directly, or inside an observer
// of your own that fans out to it): the collector exports what it is given,
// and never looks for it. A nil o is a misuse and panics.
func WithDurationHistogram(o *PurgatoryObserver) PurgatoryOption {
	if o == nil {
		panic("metrics: WithDurationHistogram(nil); pass the *PurgatoryObserver given to purgatory.WithObserver")
	}
	return func(c *purgatoryCollector) { c.obs = o }
}

// outcomes are the final outcomes, from the purgatory's one table; each
// one's label value is its String.
var outcomes = slices.Collect(purgatory.Outcomes())

type purgatoryCollector struct {
	src                                   PurgatoryStats
	watched, delayed, added, ends, panics *prometheus.Desc
	durations                             *prometheus.Desc // nil without WithDurationHistogram
	obs                                   *PurgatoryObserver
}

// NewPurgatoryCollector returns a collector of p's counters, labelled
// purgatory=p.Name(). It reads p.Stats() at each scrape, so it keeps working,
// with final values, after p is closed. With [WithDurationHistogram] it also
// exports that observer's histogram, under the same label. Purgatory names
// are unique per registry: registering a second collector for the same name
// fails with a prometheus.AlreadyRegisteredError, which [Register] wraps in
// an error that names the purgatory.
//
//	purgatory_watched_operations                  gauge    Kafka's PurgatorySize
//	purgatory_delayed_operations                  gauge    Kafka's NumDelayedOperations
//	purgatory_operations_added_total              counter
//	purgatory_operations_total{outcome}           counter  one series per purgatory.Outcomes(): completed, forced, expired, context_done, cancelled, closed, shed
//	purgatory_callback_panics_total               counter  panics recovered on the library's goroutines (Stats.Panics)
//	purgatory_operation_duration_seconds{outcome} histogram (WithDurationHistogram)
func NewPurgatoryCollector(p PurgatoryStats, opts ...PurgatoryOption) prometheus.Collector {
	labels := prometheus.Labels{"purgatory": p.Name()}
	c := &purgatoryCollector{
		src: p,
		watched: prometheus.NewDesc("purgatory_watched_operations",
			"Operations watched, counted once per key they are watched under (Kafka's PurgatorySize).", nil, labels),
		delayed: prometheus.NewDesc("purgatory_delayed_operations",
			"Operations added and not yet ended (Kafka's NumDelayedOperations).", nil, labels),
		added: prometheus.NewDesc("purgatory_operations_added_total",
			"Operations added with TryCompleteElseWatch.", nil, labels),
		ends: prometheus.NewDesc("purgatory_operations_total",
			"Operations ended, by outcome.", []string{"outcome"}, labels),
		panics: prometheus.NewDesc("purgatory_callback_panics_total",
			"Panics recovered from operations' callbacks on the library's goroutines (timeouts, contexts, Close).", nil, labels),
	}
	for _, o := range opts {
		o(c)
	}
	if c.obs != nil {
		c.durations = prometheus.NewDesc("purgatory_operation_duration_seconds",
			"Time operations spent in the purgatory, from TryCompleteElseWatch to their end, by outcome.",
			[]string{"outcome"}, labels)
	}
	return c
}

func (c *purgatoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.watched
	ch <- c.delayed
	ch <- c.added
	ch <- c.ends
	ch <- c.panics
	if c.durations != nil {
		ch <- c.durations
	}
}

func (c *purgatoryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(c.watched, prometheus.GaugeValue, float64(s.Watched))
	ch <- prometheus.MustNewConstMetric(c.delayed, prometheus.GaugeValue, float64(s.Delayed))
	ch <- prometheus.MustNewConstMetric(c.added, prometheus.CounterValue, float64(s.Added))
	for _, o := range outcomes {
		ch <- prometheus.MustNewConstMetric(c.ends, prometheus.CounterValue, float64(s.Ended(o)), o.String())
	}
	ch <- prometheus.MustNewConstMetric(c.panics, prometheus.CounterValue, float64(s.Panics))
	if c.obs != nil {
		for _, o := range outcomes {
			ch <- snapshot(c.obs.byOutcome[o], c.durations, o.String())
		}
	}
}

// DefaultDurationBuckets are the buckets of purgatory_operation_duration_seconds:
// 1 ms to about 65 s, doubling.
var DefaultDurationBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// PurgatoryObserver is a purgatory.Observer that records, by outcome, the time
// each operation spent in the purgatory. Pass it to purgatory.WithObserver,
// and to NewPurgatoryCollector with WithDurationHistogram, which exports it as
// the histogram purgatory_operation_duration_seconds{outcome}, labelled with
// the purgatory's name. It is safe for concurrent use.
type PurgatoryObserver struct {
	byOutcome []prometheus.Histogram // indexed by Outcome
}

// NewPurgatoryObserver returns a PurgatoryObserver with the given histogram
// buckets in seconds, or DefaultDurationBuckets if buckets is nil.
func NewPurgatoryObserver(buckets []float64) *PurgatoryObserver {
	if buckets == nil {
		buckets = DefaultDurationBuckets
	}
	o := &PurgatoryObserver{byOutcome: make([]prometheus.Histogram, slices.Max(outcomes)+1)}
	for _, oc := range outcomes {
		o.byOutcome[oc] = prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "purgatory_operation_duration_seconds", Buckets: buckets,
		})
	}
	return o
}

// OperationEnded implements purgatory.Observer.
func (o *PurgatoryObserver) OperationEnded(outcome purgatory.Outcome, elapsed time.Duration) {
	if int(outcome) < len(o.byOutcome) && o.byOutcome[outcome] != nil {
		o.byOutcome[outcome].Observe(elapsed.Seconds())
	}
}
