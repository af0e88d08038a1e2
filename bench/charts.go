package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// drawCharts draws, from whichever of W2sweep, W4, W5, W5keys and W9 ran
// (W9: w9_handoff_cpu.png, CPU per item against the receivers waiting):
// w2_parked.png, ns per schedule+stop against parked timers (O(1) against
// O(log n)), w4_lateness.png, the distribution of W4's lateness,
// w5_lag.png, the distribution of W5's completion lag, and w5_keys_cpu.png,
// CPU per request against the number of keys, w6_keys_cpu.png, the same for
// W6, w7_scaling.png, W7's operations per second against the goroutines
// that make them, and w8_add_complete.png, W8's ns per add+complete against
// the goroutines.
func drawCharts(dir string, res map[key][]result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := chartW2(dir, res); err != nil {
		return err
	}
	if err := chartW4(dir, res); err != nil {
		return err
	}
	if err := chartW5Keys(dir, res); err != nil {
		return err
	}
	if err := chartW8(dir, res); err != nil {
		return err
	}
	if err := chartW7(dir, res); err != nil {
		return err
	}
	if err := chartW6(dir, res); err != nil {
		return err
	}
	if err := chartW9(dir, res); err != nil {
		return err
	}
	return chartW5(dir, res)
}

// sweepLines returns, per system, a sweep's median of metric at each of its
// variants, in variant order.
func sweepLines(res map[key][]result, workload, metric string) map[string]plotter.XYs {
	lines := map[string]plotter.XYs{}
	for k, rs := range res {
		if k.workload == workload {
			if v := median(values(rs, metric)); !math.IsNaN(v) {
				lines[k.system] = append(lines[k.system], plotter.XY{X: float64(k.variant), Y: v})
			}
		}
	}
	for _, pts := range lines {
		slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
	}
	return lines
}

// addLinePoints draws a line with points per system, in name order.
func addLinePoints(p *plot.Plot, lines map[string]plotter.XYs) error {
	var args []any
	for _, s := range sortedSystems(lines) {
		args = append(args, s, lines[s])
	}
	return plotutil.AddLinePoints(p, args...)
}

func chartW5Keys(dir string, res map[key][]result) error {
	return keysChart(dir, "w5_keys_cpu.png", sweepLines(res, "W5keys", "cpu_us_per_req"),
		"W5 at 100,000 requests/s: CPU per request by keys", "keys (log scale; operations pending per key = 80,000 / keys)")
}

func chartW6(dir string, res map[key][]result) error {
	return keysChart(dir, "w6_keys_cpu.png", sweepLines(res, "W6", "cpu_us_per_req"),
		"W6 (thresholds) at 100,000 requests/s: CPU per request by keys", "keys (log scale; requests waiting per key ≈ 100,000 / keys)")
}

func chartW9(dir string, res map[key][]result) error {
	return cpuChart(dir, "w9_handoff_cpu.png", sweepLines(res, "W9", "cpu_us_per_item"),
		"W9 hand-off at 100,000 items/s: CPU per item by receivers", "receivers waiting (log scale)", "CPU µs per item", true)
}

// keysChart draws CPU per request against keys, one line per system.
func keysChart(dir, name string, lines map[string]plotter.XYs, title, xLabel string) error {
	return cpuChart(dir, name, lines, title, xLabel, "CPU µs per request", false)
}

// cpuChart draws CPU per unit of work against a variant on a log scale, one
// line per system, its legend at the bottom right or (topLeft) the top left.
func cpuChart(dir, name string, lines map[string]plotter.XYs, title, xLabel, yLabel string, topLeft bool) error {
	if len(lines) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -2*vg.Inch, vg.Inch/4 // bottom right, inside the axes
	if topLeft {
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Inch, -vg.Inch/4
	}
	p.Add(plotter.NewGrid())
	if err := addLinePoints(p, lines); err != nil {
		return err
	}
	p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
	p.Y.Min = 0
	return p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, name))
}

func chartW8(dir string, res map[key][]result) error {
	return logLogSweep(dir, "w8_add_complete.png", sweepLines(res, "W8", "ns_per_op"), sweepChart{
		title:  "W8: ns per add+complete by goroutines (GOMAXPROCS=" + fmt.Sprint(runtime.GOMAXPROCS(0)) + ")",
		x:      "goroutines (log scale)",
		y:      "ns per add+complete, wall, all goroutines (log scale)",
		xPad:   1.5,
		yAbove: 4,
	})
}

