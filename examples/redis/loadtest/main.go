// Command loadtest measures the example against Debian's redis-server 7.0.15,
// each a child process of its own (so its CPU is its own), alternated run by
// run:
//
//   - handoff: 64 clients in BLPOP loops while producers LPUSH, one element
//     a command, at fixed rates (10,000/s and 50,000/s) and as fast as they
//     can with no more elements in flight than consumers: push-to-pop
//     latency p50, p99 and p99.9, the server's CPU per element, the rate
//     kept up, and elements lost or popped twice;
//   - benchmark: redis-benchmark -t lpush,rpop,lrange_100 -P 16 -c 50,
//     requests per second;
//   - sweep: the hand-off at rising fixed rates (-sweep), each for
//     -sweep-duration, until one is not kept up: the highest rate kept up
//     (the producers pushed at it, what was pushed and not popped when they
//     stopped is at most 100 ms of it, and push-to-pop p50 is under 10 ms,
//     as the wheel's W5sweep).
//
// Both servers run every command one at a time: redis-server on its one
// thread, the example under its lock. So the example gets one P
// (-server-procs 1, GOMAXPROCS) unless told otherwise: on a machine of two
// CPUs, a second P would only take CPU from the clients that load it, which
// redis-server leaves them.
//
// Run it from examples/redis: go run ./loadtest. It prints a table of medians
// and the example's ratios to redis-server, and writes the JSON and the
// charts given with -json and -charts. It needs redis-server and
// redis-benchmark (apt-get install redis-server redis-tools; redis-suite.sh
// installs them).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one measurement: a workload at a rate, on a system, in a run.
type sample struct {
	System   string             `json:"system"`
	Workload string             `json:"workload"`
	Rate     int                `json:"rate,omitempty"` // handoff: elements per second; 0 as fast as they can
	Run      int                `json:"run"`
	Metrics  map[string]float64 `json:"metrics"`
}

// results is what -json writes: how the samples were made, and the samples.
type results struct {
	Meta    map[string]string `json:"meta"`
	Samples []sample          `json:"samples"`
}

func main() {
	rates := flag.String("rates", "10000,50000,0", "hand-off rates, elements per second (0: as fast as they can)")
	sweep := flag.String("sweep", "60000,70000,80000,90000,100000,110000,120000,140000", "rising hand-off rates for the highest kept up (empty: none)")
	sweepDuration := flag.Duration("sweep-duration", 3*time.Second, "each run of the sweep")
	duration := flag.Duration("duration", 5*time.Second, "each hand-off run")
	runs := flag.Int("runs", 3, "runs per system (alternated); medians are reported")
	consumers := flag.Int("consumers", 64, "clients in BLPOP loops")
	producers := flag.Int("producers", 2, "producing clients")
	requests := flag.Int("bench-requests", 500_000, "redis-benchmark's -n (0: no benchmark)")
	queryBuf := flag.Bool("query-buffer", true, "run the query-buffer workload: a client filling its query buffer to the limit, the server's RSS meanwhile")
	jsonOut := flag.String("json", "", "write the samples here")
	charts := flag.String("charts", "", "draw the charts into this directory")
	from := flag.String("from", "", "report and draw from this JSON instead of measuring")
	profileDir := flag.String("profile", "", "write the example's CPU profiles into this directory")
	flag.IntVar(&serverProcs, "server-procs", 1, "the example's GOMAXPROCS (0: Go's default, one per CPU); 1, as redis-server runs its commands on one thread, leaves the other CPUs to the clients")
	timeouts := flag.String("timeouts", "0,10000", "run the timeout workload alone (0) and beside the hand-off at these rates (empty: none)")
	flag.StringVar(&baseline, "baseline", "", "also measure the example as it was at this git revision (system \"baseline\"), alternated with the others")
	check := flag.Bool("check", false, "exit 1 if any run lost an element or popped one twice (CI's smoke run)")
	flag.Parse()
	// The clients' side allocates per element; a lazier collector keeps
	// its CPU off the servers' (both servers' runs alike).
	debug.SetGCPercent(800)

	res, err := collect(*from, plan{rateFlag("rates", *rates), *duration, rateFlag("sweep", *sweep), *sweepDuration,
		*runs, *consumers, *producers, *requests, *queryBuf, timeoutRates(*timeouts)}, *profileDir)
	if err != nil {
		log.Fatal(err)
	}
	report(os.Stdout, res.Samples)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", " ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *charts != "" {
		if err := draw(*charts, res.Samples); err != nil {
			log.Fatal(err)
		}
	}
	if *check {
		for _, s := range res.Samples {
			if lost, twice := lostAndTwice(s); lost != 0 || twice != 0 {
				log.Fatalf("%s %s at %d/s run %d: %v lost, %v popped twice", s.System, s.Workload, s.Rate, s.Run, lost, twice)
			}
		}
	}
}

