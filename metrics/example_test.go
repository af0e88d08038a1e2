package metrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purgatory-go/purgatory/metrics"
	"github.com/purgatory-go/purgatory/purgatory"
)

// request is an operation that waits for a response.
type request struct {
	purgatory.Op
	answered bool
}

func (r *request) TryComplete() bool { return r.answered }
func (r *request) OnComplete()       {}
func (r *request) OnExpiration()     {}

// The purgatory's name is given once, to New; its collector reads it, and
// exports the histogram of the observer it is handed.
func Example() {
	durations := metrics.NewPurgatoryObserver(nil)
	p, err := purgatory.New[string]("produce", purgatory.WithObserver(durations))
	if err != nil {
		panic(err)
	}
	defer p.Close()

	reg := prometheus.NewRegistry() // the caller's registry, never the global one
	reg.MustRegister(
		metrics.NewPurgatoryCollector(p, metrics.WithDurationHistogram(durations)),
		metrics.NewTimingWheelCollector(p.TimingWheel(), "produce"),
	)

	p.TryCompleteElseWatch(&request{Op: purgatory.Op{Timeout: time.Minute}}, "orders-0")

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "purgatory_delayed_operations", "timingwheel_pending_timers":
			m := f.GetMetric()[0]
			fmt.Println(f.GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// purgatory_delayed_operations produce 1
	// timingwheel_pending_timers produce 1
}
