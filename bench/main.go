// Command bench runs the workloads of DESIGN.md (W1–W5) against this library
// and its peers, each (system, workload, run) in a fresh process, systems
// alternating, and reports medians. See README.md beside this file.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		workloads = flag.String("workload", "all", "comma-separated workloads: W1,W2,W2p,W3,W4,W5,W5pair, the sweeps W2sweep, W5sweep, W5keys and W5over, W6, W6sweep, W7, W8, W8ledger, W8pair, W9, W9pair, W9sweep, W9race, W10, W10acq, W11, soak, or all (all but soak)")
		systems   = flag.String("system", "all", "comma-separated systems: "+strings.Join(timerSystems, ",")+" for W1–W4; "+strings.Join(purgatorySystems, ",")+" for W5; "+strings.Join(levelSystems, ",")+" for W6; "+strings.Join(scalingSystems, ",")+" for W7; "+strings.Join(w8Systems, ",")+" for W8; "+strings.Join(w9Systems, ",")+" for W9; "+strings.Join(w10Systems, ",")+" for W10; "+strings.Join(w11Systems, ",")+" for W11; or all")
		runs      = flag.Int("runs", 3, "processes per (system, workload); medians are reported")
		quick     = flag.Bool("quick", false, "a hundredth of every size: a seconds-long smoke run")
		jsonOut   = flag.String("json", "", "write one JSON object per (system, workload, metric) to this file")
		results   = flag.String("results", "", "write the Markdown report to this file (default RESULTS.md for a full run or -from)")
		charts    = flag.String("charts", "", "write the charts to this directory (default charts for a full run or -from)")
		duration  = flag.Duration("duration", 0, "soak: how long to run (default 10m); W5: how long requests arrive")
		from      = flag.String("from", "", "run nothing: rebuild the report and charts from a -json file of an earlier run")
		merge     = flag.String("merge", "", "a partial run: replace its workloads in this -json file of an earlier full run, and rewrite that file, RESULTS.md and the charts")
		figures   = flag.String("figures", "", "run nothing: check (or write) the figures of -docs against results.json (or -from); see figures.go")
		docs      = flag.String("docs", "../README.md,../docs/*.md", "with -figures: the Markdown files, comma-separated globs")
		strict    = flag.String("strict", "../docs/benchmarks.md", "with -figures: the files of -docs in which every number with a unit is a figure")

		profile = flag.String("cpuprofile", "", "with -child: write a CPU profile of the workload to this file")
		child   = flag.Bool("child", false, "internal: run one workload in this process and print its result")
		parked  = flag.Int("parked", 0, "internal: timers parked for W2/W3")
		rate    = flag.Int("rate", 0, "internal: W5 requests per second")
		keys    = flag.Int("keys", 0, "internal: W5 keys")
		open    = flag.Bool("open", false, "internal: W5 with arrivals in an open loop (W5over)")
		gs      = flag.Int("goroutines", 0, "internal: W7, W8 and W8pair goroutines")
		recv    = flag.Int("receivers", 0, "internal: W9 receivers")
		race    = flag.Bool("race", false, "internal: W9race")
		shape   = flag.Int("shape", 0, "internal: W11's shape, 0 to 2 (W-A, W-B, W-C)")

		leakBytes      = flag.Int("soak-leak-bytes", 0, "soak: keep this many bytes per request in the bench itself, a leak the soak must catch")
		leakGoroutines = flag.Int("soak-leak-goroutines", 0, "soak: start this many goroutines a minute that never end, a leak the soak must catch")
	)
	flag.Parse()
	p := params{quick: *quick, parked: *parked, rate: *rate, keys: *keys, duration: *duration, open: *open, goroutines: *gs, receivers: *recv, race: *race, shape: *shape, leakBytes: *leakBytes, leakGoroutines: *leakGoroutines}
	if *child {
		if *profile != "" {
			f, err := os.Create(*profile)
			if err != nil {
				fail(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fail(err)
			}
			defer pprof.StopCPUProfile()
		}
		if err := runChild(*workloads, *systems, p); err != nil {
			pprof.StopCPUProfile()
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *figures != "" {
		if err := runFigures(*figures, cmp(*from, "results.json"), *docs, *strict); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *runs < 1 {
		fail(fmt.Errorf("-runs must be at least 1"))
	}
	// Only a full run, a rebuild from one, or a partial run merged into one
	// replaces the committed report and charts by default; a partial run
	// prints its tables and leaves them.
	if !*quick && (*workloads == "all" || *from != "" || *merge != "") {
		*results = cmp(*results, "RESULTS.md")
		*charts = cmp(*charts, "charts")
	}
	res, ms, err := gather(*from, *merge, *workloads, *systems, *runs, p)
	if err != nil {
		fail(err)
	}
	if *merge != "" {
		*jsonOut = *merge
	}
	if err := report(res, ms, p, *jsonOut, *results, *charts); err != nil {
		fail(err)
	}
}

// gather runs the plan (or loads an earlier run, -from), and merges it into
// an earlier run if asked (-merge).
func gather(from, merge, workloads, systems string, runs int, p params) (map[key][]result, metas, error) {
	if from != "" {
		return load(from)
	}
	plan, err := makePlan(workloads, systems, runs, p)
	if err != nil {
		return nil, nil, err
	}
	res, err := execute(plan, p)
	if err != nil || merge == "" {
		return res, metas{newMeta()}, err
	}
	old, ms, err := load(merge)
	if err != nil {
		return nil, nil, err
	}
	m := newMeta()
	for _, j := range plan {
		if !slices.Contains(m.Workloads, j.workload) {
			m.Workloads = append(m.Workloads, j.workload)
		}
	}
	maps.DeleteFunc(old, func(k key, _ []result) bool { return slices.Contains(m.Workloads, k.workload) })
	maps.Copy(old, res)
	return old, ms.merged(m), nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(2)
}

func runChild(workload, system string, p params) error {
	var r result
	var err error
	switch workload {
	case "W5":
		r, err = runPurgatoryWorkload(system, p)
	case "W6":
		r, err = runLevelWorkload(system, p)
	case "W7":
		r, err = w7(system, p.goroutines, p)
	case "W8":
		r, err = w8(system, p.goroutines, p)
	case "W8ledger":
		r, err = ledger(system, p)
	case "W8pair":
		r, err = w8pair(system, p)
	case "W5pair":
		r, err = w5pair(system, p)
	case "W9":
		r, err = w9(system, p)
	case "W9pair":
		r, err = w9pair(system, p)
	case "W10":
		r, err = w10(system, p)
	case "W11":
		r, err = w11(system, p)
	case "soak":
		r, err = soak(p)
	default:
		r, err = runTimerWorkload(workload, system, p)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// job is one child process to run.
type job struct {
	workload, system string
	run              int
	variant          int // parked timers for W2sweep, requests/s for W5sweep, W5over, W6sweep and W9sweep, keys for W5keys, W5pair and W6, goroutines for W7, W8 and W8pair, receivers for W9 and W9pair
}

func (j job) args(p params) []string {
	w := j.workload
	a := []string{"-child", "-system", j.system}
	switch w {
	case "W2sweep":
		w = "W2"
		a = append(a, "-parked", strconv.Itoa(j.variant))
	case "W5sweep", "W5over":
		w = "W5"
		a = append(a, "-rate", strconv.Itoa(j.variant), "-duration", sweepLength(p).String())
		if j.workload == "W5over" {
			a = append(a, "-open")
		}
	case "W5keys":
		w = "W5"
		a = append(a, "-keys", strconv.Itoa(j.variant), "-duration", sweepLength(p).String())
	case "W6", "W5pair":
		a = append(a, "-keys", strconv.Itoa(j.variant))
	case "W6sweep":
		w = "W6"
		a = append(a, "-rate", strconv.Itoa(j.variant), "-duration", sweepLength(p).String())
	case "W7", "W8", "W8pair":
		a = append(a, "-goroutines", strconv.Itoa(j.variant))
	case "W9", "W9pair":
		a = append(a, "-receivers", strconv.Itoa(j.variant))
	case "W9sweep":
		w = "W9"
		a = append(a, "-receivers", strconv.Itoa(w9SweepReceivers), "-rate", strconv.Itoa(j.variant), "-duration", sweepLength(p).String())
	case "W9race":
		w = "W9"
		a = append(a, "-race")
	case "W10acq":
		w = "W10"
		a = append(a, "-goroutines", strconv.Itoa(j.variant))
	case "W11":
		a = append(a, "-shape", strconv.Itoa(j.variant))
	}
	if (w == "W5" && j.workload == "W5" || j.workload == "W6" || j.workload == "W9" || w == "soak") && p.duration > 0 {
		a = append(a, "-duration", p.duration.String())
	}
	if w == "soak" {
		if p.rate > 0 {
			a = append(a, "-rate", strconv.Itoa(p.rate))
		}
		a = append(a, "-soak-leak-bytes", strconv.Itoa(p.leakBytes), "-soak-leak-goroutines", strconv.Itoa(p.leakGoroutines))
	}
	if p.quick {
		a = append(a, "-quick")
	}
	return append(a, "-workload", w)
}

var allWorkloads = []string{"W1", "W2", "W2p", "W3", "W4", "W5", "W2sweep", "W5sweep", "W5keys", "W5pair", "W5over", "W6", "W6sweep", "W7", "W8", "W8ledger", "W8pair", "W9", "W9pair", "W9sweep", "W9race", "W10", "W10acq", "W11"}

// w10Goroutines are W10acq's: uncontended and contended.
var w10Goroutines = []int{1, 64}

// w9Receivers are W9's receiver counts.
func w9Receivers(p params) []int {
	if p.quick {
		return []int{10, 1_000}
	}
	return []int{10, 1_000, 100_000}
}

// w9SweepReceivers is W9sweep's receiver count.
const w9SweepReceivers = 1_000

// w9Rates are W9sweep's rates, items per second.
func w9Rates(p params) []int {
	if p.quick {
		return []int{10_000, 20_000}
	}
	return []int{250_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 6_000_000, 8_000_000, 10_000_000, 12_000_000, 16_000_000}
}

func sweepParked(p params) []int {
	if p.quick {
		return []int{1_000, 10_000}
	}
	return []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}
}

// sweepRates are W5sweep's rates: 25,000/s steps, so that the highest rate a
// system keeps up with is located to within one step.
func sweepRates(p params) []int {
	if p.quick {
		return []int{10_000, 20_000}
	}
	var rates []int
	for r := 75_000; r <= 400_000; r += 25_000 {
		rates = append(rates, r)
	}
	return rates
}

// sweepKeys are W5keys's key counts: 800, 80, 8 and 0.8 operations pending
// per key at 100,000 requests/s (a broker watches a key per partition).
func sweepKeys(p params) []int {
	if p.quick {
		return []int{10, 1_000}
	}
	return []int{100, 1_000, 10_000, 100_000}
}

// overloadRates are W5over's rates: about 1.5 and 2 times the highest rate
// the naive system kept up with on the CI machine (W5sweep: 225,000 to
// 250,000/s), fixed so that runs compare.
func overloadRates(p params) []int {
	if p.quick {
		return []int{30_000, 40_000}
	}
	return []int{325_000, 450_000}
}

// levelKeys are W6's key counts: 800, 80 and 8 requests waiting per key at
// 100,000 requests/s with a 1 s timeout.
func levelKeys(p params) []int {
	if p.quick {
		return []int{10, 1_000}
	}
	return []int{100, 1_000, 10_000}
}

// levelRates are W6sweep's rates.
func levelRates(p params) []int {
	if p.quick {
		return []int{10_000, 20_000}
	}
	return []int{50_000, 100_000, 150_000, 200_000, 300_000, 400_000, 500_000, 700_000}
}

func sweepLength(p params) time.Duration {
	if p.quick {
		return 300 * time.Millisecond
	}
	return 5 * time.Second
}

func split(list string, all []string) []string {
	if list == "all" {
		return all
	}
	return strings.Split(list, ",")
}

// makePlan lists the child processes: for each workload, runs rounds, each
// round every system once, the order rotating from round to round.
func makePlan(workloads, systems string, runs int, p params) ([]job, error) {
	var plan []job
	for _, w := range split(workloads, allWorkloads) {
		if w == "soak" {
			plan = append(plan, job{workload: "soak", system: "purgatory"})
			continue
		}
		if !slices.Contains(allWorkloads, w) {
			return nil, fmt.Errorf("unknown workload %q (have %v, soak)", w, allWorkloads)
		}
		known := timerSystems
		switch {
		case w == "W7":
			known = scalingSystems
		case w == "W8":
			known = w8Systems
		case w == "W8ledger":
			known = ledgerSystems
		case w == "W8pair":
			known = pairSystems
		case w == "W9pair":
			known = w9PairSystems
		case strings.HasPrefix(w, "W9"):
			known = w9Systems
		case strings.HasPrefix(w, "W10"):
			known = w10Systems
		case w == "W11":
			known = w11Systems
		case w == "W5over":
			known = overloadSystems
		case w == "W5pair":
			known = w5PairSystems
		case strings.HasPrefix(w, "W6"):
			known = levelSystems
		case strings.HasPrefix(w, "W5"):
			known = purgatorySystems
		}
		var sys []string
		for _, s := range split(systems, known) {
			switch {
			case slices.Contains(known, s), s == floorSystem && strings.HasPrefix(w, "W5"):
				sys = append(sys, s)
			case !slices.Contains(timerSystems, s) && !slices.Contains(overloadSystems, s) && !slices.Contains(scalingSystems, s) && !slices.Contains(levelSystems, s) && !slices.Contains(w8Systems, s) && !slices.Contains(w9Systems, s) && !slices.Contains(w10Systems, s) && !slices.Contains(w11Systems, s) && s != floorSystem:
				return nil, fmt.Errorf("unknown system %q", s)
			}
		}
		variants := []int{0}
		switch w {
		case "W2sweep":
			variants = sweepParked(p)
		case "W5sweep":
			variants = sweepRates(p) // see execute: a system stops at its first miss
		case "W5keys":
			variants = sweepKeys(p)
		case "W5pair":
			variants = w5PairKeys(p)
		case "W5over":
			variants = overloadRates(p)
		case "W6":
			variants = levelKeys(p)
		case "W6sweep":
			variants = levelRates(p) // as W5sweep
		case "W7", "W8":
			variants = scalingGoroutines(p)
		case "W8pair":
			variants = pairGoroutines(p)
		case "W9", "W9pair":
			variants = w9Receivers(p)
		case "W9sweep":
			variants = w9Rates(p) // as W5sweep
		case "W10acq":
			variants = w10Goroutines
		case "W11":
			variants = []int{0, 1, 2}
		}
		for _, v := range variants {
			for r := range runs {
				for i := range sys {
					plan = append(plan, job{w, sys[(i+r)%len(sys)], r, v})
				}
			}
		}
	}
	return plan, nil
}

// execute runs the plan, one child process at a time, and gathers results by
// (workload, variant, system). A W5sweep system stops after the first rate
// at which any of its runs could not keep up: the rate it keeps up with is
// the highest at which all of its runs did.
func execute(plan []job, p params) (map[key][]result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	res := map[key][]result{}
	fellBehind := map[string]bool{}
	start := time.Now()
	for i, j := range plan {
		if isSweep(j.workload) && fellBehind[j.system] {
			continue
		}
		t0 := time.Now()
		cmd := exec.Command(exe, j.args(p)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s %s %v: %w", j.workload, j.system, j.args(p), err)
		}
		fmt.Fprintf(os.Stderr, "[%d/%d %s] %s %s%s run %d: %.1fs\n", i+1, len(plan),
			time.Since(start).Round(time.Second), j.workload, j.system, variantText(j), j.run+1, time.Since(t0).Seconds())
		var r result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s %s: bad child output %q: %w", j.workload, j.system, out.String(), err)
		}
		k := key{j.workload, j.variant, j.system}
		res[k] = append(res[k], r)
		if isSweep(j.workload) && r.Metrics["keeps_up"] == 0 {
			fellBehind[j.system] = true
		}
	}
	return res, nil
}

// isSweep reports whether workload is a sweep of rates that a system leaves
// at its first miss.
func isSweep(workload string) bool {
	return workload == "W5sweep" || workload == "W6sweep" || workload == "W9sweep"
}

func variantText(j job) string {
	switch j.workload {
	case "W2sweep":
		return fmt.Sprintf(" parked=%d", j.variant)
	case "W5sweep", "W5over", "W6sweep", "W9sweep":
		return fmt.Sprintf(" rate=%d/s", j.variant)
	case "W9", "W9pair":
		return fmt.Sprintf(" receivers=%d", j.variant)
	case "W5keys", "W5pair", "W6":
		return fmt.Sprintf(" keys=%d", j.variant)
	case "W7", "W8", "W8pair", "W10acq":
		return fmt.Sprintf(" G=%d", j.variant)
	case "W11":
		return " " + w11Shapes[j.variant].name
	}
	return ""
}

type key struct {
	workload string
	variant  int
	system   string
}