// collect reads the results from a JSON file, if from names one, or
// measures them: it builds both servers and runs the plan.
func collect(from string, p plan, profileDir string) (res results, err error) {
	if from != "" {
		b, err := os.ReadFile(from)
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		return res, err
	}
	dir, err := os.MkdirTemp("", "redis-loadtest")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	bins, err := build(dir)
	if err != nil {
		return res, err
	}
	res.Meta = meta()
	res.Samples, err = measure(bins, p, profileDir)
	return res, err
}

// timeoutRates parses -timeouts: rates, 0 for alone.
func timeoutRates(list string) []int {
	if list == "" {
		return nil
	}
	var rs []int
	for _, r := range strings.Split(list, ",") {
		n, err := strconv.Atoi(r)
		if err != nil || n < 0 {
			log.Fatalf("-timeouts %q: %q is not a rate", list, r)
		}
		rs = append(rs, n)
	}
	return rs
}

// rateFlag parses a comma-separated list of rates.
func rateFlag(name, list string) []int {
	var rs []int
	for _, r := range strings.Split(list, ",") {
		if r == "" && name == "sweep" {
			continue
		}
		n, err := strconv.Atoi(r)
		if err != nil || n < 0 || name == "sweep" && n == 0 {
			log.Fatalf("-%s %q: %q is not a rate", name, list, r)
		}
		rs = append(rs, n)
	}
	return rs
}

// meta says where the samples come from.
func meta() map[string]string {
	m := map[string]string{"command": "go -C examples/redis run ./loadtest " + strings.Join(os.Args[1:], " "), "date": time.Now().UTC().Format("2006-01-02")}
	if info, ok := debug.ReadBuildInfo(); ok {
		m["go"] = info.GoVersion
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				m["commit"] = s.Value[:min(7, len(s.Value))]
			}
		}
	}
	if m["commit"] == "" { // go run stamps no revision: ask git
		if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
			m["commit"] = strings.TrimSpace(string(out))
			if st, err := exec.Command("git", "status", "--porcelain", "--", ".").Output(); err == nil && len(st) > 0 {
				m["commit"] += " (examples/redis modified)"
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n := strings.Count(string(b), "\nprocessor")
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m["machine"] = fmt.Sprintf("%d CPUs, %s", n+1, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":")))
				break
			}
		}
	}
	return m
}

// plan is what measure runs.
type plan struct {
	rates     []int
	duration  time.Duration
	sweep     []int
	sweepDur  time.Duration
	runs      int
	consumers int
	producers int
	requests  int
	queryBuf  bool
	timeouts  []int // the timeout workload's hand-off rates, 0 for alone
}

func measure(bins map[string][]string, p plan, profileDir string) ([]sample, error) {
	m := &measurer{bins: bins, p: p, profileDir: profileDir}
	for run := 1; run <= p.runs; run++ {
		for _, system := range systems {
			if err := m.system(system, run); err != nil {
				return nil, err
			}
		}
	}
	return m.out, nil
}

