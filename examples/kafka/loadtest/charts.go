package main

import (
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// draw writes kafka_latency.png: produce-to-consume latency (p50 and p99)
// against the produce rate, for both servers; and kafka_cpu.png: broker CPU
// per 1,000 records against the rate.
func draw(dir string, samples []sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lat := plot.New()
	lat.Title.Text = "Produce to consume through kgo (acks=all; medians of runs)"
	lat.X.Label.Text = "records per second"
	lat.Y.Label.Text = "latency (ms)"
	cpu := plot.New()
	cpu.Title.Text = "Broker CPU per 1,000 records (acks=all; medians of runs)"
	cpu.X.Label.Text = "records per second"
	cpu.Y.Label.Text = "CPU ms"
	var latArgs, cpuArgs []any
	for _, system := range systems {
		var p50, p99, c plotter.XYs
		for _, rate := range rateList(samples) {
			m := medians(samples, system, "produce", rate)
			p50 = append(p50, plotter.XY{X: float64(rate), Y: m["e2e_p50_ms"]})
			p99 = append(p99, plotter.XY{X: float64(rate), Y: m["e2e_p99_ms"]})
			c = append(c, plotter.XY{X: float64(rate), Y: m["cpu_ms_per_1000_records"]})
		}
		name := labels[system]
		latArgs = append(latArgs, name+" p50", p50, name+" p99", p99)
		cpuArgs = append(cpuArgs, name, c)
	}
	if err := plotutil.AddLinePoints(lat, latArgs...); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(cpu, cpuArgs...); err != nil {
		return err
	}
	lat.Legend.Top, cpu.Legend.Top = true, true
	lat.Y.Min, cpu.Y.Min = 0, 0
	lat.Y.Max *= 1.5 // room for the legend above the lines
	cpu.Y.Max *= 1.3
	if err := lat.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "kafka_latency.png")); err != nil {
		return err
	}
	return cpu.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "kafka_cpu.png"))
}

var labels = map[string]string{"purgatory": "purgatory, R=3", "purgatory-r1": "purgatory, R=1", "kfake": "kfake (does not replicate)"}
