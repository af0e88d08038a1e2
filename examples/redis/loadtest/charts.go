package main

import (
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// draw writes redis_handoff_latency.png (push-to-pop p50 and p99 at each
// fixed rate), redis_handoff_cpu.png (server CPU per element at each rate,
// as fast as they can last) and redis_benchmark.png (redis-benchmark's
// requests per second), both systems in each.
func draw(dir string, samples []sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := drawLatency(dir, samples); err != nil {
		return err
	}
	all := rateList(samples)
	cpu := plot.New()
	cpu.Title.Text = "Server CPU per element handed off (medians of runs)"
	cpu.Y.Label.Text = "CPU (us)"
	var names []string
	for _, r := range all {
		names = append(names, rateName(r))
	}
	if err := bars(cpu, names, func(system string, i int) float64 {
		return medians(samples, system, "handoff", all[i])["cpu_us_per_element"]
	}); err != nil {
		return err
	}
	if err := cpu.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "redis_handoff_cpu.png")); err != nil {
		return err
	}

	if len(medians(samples, "purgatory", "benchmark", 0)) == 0 {
		return nil
	}
	bench := plot.New()
	bench.Title.Text = "redis-benchmark -P 16 -c 50 (medians of runs)"
	bench.Y.Label.Text = "thousand requests per second"
	tests := []string{"lpush", "rpop", "lrange_100"}
	if err := bars(bench, []string{"LPUSH", "RPOP", "LRANGE_100"}, func(system string, i int) float64 {
		return medians(samples, system, "benchmark", 0)[tests[i]+"_rps"] / 1000
	}); err != nil {
		return err
	}
	return bench.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "redis_benchmark.png"))
}

// bars adds a group of bars per name, one bar per system, value(system, i)
// high.
func bars(p *plot.Plot, names []string, value func(system string, i int) float64) error {
	w := vg.Points(18)
	for k, system := range systems {
		vals := make(plotter.Values, len(names))
		for i := range names {
			vals[i] = value(system, i)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.Color = plotutil.Color(k)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(2*k-1) / 2
		p.Add(b)
		p.Legend.Add(labels[system], b)
	}
	p.NominalX(names...)
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = 0
	p.Y.Max *= 1.3
	return nil
}

// drawLatency draws push-to-pop p50 and p99 against the fixed rates.
func drawLatency(dir string, samples []sample) error {
	var fixed []int
	for _, r := range rateList(samples) {
		if r > 0 {
			fixed = append(fixed, r)
		}
	}
	lat := plot.New()
	lat.Title.Text = "BLPOP hand-off, push to pop (64 clients blocked; medians of runs)"
	lat.X.Label.Text = "elements per second"
	lat.Y.Label.Text = "latency (ms)"
	var latArgs []any
	for _, system := range systems {
		var p50, p99 plotter.XYs
		for _, rate := range fixed {
			m := medians(samples, system, "handoff", rate)
			p50 = append(p50, plotter.XY{X: float64(rate), Y: m["lat_p50_ms"]})
			p99 = append(p99, plotter.XY{X: float64(rate), Y: m["lat_p99_ms"]})
		}
		latArgs = append(latArgs, labels[system]+" p50", p50, labels[system]+" p99", p99)
	}
	if err := plotutil.AddLinePoints(lat, latArgs...); err != nil {
		return err
	}
	lat.Legend.Top, lat.Legend.Left = true, true
	lat.Y.Min = 0
	lat.Y.Max *= 1.5 // room for the legend
	return lat.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "redis_handoff_latency.png"))
}