// measurer runs a plan's workloads and gathers their samples.
type measurer struct {
	bins       map[string][]string
	p          plan
	profileDir string
	out        []sample
}

// system runs each workload of the plan once on system.
func (m *measurer) system(system string, run int) error {
	p := m.p
	for _, rate := range p.rates {
		if _, err := m.handoff(system, run, rate, p.duration, "handoff"); err != nil {
			return err
		}
	}
	for _, rate := range p.sweep {
		got, err := m.handoff(system, run, rate, p.sweepDur, "sweep")
		if err != nil {
			return err
		}
		if got["keeps_up"] == 0 {
			break
		}
	}
	for _, rate := range p.timeouts {
		if err := m.once(system, run, "timeouts", rate, func(s *server) (map[string]float64, error) {
			return runTimeouts(s, rate, p.duration, p.consumers, p.producers)
		}); err != nil {
			return err
		}
	}
	if p.requests > 0 {
		if err := m.once(system, run, "benchmark", 0, func(s *server) (map[string]float64, error) {
			return runBenchmark(s, p.requests)
		}); err != nil {
			return err
		}
	}
	if p.queryBuf {
		return m.once(system, run, "querybuf", 0, runQueryBuffer)
	}
	return nil
}

// handoff runs the hand-off at rate for d on a server of its own.
func (m *measurer) handoff(system string, run, rate int, d time.Duration, workload string) (map[string]float64, error) {
	got, err := once(system, m.bins[system], profile(m.profileDir, system, workload+"-"+strconv.Itoa(rate), run), func(s *server) (map[string]float64, error) {
		return runHandoff(s, handoffConfig{rate: rate, duration: d, consumers: m.p.consumers, producers: m.p.producers})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s at %d/s: %w", system, workload, rate, err)
	}
	log.Printf("run %d %-12s %-7s %6d/s: p50 %.3f p99 %.3f ms, CPU %.2f us/element, popped %.0f/s, kept up %v, lost %v, twice %v",
		run, system, workload, rate, got["lat_p50_ms"], got["lat_p99_ms"], got["cpu_us_per_element"], got["popped_per_s"], got["keeps_up"], got["lost"], got["twice"])
	m.out = append(m.out, sample{system, workload, rate, run, got})
	return got, nil
}

// once runs another workload on a server of its own and logs its metrics.
func (m *measurer) once(system string, run int, workload string, rate int, f func(*server) (map[string]float64, error)) error {
	name := workload
	if rate > 0 {
		name += "-" + strconv.Itoa(rate)
	}
	got, err := once(system, m.bins[system], profile(m.profileDir, system, name, run), f)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", system, name, err)
	}
	log.Printf("run %d %-12s %s: %v", run, system, name, got)
	m.out = append(m.out, sample{system, workload, rate, run, got})
	return nil
}

// highestKeptUp is, per run of system, the highest fixed rate kept up,
// the rates taken in rising order until the first not kept up (the
// hand-off's and the sweep's), and the median over the runs.
func highestKeptUp(samples []sample, system string) (median float64, perRun []float64) {
	byRun := map[int][]sample{}
	for _, s := range samples {
		if s.System == system && s.Rate > 0 && (s.Workload == "handoff" || s.Workload == "sweep") {
			byRun[s.Run] = append(byRun[s.Run], s)
		}
	}
	for _, ss := range byRun {
		slices.SortFunc(ss, func(a, b sample) int { return a.Rate - b.Rate })
		best := 0.0
		for _, s := range ss {
			if s.Metrics["keeps_up"] == 0 {
				break
			}
			best = float64(s.Rate)
		}
		perRun = append(perRun, best)
	}
	if len(perRun) == 0 {
		return 0, nil
	}
	slices.Sort(perRun)
	return perRun[len(perRun)/2], perRun
}

