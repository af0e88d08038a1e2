package metrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purgatory-go/purgatory/metrics"
	"github.com/purgatory-go/purgatory/purgatory"
)

func Example() {
	durations := metrics.NewPurgatoryObserver("produce", nil)
	p, err := purgatory.New[string]("produce", purgatory.WithObserver(durations))
	if err != nil {
		panic(err)
	}
	defer p.Close()

	reg := prometheus.NewRegistry() // the caller's registry, never the global one
	reg.MustRegister(
		metrics.NewPurgatoryCollector(p, "produce"),
		metrics.NewTimingWheelCollector(p.TimingWheel(), "produce"),
		durations,
	)

	p.TryCompleteElseWatch(newOp(time.Minute), "orders-0")

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() == "purgatory_delayed_operations" || f.GetName() == "timingwheel_pending_timers" {
			fmt.Println(f.GetName(), f.GetMetric()[0].GetGauge().GetValue())
		}
	}
	// Output:
	// purgatory_delayed_operations 1
	// timingwheel_pending_timers 1
}
