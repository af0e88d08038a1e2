// Command loadtest measures the example broker against franz-go's kfake, the
// reference in-memory Kafka server in Go, through the same real clients
// (franz-go's kgo), each server in a child process of its own, alternated run
// by run:
//
//   - produce: records of 100 bytes at fixed rates with acks=all (R = 3 for
//     the example; kfake acknowledges without replicating) to 8 partitions
//     while a consumer long-polls them: produce latency and produce-to-consume
//     latency (p50, p99), and the broker's CPU per 1,000 records;
//   - idle: 1,000 fetches parked on idle partitions, each asking again at its
//     MaxWait: the broker's CPU per second.
//
// Run it from examples/kafka: go run ./loadtest. It prints a table of medians
// and writes the JSON and the charts given with -json and -charts.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sample is one measurement: a workload at a rate, on a system, in a run.
type sample struct {
	System   string             `json:"system"`
	Workload string             `json:"workload"`
	Rate     int                `json:"rate,omitempty"`
	Run      int                `json:"run"`
	Metrics  map[string]float64 `json:"metrics"`
}

func main() {
	rates := flag.String("rates", "1000,5000,10000", "produce rates, records per second")
	duration := flag.Duration("duration", 10*time.Second, "each produce run and each idle window")
	runs := flag.Int("runs", 3, "runs per system (alternated); medians are reported")
	idle := flag.Int("idle-fetches", 1000, "fetches parked on idle partitions")
	maxWait := flag.Duration("idle-max-wait", 5*time.Second, "MaxWait of the idle fetches")
	replicas := flag.Int("replicas", 3, "the example broker's replicas per partition")
	flag.IntVar(&wl.wakeFetches, "wake-fetches", 2000, "consumers parked on one partition that one produce wakes (0: no wake-all workload)")
	flag.IntVar(&wl.wakeRounds, "wake-rounds", 5, "produces per wake-all run; medians are reported")
	flag.IntVar(&wl.groupMembers, "group-members", 3, "consumers in the group workload's group (0: no group workload)")
	flag.IntVar(&wl.groupRate, "group-rate", 1000, "records per second produced in the group workload")
	jsonOut := flag.String("json", "", "write the samples here")
	charts := flag.String("charts", "", "draw the charts into this directory")
	from := flag.String("from", "", "report and draw from this JSON instead of measuring")
	flag.StringVar(&profileDir, "profile", "", "write the example broker's CPU profiles into this directory")
	selfProfile := flag.String("self-profile", "", "write this process's own CPU profile (the clients' side) to this file")
	clientGOGC := flag.Int("client-gogc", 800, "this process's own GOGC (the clients' side; the brokers keep their default): see quietClients")
	flag.Parse()
	quietClients(*clientGOGC)
	if *selfProfile != "" {
		stop, err := profileSelf(*selfProfile)
		if err != nil {
			log.Fatal(err)
		}
		defer stop()
	}

	var samples []sample
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err == nil {
			err = json.Unmarshal(b, &samples)
		}
		if err != nil {
			log.Fatal(err)
		}
	} else {
		var rs []int
		for _, r := range strings.Split(*rates, ",") {
			n, err := strconv.Atoi(r)
			if err != nil || n < 1 {
				log.Fatalf("-rates %q: %v", *rates, r)
			}
			rs = append(rs, n)
		}
		dir, err := os.MkdirTemp("", "kafka-loadtest")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		bins, err := build(dir)
		if err != nil {
			log.Fatal(err)
		}
		samples, err = measure(bins, rs, *duration, *runs, *idle, *maxWait, *replicas, wl)
		if err != nil {
			log.Fatal(err)
		}
	}
	report(os.Stdout, samples)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(samples, "", " ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *charts != "" {
		if err := draw(*charts, samples); err != nil {
			log.Fatal(err)
		}
	}
}

// workloads are the sizes of the wake-all and group workloads.
type workloads struct {
	wakeFetches, wakeRounds int
	groupMembers, groupRate int
}

var wl workloads