// once runs one workload on a server of its own.
func once(system string, argv []string, profile string, run func(*server) (map[string]float64, error)) (map[string]float64, error) {
	s, err := start(system, argv, profile)
	if err != nil {
		return nil, err
	}
	m, err := run(s)
	if serr := s.stop(); err == nil && system != "redis-server" {
		err = serr // redis-server's exit status on SIGTERM is its own business
	}
	return m, err
}

func profile(dir, system, workload string, run int) string {
	if dir == "" || system != "purgatory" {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("%s-run%d.pprof", workload, run))
}

// medians are the median of each metric over the runs of a system's
// workload at a rate.
func medians(samples []sample, system, workload string, rate int) map[string]float64 {
	all := map[string][]float64{}
	for _, s := range samples {
		if s.System == system && s.Workload == workload && s.Rate == rate {
			for k, v := range s.Metrics {
				all[k] = append(all[k], v)
			}
		}
	}
	m := map[string]float64{}
	for k, vs := range all {
		slices.Sort(vs)
		m[k] = vs[len(vs)/2]
	}
	return m
}

// lostAndTwice is what a sample lost and popped twice: its hand-off's, run
// alone or beside the timeout workload.
func lostAndTwice(s sample) (lost, twice float64) {
	return s.Metrics["lost"] + s.Metrics["handoff_lost"], s.Metrics["twice"] + s.Metrics["handoff_twice"]
}

// ratesOf is the rates workload was measured at, ascending.
func ratesOf(samples []sample, workload string) []int {
	var rs []int
	for _, s := range samples {
		if s.Workload == workload && !slices.Contains(rs, s.Rate) {
			rs = append(rs, s.Rate)
		}
	}
	slices.Sort(rs)
	return rs
}

// rateList is the hand-off rates measured, fixed rates first, ascending,
// then 0 (as fast as they can).
func rateList(samples []sample) []int {
	rs := ratesOf(samples, "handoff")
	if len(rs) > 0 && rs[0] == 0 {
		rs = append(rs[1:], 0)
	}
	return rs
}

func rateName(rate int) string {
	if rate == 0 {
		return "as fast as they can"
	}
	return strconv.Itoa(rate) + "/s"
}

// report prints the medians of each system and the example's ratio to
// redis-server (and to the baseline, if one was measured).
func report(w io.Writer, samples []sample) {
	t := &table{w: w, samples: samples, base: slices.ContainsFunc(samples, func(s sample) bool { return s.System == "baseline" })}
	if t.base {
		fmt.Fprintln(w, "(medians of runs)                 examples/redis   redis-server   ratio       baseline   ratio")
	} else {
		fmt.Fprintln(w, "(medians of runs)                 examples/redis   redis-server   ratio")
	}
	fmt.Fprintln(w, "hand-off")
	for _, rate := range rateList(samples) {
		if rate == 0 {
			t.section("handoff", rate, " %s (at most one element in flight per consumer)", rateName(rate))
		} else {
			t.section("handoff", rate, " %s", rateName(rate))
		}
		t.row("push-to-pop p50 (ms)", "lat_p50_ms", "%.3f")
		t.row("push-to-pop p99 (ms)", "lat_p99_ms", "%.3f")
		t.row("push-to-pop p99.9 (ms)", "lat_p999_ms", "%.3f")
		t.row("server CPU per element (us)", "cpu_us_per_element", "%.2f")
		t.row("popped per second", "popped_per_s", "%.0f")
		t.row("kept up (runs: median)", "keeps_up", "%.0f")
		t.row("lost (median)", "lost", "%.0f")
		t.row("popped twice (median)", "twice", "%.0f")
	}
	reportTimeouts(t)
	if hp, _ := highestKeptUp(samples, "purgatory"); hp > 0 && slices.ContainsFunc(samples, func(s sample) bool { return s.Workload == "sweep" }) {
		hr, _ := highestKeptUp(samples, "redis-server")
		hb, _ := highestKeptUp(samples, "baseline")
		fmt.Fprintln(w, "sweep (fixed rates, rising, until one is not kept up)")
		t.p, t.r, t.c = map[string]float64{"kept": hp}, map[string]float64{"kept": hr}, map[string]float64{"kept": hb}
		t.row("highest rate kept up (/s)", "kept", "%.0f")
	}
	if t.section("benchmark", 0, "redis-benchmark -P 16 -c 50 (requests per second)") {
		for _, name := range []string{"lpush", "rpop", "lrange_100"} {
			t.row(name, name+"_rps", "%.0f")
		}
		t.row("server CPU per request (us)", "cpu_us_per_request", "%.3f")
	}
	reportQueryBuffer(t)
	var lost, twice float64
	for _, s := range samples {
		l, t := lostAndTwice(s)
		lost, twice = lost+l, twice+t
	}
	fmt.Fprintf(w, "all runs: %.0f lost, %.0f popped twice\n", lost, twice)
}

