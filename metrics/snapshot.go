package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// snapshot returns h's current counts as a constant histogram under desc, so
// that an observer, which exists before the purgatory or wheel it observes has
// been named to a collector, is exported with that collector's labels: the
// name is given once.
func snapshot(h prometheus.Histogram, desc *prometheus.Desc, labelValues ...string) prometheus.Metric {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	hist := m.GetHistogram()
	buckets := make(map[float64]uint64, len(hist.GetBucket()))
	for _, b := range hist.GetBucket() {
		buckets[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return prometheus.MustNewConstHistogram(desc, hist.GetSampleCount(), hist.GetSampleSum(), buckets, labelValues...)
}