func measure(bins map[string]string, rates []int, d time.Duration, runs, idle int, maxWait time.Duration, replicas int, wl workloads) ([]sample, error) {
	var out []sample
	for run := 1; run <= runs; run++ {
		for _, system := range systems {
			s, err := start(bins[system], "bench:8", replicasOf(system, replicas), profile(system, "produce", run))
			if err != nil {
				return nil, err
			}
			for _, rate := range rates {
				r, err := runProduce(s, rate, d)
				if err != nil {
					s.stop()
					return nil, fmt.Errorf("%s: %w", system, err)
				}
				log.Printf("run %d %-9s produce %6d/s: %v", run, system, rate, r.Metrics)
				out = append(out, sample{system, "produce", rate, run, r.Metrics})
			}
			if err := s.stop(); err != nil {
				return nil, err
			}

			s, err = start(bins[system], "idle:"+strconv.Itoa(idle), replicasOf(system, replicas), profile(system, "idle", run))
			if err != nil {
				return nil, err
			}
			m, err := runIdle(s, idle, idle, maxWait, d)
			if err != nil {
				s.stop()
				return nil, fmt.Errorf("%s: %w", system, err)
			}
			log.Printf("run %d %-9s idle: %v", run, system, m)
			out = append(out, sample{system, "idle", 0, run, m})
			if err := s.stop(); err != nil {
				return nil, err
			}
			if wl.wakeFetches > 0 {
				if m, err = once(bins[system], "wake:1", replicasOf(system, replicas), profile(system, "wake", run), func(s *server) (map[string]float64, error) {
					return runWake(s, wl.wakeFetches, wl.wakeRounds)
				}); err != nil {
					return nil, fmt.Errorf("%s: wake-all: %w", system, err)
				}
				log.Printf("run %d %-9s wake-all: %v", run, system, m)
				out = append(out, sample{system, "wake", 0, run, m})
			}
			if wl.groupMembers > 0 {
				if m, err = once(bins[system], "grp:8", replicasOf(system, replicas), profile(system, "group", run), func(s *server) (map[string]float64, error) {
					return runGroup(s, wl.groupMembers, wl.groupRate, d)
				}); err != nil {
					return nil, fmt.Errorf("%s: group: %w", system, err)
				}
				log.Printf("run %d %-9s group: %v", run, system, m)
				out = append(out, sample{system, "group", 0, run, m})
			}
		}
	}
	return out, nil
}

// once runs one workload on a server of its own.
func once(bin, topics string, replicas int, profile string, run func(*server) (map[string]float64, error)) (map[string]float64, error) {
	s, err := start(bin, topics, replicas, profile)
	if err != nil {
		return nil, err
	}
	m, err := run(s)
	if serr := s.stop(); err == nil {
		err = serr
	}
	return m, err
}

// systems are the servers measured: the example broker with R replicas
// (Kafka's own setting for acks=all to mean anything), the same with one, as
// kfake runs (it acknowledges acks=all without replicating), and kfake.
var systems = []string{"purgatory", "purgatory-r1", "kfake"}

func replicasOf(system string, replicas int) int {
	if system == "purgatory-r1" {
		return 1
	}
	return replicas
}

var profileDir string

func profile(system, workload string, run int) string {
	if profileDir == "" || system == "kfake" {
		return ""
	}
	return filepath.Join(profileDir, fmt.Sprintf("%s-%s-%d.pprof", system, workload, run))
}

// medians returns the median of each metric over the runs of one system,
// workload and rate.
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

func rateList(samples []sample) []int {
	var rs []int
	for _, s := range samples {
		if s.Workload == "produce" && !slices.Contains(rs, s.Rate) {
			rs = append(rs, s.Rate)
		}
	}
	sort.Ints(rs)
	return rs
}

func report(w *os.File, samples []sample) {
	runs := 0
	for _, s := range samples {
		runs = max(runs, s.Run)
	}
	fmt.Fprintf(w, "\nmedians of %d runs; ratios to kfake, measured in the same run\n\n", runs)
	fmt.Fprintln(w, "| workload | metric | purgatory (R=3) | purgatory (R=1) | kfake | R=3 / kfake | R=1 / kfake |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	row := func(label, workload string, rate int, m string) {
		p := medians(samples, "purgatory", workload, rate)[m]
		p1 := medians(samples, "purgatory-r1", workload, rate)[m]
		k := medians(samples, "kfake", workload, rate)[m]
		fmt.Fprintf(w, "| %s | %s | %.3g | %.3g | %.3g | %.2f× | %.2f× |\n", label, m, p, p1, k, p/k, p1/k)
	}
	for _, rate := range rateList(samples) {
		for _, m := range []string{"produce_p50_ms", "produce_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "cpu_ms_per_1000_records"} {
			row(fmt.Sprintf("produce %d/s", rate), "produce", rate, m)
		}
	}
	row("idle", "idle", 0, "idle_cpu_percent_of_a_core")
	row("idle", "idle", 0, "idle_fetches_answered")
	for _, m := range []string{"wake_median_answer_ms", "wake_last_answer_ms"} {
		if len(medians(samples, "kfake", "wake", 0)) > 0 {
			row("wake-all", "wake", 0, m)
		}
	}
	for _, m := range []string{"group_join_ms", "group_e2e_p50_ms", "group_e2e_p99_ms"} {
		if len(medians(samples, "kfake", "group", 0)) > 0 {
			row("group", "group", 0, m)
		}
	}
}

// quietClients sets this process's GOGC. The clients allocate about 3.4 KB
// a record (kgo's producer and consumer), which at the default of 100 and a
// live heap of 3 MB made the collector run 6 to 8 times a second, and each
// collection's mark workers took the machine's cores from the clients and
// from the broker under test alike: the load test's own collections were in
// both servers' produce-to-consume p99. At 800 it collects about once in 2 s
// (measured at 5,000 records/s). The brokers are child processes and keep
// their own defaults.
func quietClients(gogc int) { debug.SetGCPercent(gogc) }

// profileSelf starts a CPU profile of this process, the clients' side of every
// workload, into path; the func it returns stops and writes it.
func profileSelf(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