func reportTimeouts(t *table) {
	for _, rate := range ratesOf(t.samples, "timeouts") {
		if rate == 0 {
			t.section("timeouts", rate, "BLPOP timeouts (%d clients, %d ms), alone", timeoutClients, timeoutMs)
		} else {
			t.section("timeouts", rate, "BLPOP timeouts (%d clients, %d ms), beside the hand-off at %d/s", timeoutClients, timeoutMs, rate)
		}
		t.row("timeout lateness p50 (ms)", "late_p50_ms", "%.3f")
		t.row("timeout lateness p99 (ms)", "late_p99_ms", "%.3f")
		t.row("timeout lateness p99.9 (ms)", "late_p999_ms", "%.3f")
		if rate > 0 {
			t.row("hand-off push-to-pop p99 (ms)", "handoff_lat_p99_ms", "%.3f")
		}
	}
}

func reportQueryBuffer(t *table) {
	if !t.section("querybuf", 0, "a client filling its query buffer (three 512 MB bulks; the limit is 1 GiB)") {
		return
	}
	t.row("RSS before (MB)", "base_rss_mb", "%.0f")
	t.row("peak RSS (MB)", "peak_rss_mb", "%.0f")
	t.row("sent before the server closed (MB)", "sent_mb", "%.0f")
	t.row("closed by the server (runs: median)", "closed", "%.0f")
	t.row("another client's PINGs answered", "pings_answered", "%.0f")
	t.row("another client's PINGs failed", "ping_failures", "%.0f")
	t.row("its slowest PING (ms)", "ping_max_ms", "%.1f")
}

// table prints report's rows: a section's medians for each system.
type table struct {
	w       io.Writer
	samples []sample
	base    bool               // a baseline was measured: its column too
	p, r, c map[string]float64 // the section's medians: the example's, redis-server's, the baseline's
}

// section prints a section's title and takes its medians; it reports
// whether the example has any.
func (t *table) section(workload string, rate int, title string, args ...any) bool {
	t.p, t.r = medians(t.samples, "purgatory", workload, rate), medians(t.samples, "redis-server", workload, rate)
	t.c = medians(t.samples, "baseline", workload, rate)
	if len(t.p) == 0 {
		return false
	}
	fmt.Fprintf(t.w, title+"\n", args...)
	return true
}

// row prints metric's medians and the example's ratios.
func (t *table) row(name, metric, format string) {
	ratio := func(x, y float64) string {
		if y == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", x/y)
	}
	a, b := t.p[metric], t.r[metric]
	fmt.Fprintf(t.w, "  %-31s %14s %14s %7s", name, fmt.Sprintf(format, a), fmt.Sprintf(format, b), ratio(a, b))
	if t.base {
		v := t.c[metric]
		fmt.Fprintf(t.w, " %14s %7s", fmt.Sprintf(format, v), ratio(a, v))
	}
	fmt.Fprintln(t.w)
}