func chartW7(dir string, res map[key][]result) error {
	return logLogSweep(dir, "w7_scaling.png", sweepLines(res, "W7", "mops_per_s"), sweepChart{
		title:  "W7: throughput by goroutines (GOMAXPROCS=" + fmt.Sprint(runtime.GOMAXPROCS(0)) + ")",
		x:      "goroutines (log scale)",
		y:      "millions of operations per second (log scale)",
		xPad:   1.5,
		yAbove: 4,
	})
}

// sweepChart says how logLogSweep draws a sweep: its labels, whether the
// legend sits left, and how far to pad the axes (a factor each way on x,
// upwards on y, where the legend goes) so no line sits on an edge.
type sweepChart struct {
	title, x, y  string
	legendLeft   bool
	xPad, yAbove float64
}

// logLogSweep draws a sweep's lines on log axes, a line with points per
// system, into dir/name; it draws nothing if there are no lines.
func logLogSweep(dir, name string, lines map[string]plotter.XYs, c sweepChart) error {
	if len(lines) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.title, c.x, c.y
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, c.legendLeft
	p.Add(plotter.NewGrid())
	if err := addLinePoints(p, lines); err != nil {
		return err
	}
	p.X.Min, p.X.Max = p.X.Min/c.xPad, p.X.Max*c.xPad
	p.Y.Min, p.Y.Max = p.Y.Min/2, p.Y.Max*c.yAbove
	return p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, name))
}

func chartW5(dir string, res map[key][]result) error {
	// A log axis has no room for a zero lag.
	lines := distribution(res, "W5", lagQuantileMetric, func(ms float64) bool { return ms > 0 })
	if len(lines) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "W5: completion lag at 100,000 requests/s (event due to OnComplete)"
	p.X.Label.Text = "lag, ms (log scale)"
	p.Y.Label.Text = "% of completions at most this late"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	var args []any
	for _, s := range sortedSystems(lines) {
		args = append(args, s, lines[s])
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return err
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "w5_lag.png"))
}

func chartW2(dir string, res map[key][]result) error {
	return logLogSweep(dir, "w2_parked.png", sweepLines(res, "W2sweep", "pair_ns"), sweepChart{
		title:      "W2: schedule a timer at 30 s and stop it, with N timers parked",
		x:          "parked timers (log scale)",
		y:          "ns per schedule+stop (log scale)",
		legendLeft: true,
		xPad:       2,
		yAbove:     8,
	})
}

func chartW4(dir string, res map[key][]result) error {
	lines := distribution(res, "W4", quantileMetric, func(float64) bool { return true })
	if len(lines) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "W4: how late timers fire (delays U[10 ms, 2 s); left of 0 is early)"
	p.X.Label.Text = "lateness, ms"
	p.Y.Label.Text = "% of timers at most this late"
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	var args []any
	for _, s := range sortedSystems(lines) {
		name := s
		if last := lines[s][len(lines[s])-1].X; last > w4Zoom {
			name = fmt.Sprintf("%s (reaches %.0f ms, off the axis)", s, last)
		}
		args = append(args, name, lines[s])
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return err
	}
	p.X.Min, p.X.Max = min(p.X.Min, -1), w4Zoom
	return p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "w4_lateness.png"))
}

// distribution returns, per system, the median over runs of workload's value
// at each of latenessQuantiles (metric names them), as (value, percent) points
// in percent order, leaving out values keep rejects.
func distribution(res map[key][]result, workload string, metric func(int) string, keep func(float64) bool) map[string]plotter.XYs {
	lines := map[string]plotter.XYs{}
	for k, rs := range res {
		if k.workload != workload {
			continue
		}
		var pts plotter.XYs
		for i, q := range latenessQuantiles {
			if at := values(rs, metric(i)); len(at) > 0 && keep(median(at)) {
				pts = append(pts, plotter.XY{X: median(at), Y: 100 * q})
			}
		}
		slices.SortFunc(pts, func(a, b plotter.XY) int {
			if a.Y < b.Y {
				return -1
			}
			return 1
		})
		if len(pts) > 0 {
			lines[k.system] = pts
		}
	}
	return lines
}

// w4Zoom is the right edge of the lateness chart, in ms: wide enough for the
// timers that keep to a few ticks, so they are not squashed by a slow peer.
const w4Zoom = 12

func sortedSystems(m map[string]plotter.XYs) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}
