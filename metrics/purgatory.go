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
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purgatory-go/purgatory/purgatory"
)

// PurgatoryStats is what NewPurgatoryCollector reads; *purgatory.Purgatory[K]
// satisfies it for every K.
type PurgatoryStats interface {
	Stats() purgatory.Stats
}

// outcomes maps each final outcome to its label value.
var outcomes = [...]struct {
	outcome purgatory.Outcome
	label   string
}{
	{purgatory.Completed, "completed"},
	{purgatory.Forced, "forced"},
	{purgatory.Expired, "expired"},
	{purgatory.ContextDone, "context_done"},
	{purgatory.Cancelled, "cancelled"},
	{purgatory.Closed, "closed"},
}

type purgatoryCollector struct {
	src                           PurgatoryStats
	watched, delayed, added, ends *prometheus.Desc
}

// NewPurgatoryCollector returns a collector of p's counters, labelled
// purgatory=name. It reads p.Stats() at each scrape, so it keeps working, with
// final values, after p is closed.
//
//	purgatory_watched_operations                 gauge    Kafka's PurgatorySize
//	purgatory_delayed_operations                 gauge    Kafka's NumDelayedOperations
//	purgatory_operations_added_total             counter
//	purgatory_operations_total{outcome}          counter  completed, forced, expired, context_done, cancelled, closed
func NewPurgatoryCollector(p PurgatoryStats, name string) prometheus.Collector {
	labels := prometheus.Labels{"purgatory": name}
	return &purgatoryCollector{
		src: p,
		watched: prometheus.NewDesc("purgatory_watched_operations",
			"Operations watched, counted once per key they are watched under (Kafka's PurgatorySize).", nil, labels),
		delayed: prometheus.NewDesc("purgatory_delayed_operations",
			"Operations added and not yet ended (Kafka's NumDelayedOperations).", nil, labels),
		added: prometheus.NewDesc("purgatory_operations_added_total",
			"Operations added with TryCompleteElseWatch.", nil, labels),
		ends: prometheus.NewDesc("purgatory_operations_total",
			"Operations ended, by outcome.", []string{"outcome"}, labels),
	}
}

func (c *purgatoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.watched
	ch <- c.delayed
	ch <- c.added
	ch <- c.ends
}

func (c *purgatoryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(c.watched, prometheus.GaugeValue, float64(s.Watched))
	ch <- prometheus.MustNewConstMetric(c.delayed, prometheus.GaugeValue, float64(s.Delayed))
	ch <- prometheus.MustNewConstMetric(c.added, prometheus.CounterValue, float64(s.Added))
	for _, o := range outcomes {
		ch <- prometheus.MustNewConstMetric(c.ends, prometheus.CounterValue, float64(s.Ended(o.outcome)), o.label)
	}
}

// DefaultDurationBuckets are the buckets of purgatory_operation_duration_seconds:
// 1 ms to about 65 s, doubling.
var DefaultDurationBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// PurgatoryObserver is a purgatory.Observer that feeds the histogram
// purgatory_operation_duration_seconds{outcome}: the time each operation spent
// in the purgatory, labelled purgatory=name. It is also the Collector of that
// histogram. Pass it to purgatory.WithObserver and register it.
type PurgatoryObserver struct {
	hist      *prometheus.HistogramVec
	byOutcome [maxOutcome + 1]prometheus.Observer
}

// maxOutcome is the largest outcome, sizing PurgatoryObserver's lookup table.
const maxOutcome = purgatory.Closed

// NewPurgatoryObserver returns a PurgatoryObserver with the given histogram
// buckets in seconds, or DefaultDurationBuckets if buckets is nil.
func NewPurgatoryObserver(name string, buckets []float64) *PurgatoryObserver {
	if buckets == nil {
		buckets = DefaultDurationBuckets
	}
	o := &PurgatoryObserver{hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "purgatory_operation_duration_seconds",
		Help:        "Time operations spent in the purgatory, from TryCompleteElseWatch to their end, by outcome.",
		ConstLabels: prometheus.Labels{"purgatory": name},
		Buckets:     buckets,
	}, []string{"outcome"})}
	for _, oc := range outcomes {
		o.byOutcome[oc.outcome] = o.hist.WithLabelValues(oc.label)
	}
	return o
}

// OperationEnded implements purgatory.Observer.
func (o *PurgatoryObserver) OperationEnded(outcome purgatory.Outcome, elapsed time.Duration) {
	if int(outcome) < len(o.byOutcome) && o.byOutcome[outcome] != nil {
		o.byOutcome[outcome].Observe(elapsed.Seconds())
	}
}

// Describe implements prometheus.Collector.
func (o *PurgatoryObserver) Describe(ch chan<- *prometheus.Desc) { o.hist.Describe(ch) }

// Collect implements prometheus.Collector.
func (o *PurgatoryObserver) Collect(ch chan<- prometheus.Metric) { o.hist.Collect(ch) }
