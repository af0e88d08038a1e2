package main

import "github.com/prometheus/client_golang/prometheus"

// serverCollector exports the server's own counts beside the purgatory's
// and the wheel's: what hand-offs delivered, and what a client that went
// away could not be given.
type serverCollector struct {
	s                                    *server
	handedOff, written, dropped, clients *prometheus.Desc
}

func newServerCollector(s *server) prometheus.Collector {
	return &serverCollector{s: s,
		handedOff: prometheus.NewDesc("redis_handed_off_elements_total", "Elements a push handed to a client blocked on the key (purgatory.HandOff).", nil, nil),
		written:   prometheus.NewDesc("redis_popped_elements_written_total", "Elements popped (LPOP, BLPOP and their kind) and written to a client's connection.", nil, nil),
		dropped:   prometheus.NewDesc("redis_popped_elements_dropped_total", "Elements popped for a client whose connection ended before it took the reply: gone with the client, as in Redis (never put back: a command may have seen the list without them). A reply the connection took is written; if the connection fails later, its elements are gone with it too.", nil, nil),
		clients:   prometheus.NewDesc("redis_connected_clients", "Client connections open.", nil, nil),
	}
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.handedOff
	ch <- c.written
	ch <- c.dropped
	ch <- c.clients
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := &c.s.stats
	ch <- prometheus.MustNewConstMetric(c.handedOff, prometheus.CounterValue, float64(st.handedOff.Load()))
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(st.popWritten.Load()))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(c.clients, prometheus.GaugeValue, float64(c.s.nclients.Load()))
}
