package main

import "github.com/prometheus/client_golang/prometheus"

// serverCollector exports the server's own counts beside the purgatory's
// and the wheel's: what hand-offs delivered, and what a client that went
// away could not be given.
type serverCollector struct {
	s                                     *server
	handedOff, written, restored, clients *prometheus.Desc
}

func newServerCollector(s *server) prometheus.Collector {
	return &serverCollector{s: s,
		handedOff: prometheus.NewDesc("redis_handed_off_elements_total", "Elements a push handed to a client blocked on the key (purgatory.HandOff).", nil, nil),
		written:   prometheus.NewDesc("redis_popped_elements_written_total", "Elements popped (LPOP, BLPOP and their kind) and written to a client's connection.", nil, nil),
		restored:  prometheus.NewDesc("redis_popped_elements_restored_total", "Elements popped for a client whose connection failed as the reply was written (the write took nothing): put back in their lists. A reply the connection took is written; if the connection fails later, its elements are gone with it, as in Redis.", nil, nil),
		clients:   prometheus.NewDesc("redis_connected_clients", "Client connections open.", nil, nil),
	}
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.handedOff
	ch <- c.written
	ch <- c.restored
	ch <- c.clients
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := &c.s.stats
	ch <- prometheus.MustNewConstMetric(c.handedOff, prometheus.CounterValue, float64(st.handedOff.Load()))
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(st.popWritten.Load()))
	ch <- prometheus.MustNewConstMetric(c.restored, prometheus.CounterValue, float64(st.restored.Load()))
	ch <- prometheus.MustNewConstMetric(c.clients, prometheus.GaugeValue, float64(c.s.nclients.Load()))
}
