package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// values returns metric m of every run.
func values(rs []result, m string) []float64 {
	var v []float64
	for _, r := range rs {
		if x, ok := r.Metrics[m]; ok {
			v = append(v, x)
		}
	}
	return v
}

func metricNames(rs []result) []string {
	seen := map[string]bool{}
	for _, r := range rs {
		for m := range r.Metrics {
			seen[m] = true
		}
	}
	var names []string
	for m := range seen {
		names = append(names, m)
	}
	sort.Strings(names)
	return names
}

func report(res map[key][]result, ms metas, p params, jsonPath, mdPath, chartDir string) error {
	keys := make([]key, 0, len(res))
	for k := range res {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.workload != b.workload {
			return a.workload < b.workload
		}
		if a.variant != b.variant {
			return a.variant < b.variant
		}
		return a.system < b.system
	})
	if jsonPath != "" {
		if err := writeJSON(jsonPath, ms, keys, res); err != nil {
			return err
		}
	}
	md := markdown(ms, keys, res, p)
	fmt.Print(md)
	if mdPath != "" {
		if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if chartDir != "" {
		return drawCharts(chartDir, res)
	}
	return nil
}

// load rebuilds per-run results, and the run's metas, from a file written
// by writeJSON.
func load(path string) (map[key][]result, metas, error) {
	var ms metas
	f, err := os.Open(path)
	if err != nil {
		return nil, ms, err
	}
	defer f.Close()
	res := map[key][]result{}
	dec := json.NewDecoder(f)
	for dec.More() {
		var o struct {
			Meta                     *meta
			Workload, System, Metric string
			Variant                  int
			Runs                     []float64
		}
		if err := dec.Decode(&o); err != nil {
			return nil, ms, fmt.Errorf("%s: %w", path, err)
		}
		if o.Meta != nil {
			ms = append(ms, *o.Meta)
			continue
		}
		k := key{o.Workload, o.Variant, o.System}
		for len(res[k]) < len(o.Runs) {
			res[k] = append(res[k], result{Metrics: map[string]float64{}})
		}
		for i, v := range o.Runs {
			res[k][i].Metrics[o.Metric] = v
		}
	}
	return res, ms, nil
}

func writeJSON(path string, ms metas, keys []key, res map[key][]result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, m := range ms {
		if err := enc.Encode(map[string]meta{"meta": m}); err != nil {
			return err
		}
	}
	for _, k := range keys {
		for _, m := range metricNames(res[k]) {
			v := values(res[k], m)
			obj := map[string]any{"workload": k.workload, "system": k.system, "metric": m, "median": median(v), "runs": v}
			if k.variant != 0 {
				obj["variant"] = k.variant
			}
			if err := enc.Encode(obj); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// headline lists, per workload, the metrics the report shows and which of them
// get a ratio to the reference system of the same run.
var headline = map[string][]struct {
	metric, title string
	ratio         bool
}{
	"W1":  {{"schedule_ns_op", "schedule ns/op", true}, {"cpu_s", "CPU s until all fired", true}, {"peak_rss_mb", "peak RSS MB", true}, {"bytes_op", "B/op", false}, {"allocs_op", "allocs/op", false}},
	"W2":  {{"pair_ns", "ns per schedule+stop", true}, {"pair_bytes", "B/pair", false}, {"pair_allocs", "allocs/pair", false}, {"heap_bytes_parked", "live heap B per parked timer", true}},
	"W2p": {{"pair_ns", "ns per pair (wall, all goroutines)", true}, {"pair_bytes", "B/pair", false}, {"pair_allocs", "allocs/pair", false}},
	"W3":  {{"idle_cpu_s", "idle CPU s", true}, {"idle_s", "over s", false}},
	"W4":  {{"late_p50_ms", "p50 ms", false}, {"late_p99_ms", "p99 ms", true}, {"late_p999_ms", "p99.9 ms", true}, {"late_max_ms", "max ms", false}, {"early_pct", "fired early %", false}},
	"soak": {{"minutes", "minutes", false}, {"rate", "requests/s", false}, {"live_heap_mb", "live heap MB (median)", false}, {"live_heap_slope_mb_min", "live heap MB/min", false}, {"live_heap_slope_se", "± (s.e.)", false},
		{"live_heap_b_per_req", "B per request (bound 0.02)", false}, {"goroutines", "goroutines (median)", false}, {"goroutine_slope_min", "goroutines/min (bound 0.5)", false}, {"goroutine_slope_se", "± (s.e.)", false},
		{"peak_rss_mb", "peak RSS MB", false}, {"lost", "lost", false}, {"ended_twice", "ended twice", false}},
	"W9race": {{"cpu_us_per_item", "CPU µs per item", true}, {"lat_p50_ms", "push-to-receive p50 ms", false}, {"lat_p99_ms", "p99 ms", true}, {"lat_p999_ms", "p99.9 ms", false},
		{"lost", "lost", false}, {"twice", "delivered twice", false}, {"expired", "waits expired", false}, {"expired_while_queued", "expired with an item queued > 1 ms", false}},
	"W10": {{"late_p50_ms", "timeout lateness p50 ms", true}, {"late_p99_ms", "p99 ms", true}, {"late_max_ms", "max ms", false}, {"early", "returned early", false},
		{"wait_p99_ms", "acquire wait p99 ms", true}, {"cpu_us_per_pair", "CPU µs per acquire+release", true}, {"timed_out_pct", "timed out %", false},
		{"overtakes_pct", "overtakes %", false}, {"held_twice", "held twice", false}, {"lost", "lost", false}},
	"W5": {{"completed_pct", "completed % (≈40 expected)", false}, {"expired_pct", "expired %", false}, {"lost", "lost", false}, {"ended_twice", "ended twice", false}, {"cpu_s", "CPU s", true}, {"peak_rss_mb", "peak RSS MB", true}, {"lag_p50_ms", "completion lag p50 ms", false}, {"lag_p99_ms", "lag p99 ms", true}, {"lag_p999_ms", "lag p99.9 ms", true}, {"arrivals_behind_ms", "arrivals behind ms", false}, {"driver_wakeups_per_s", "driver wake-ups/s", false}},
}

var descriptions = map[string]string{
	"W1":       "schedule callbacks with delays U[1 ms, 1000 ms) from one goroutine and wait for all",
	"W2":       "park timers at 30 min, then schedule a timer at 30 s and stop it, from one goroutine",
	"W2p":      "W2 with the pairs split across GOMAXPROCS goroutines at once",
	"W3":       "park timers at 30 min, then measure process CPU while idle",
	"W4":       "timers with delays U[10 ms, 2000 ms): how late each callback ran (negative: early)",
	"W5":       "purgatory: requests on 1 of 1,000 keys with a 1 s timeout; 80 % get a completion event at U[0, 2 s)",
	"W2sweep":  "W2's ns per pair against the number of parked timers",
	"W5sweep":  "W5 at rising request rates in 25,000/s steps, 5 s each; a system stops after the first rate at which a run could not keep up (completion lag p50 under 10 ms and the completed share within 1 point of 40 %)",
	"W5keys":   "W5 at 100,000 requests/s for 5 s over 100 to 100,000 keys: 800 to 0.8 operations pending per key",
	"W7":       "scaling: G goroutines each loop one operation for 1.5 s with 100,000 timers (or operations) parked first: an add+stop pair on a timer (wheel: AfterFunc+Stop; owned: Reset+Stop of a Timer in a record of the goroutine's own; stdlib: time.AfterFunc+Stop), or an operation added to a purgatory and completed by a check of its key (on a key of the goroutine's own; -shared: on 16 keys that every goroutine shares in turn)",
	"W6":       "threshold: requests arrive at 100,000/s for 10 s, each on a key drawn from K, and wait until the key's level reaches the level at their arrival plus a need drawn from U[1, 2.5 × what a key gains per second]; timeout 1 s; 100,000 level moves/s (100 per 1 ms slot), each raising a random key's level by U[1, 1999], until 1 s after the last arrival. purgatory-level watches at levels and calls Advance per move; purgatory and naive try every watcher of the key per move; naive-heap is naive with a min-heap of targets per key. One goroutine makes the moves and calls the system for each, so a system that falls behind delays the levels too. Expected % is what an ideal system completes given the moves as made (its key reached its target within its timeout); lag counts from the due time of the move that reached a request's target",
	"soak":     "a steady purgatory load (W5's, on 1,000 keys) for a long run: after the warm-up, the live heap after a garbage collection and the goroutines are read at fixed intervals, and a least-squares line through them gives how fast each grows; the soak fails past the bounds in soak.go (bench/README.md)",
	"W8":       "add+complete, the loop a broker runs most: G goroutines each loop for 2 s adding an operation that cannot complete yet on a key of their own, with a timeout drawn from U[1 s, 10 s), then marking it ready and checking its key, which completes it; 100,000 operations parked first on 1 h timeouts under 1,000 other keys. purgatory: a new operation per request; purgatory-reused: operations from a sync.Pool, put back in Recycle; lean: the leanest hand-written version (one mutex, a map of watch lists, a time.AfterFunc per operation whose callback only marks it ended; a check ends the ready ones under the lock and compacts the list); lean-pooled: lean with a sync.Pool of operations, each Resetting one time.Timer; naive: W5's. Own allocations and bytes leave out the caller's one operation; the collector's share is of all the process's CPU (runtime/metrics), its mark assists and idle marking apart",
	"W8ledger": "W8's add+complete at G=1, reused operations against pooled lean, taken apart (issue 49's ledger): each line a loop of its own, timed in turn with the others in one process for 9 rounds of 150 ms, its median per process. A step's cost is the difference of two lines: the bookkeeping is the total less the timer. 100,000 operations are parked first on 1 h timeouts under 1,000 other keys, as in W8",
	"W5pair":   "W5 at 100,000 requests/s over 1,000, 10,000 and 100,000 keys, the purgatory against naive in one process: 6 pairs of runs of 3 s of arrivals each (each system first in every other pair, a new system per run, a collection before it), so that a phase of the machine's speed moves both runs of a pair; a pair's ratio is ours over naive's CPU per request, and the table gives the median pair's (per process, then the median over processes). A run's first second fills the purgatory, so its lists are shorter on average than in W5's steady state",
	"W8pair":   "W8 at G=1 and G=2, purgatory-reused against lean-pooled in one process, timed in 24 alternate window pairs of 250 ms (each side first in every other pair; in a window, G goroutines each run that side's loop on a key of their own), so that a phase of the machine's speed moves both sides of a pair: each window's add+completes per CPU-second of the process, a pair's ratio ours over lean's. Also the median ratio over the pairs where lean ran above its median speed (a fast phase) and over the rest. 100,000 operations are parked first on 1 h timeouts under 1,000 other keys for each system, as in W8",
	"W6sweep":  "W6 over 1,000 keys at rising request rates, 5 s each; a system stops after the first rate at which a run could not keep up (lag p50 under 10 ms and the completed share within 1 point of the expected share)",
	"W9":       "hand-off: one key; W receivers, each a goroutine that waits for an item with a 30 s timeout (a timer armed and stopped per wait), takes one, and waits again at once; a producer pushes 100,000 items/s for 10 s. purgatory: the receivers' TryComplete takes the item, operations reused (Recycler), HandOff after each push; purgatory-check: the same with CheckAndComplete, which tries every receiver per push (2 s of pushing at 100,000 receivers); lean-pooled: one mutex, a FIFO list of waiters each with a channel and one reused time.Timer; lean: the same with a new waiter and a time.AfterFunc per wait. CPU is the process's per item delivered; push-to-receive counts from when an item was due to be pushed to when its receiver had it; lost is what was neither delivered nor left queued; an expiry counts against the system when an item had been queued for over 1 ms at the wait's deadline",
	"W10":      "a pool of 10 connections under stress (issue 51): 64 goroutines acquire with timeouts of U[50 µs, 500 µs], hold for U[0, 100 µs] and release, for 10 s. recipe: docs/api.md's pool as it prints it (w10recipe.go), parked (TryCompleteElsePark under the pool's mutex, Parked.Wait after it; Release pushes and hands off under it), its operations in a sync.Pool, put back once Wait returns; purgatory: the same pool with its operations reused through Recycle, the connection copied out in OnComplete; purgatory-wheel: the same with its timeouts on the wheel (TryCompleteElseWatch, OnComplete answering on a channel), as before the parked form; channel: a buffered channel of the connections, a select with the goroutine's own time.Timer; semaphore: golang.org/x/sync/semaphore's Weighted with a context.WithTimeout per wait. Lateness is how long after its timeout a timed-out acquire returned; acquire wait counts acquires that got a connection; an overtake is an acquire that got a connection before one that began earlier and got one later",
	"W10acq":   "W10's pools, acquire+release with 30 s timeouts and 10 µs holds, for 5 s, by 64 goroutines (contended) and by 1 (uncontended): CPU is the process's per acquire+release. A hold is a time.Sleep, whose wake-up comes later than asked (about 1 ms on a Linux machine whose timers have millisecond granularity), the same for every pool: it keeps the hold's own CPU out of the pool's",
	"W11":      "a blocking query (issue 72): a store whose Get(key, min, wait) answers once the key's index passes min or wait ends, and whose Put bumps a key's index and wakes its waiters; 100,000 goroutines loop Get(key, last, wait) on key i mod K while one goroutine Puts to random keys at a fixed rate. W-A: 10,000 keys, 20,000 Puts/s, wait 1 s, 10 s; W-B: 100 keys, 5,000 Puts/s, wait 1 s, 6 s; W-C: 10,000 keys, 100 Puts/s, wait 100 ms, 6 s. wait: purgatory.Wait with a plain watch; parked: TryCompleteElsePark with operations in a sync.Pool, put back once Wait returns; level-parked: the parked form at the level min+1 (TryCompleteElseParkAt), each Put an Advance; channel: Consul's channel per key, closed and replaced by each Put; list: a sharded waiter list, each waiter a one-slot channel and a reused time.Timer. CPU is the process's (getrusage) per Get that returned news (W-A, W-B) or per Get returned (W-C); collections are the runtime's in the measured time; lateness is how long after its wait an expired Get returned; missed counts expired Gets whose key had moved over 1 ms before their wait ended, stale Gets that returned news no newer than min",
	"W9pair":   "W9 at 10, 1,000 and 100,000 receivers, the purgatory against lean-pooled in one process: 6 pairs of runs of 2 s of pushing each (each system first in every other pair, a new system per run, a collection before it), so that a phase of the machine's speed moves both runs of a pair; a pair's ratios are ours over lean-pooled's CPU per item and push-to-receive p99, and the table gives the median pair's (per process, then the median over processes)",
	"W9sweep":  "W9 with 1,000 receivers at rising rates, 5 s each; a system stops after the first rate at which a run could not keep up (push-to-receive p50 under 10 ms, and every item delivered within 1 s of the last push)",
	"W9race":   "W9 with 64 receivers whose timeouts, U[50 µs, 250 µs], race 200,000 pushes at 200,000/s: most waits are short and many expire as items arrive",
	"W5over":   "W5 for 5 s at 325,000 and 450,000 requests/s, about 1.5 and 2 times the highest rate naive kept up with on the machine that chose them, an Intel Xeon with 2 cores (overload for both); purgatory-shed is the purgatory with WithMaxDelayed(150,000), which answers what it cannot park at once (Shed); purgatory-admit has WithMaxDelayed(100,000) and waits in Admit before each add until there is room (backpressure), counting the wait against the request's timeout. Arrivals run in an open loop: the generator queues each request on time and never waits for the system, a goroutine hands them to the system as fast as it takes them, and a request's timeout and event count from when it was due. Goodput is requests completed by that deadline per second offered; intake late is how long after they were due the system took them (sampled); arrivals late is how late the generator itself ran",
}

func reference(workload string) string {
	if workload == "W5pair" {
		return "naive, in the same process"
	}
	if strings.HasPrefix(workload, "W5") {
		return "naive"
	}
	if strings.HasPrefix(workload, "W6") {
		return "naive-heap"
	}
	if workload == "W7" {
		return "itself at G=1, and stdlib or naive"
	}
	if workload == "W8" {
		return "lean"
	}
	if workload == "W8ledger" {
		return "lean-pooled"
	}
	if workload == "W8pair" {
		return "lean-pooled, in the same process"
	}
	if workload == "W9pair" {
		return "lean-pooled, in the same process"
	}
	if strings.HasPrefix(workload, "W9") {
		return "lean-pooled"
	}
	if strings.HasPrefix(workload, "W10") || workload == "W11" {
		return "channel"
	}
	return "stdlib"
}

func markdown(ms metas, keys []key, res map[key][]result, p params) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\n%s\n", ms.main())
	if p.quick {
		b.WriteString("\n**-quick run: sizes are a hundredth of DESIGN.md's; not for comparison.**\n")
	}
	runsOf := func(k key) int { return len(res[k]) }
	for _, w := range append(slices.Clone(allWorkloads), "soak") {
		var ks []key
		for _, k := range keys {
			if k.workload == w {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", w)
		if m, ok := ms.of(w); ok {
			fmt.Fprintf(&b, "This section is of another run, merged in: %s\n\n", m)
		}
		if w == "soak" { // one system, one process: no medians, no ratios
			fmt.Fprintf(&b, "%s. One process.\n\n", descriptions[w])
		} else {
			fmt.Fprintf(&b, "%s. Medians of %d process(es) per system; ratios are to `%s` in the same run.\n\n",
				descriptions[w], runsOf(ks[0]), reference(w))
		}
		switch w {
		case "W2sweep":
			sweepTable(&b, ks, res, "parked timers", "pair_ns", "ns per pair")
			continue
		case "W8ledger":
			ledgerTable(&b, res)
			continue
		case "W8pair":
			pairTable(&b, ks, res)
			continue
		case "W5pair":
			w5PairTable(&b, ks, res)
			continue
		case "W9pair":
			w9PairTable(&b, ks, res)
			continue
		case "W9":
			for _, m := range []struct{ metric, title string }{
				{"cpu_us_per_item", "CPU µs per item"}, {"lat_p50_ms", "push-to-receive p50 ms"}, {"lat_p99_ms", "push-to-receive p99 ms"},
				{"lat_p999_ms", "push-to-receive p99.9 ms"}, {"items_per_s", "items pushed per second"}, {"keeps_up", "kept up (median)"},
				{"lost", "lost"}, {"twice", "delivered twice"}, {"peak_rss_mb", "peak RSS MB"},
			} {
				sweepTable(&b, ks, res, "receivers", m.metric, m.title)
				b.WriteString("\n")
			}
			for _, m := range []struct{ metric, title string }{{"cpu_us_per_item", "CPU per item"}, {"lat_p99_ms", "push-to-receive p99"}} {
				ratioTableBy(&b, ks, res, m.metric, m.title, "lean-pooled", "receivers")
				b.WriteString("\n")
			}
			continue
		case "W10acq":
			for _, m := range []struct{ metric, title string }{
				{"cpu_us_per_pair", "CPU µs per acquire+release"}, {"wait_p50_ms", "acquire wait p50 ms"}, {"wait_p99_ms", "acquire wait p99 ms"},
				{"acquires", "acquires"}, {"overtakes_pct", "overtakes %"}, {"held_twice", "held twice"}, {"lost", "lost"},
			} {
				sweepTable(&b, ks, res, "goroutines", m.metric, m.title)
				b.WriteString("\n")
			}
			ratioTableBy(&b, ks, res, "cpu_us_per_pair", "CPU per acquire+release", "channel", "goroutines")
			ratioTableBy(&b, ks, res, "cpu_us_per_pair", "CPU per acquire+release", "semaphore", "goroutines")
			continue
		case "W11":
			w11Table(&b, ks, res)
			continue
		case "W5sweep", "W6sweep", "W9sweep":
			sweepTable(&b, ks, res, "requests/s", "keeps_up", "runs that kept up (median of 1 = all or most)")
			for _, s := range systemsIn(ks) {
				fmt.Fprintf(&b, "\nHighest rate that keeps up in every run, %s: %d requests/s.\n", s, highestRate(ks, res, s))
			}
			continue
		case "W5keys":
			for _, m := range []struct{ metric, title string }{
				{"cpu_us_per_req", "CPU µs per request"}, {"cpu_s", "CPU s"}, {"lag_p50_ms", "completion lag p50 ms"}, {"lag_p99_ms", "completion lag p99 ms"},
				{"lag_p999_ms", "completion lag p99.9 ms"}, {"completed_pct", "completed % (≈40 when it keeps up)"},
			} {
				sweepTable(&b, ks, res, "keys", m.metric, m.title)
				b.WriteString("\n")
			}
			continue
		case "W6":
			for _, m := range []struct{ metric, title string }{
				{"cpu_us_per_req", "CPU µs per request"}, {"peak_rss_mb", "peak RSS MB"}, {"lag_p50_ms", "lag p50 ms"}, {"lag_p99_ms", "lag p99 ms"},
				{"completed_pct", "completed %"}, {"expected_pct", "expected %"}, {"lost", "lost"}, {"ended_twice", "ended twice"}, {"keeps_up", "kept up (median)"},
			} {
				sweepTable(&b, ks, res, "keys", m.metric, m.title)
				b.WriteString("\n")
			}
			ratioTableBy(&b, ks, res, "cpu_us_per_req", "CPU per request", "naive-heap", "keys")
			ratioTableBy(&b, ks, res, "peak_rss_mb", "peak RSS", "purgatory", "keys")
			continue
		case "W8":
			for _, m := range []struct{ metric, title string }{
				{"ns_per_op", "ns per add+complete (wall, all goroutines)"}, {"ops_per_cpu_s", "add+completes per CPU-second"}, {"cores", "cores busy"},
				{"own_allocs_per_op", "the system's own allocations per add+complete"}, {"own_bytes_per_op", "the system's own bytes per add+complete"},
				{"gc_cpu_pct", "collector's share of CPU %"}, {"gc_assist_pct", "of which mark assists %"}, {"gc_idle_mark_pct", "of which idle marking %"},
			} {
				sweepTable(&b, ks, res, "goroutines", m.metric, m.title)
				b.WriteString("\n")
			}
			w8Table(&b, res)
			continue
		case "W7":
			sweepTable(&b, ks, res, "goroutines", "mops_per_s", "millions of operations per second, all goroutines")
			b.WriteString("\n")
			scalingTable(&b, ks, res)
			b.WriteString("\n")
			sweepTable(&b, ks, res, "goroutines", "cpu_s_per_mops", "CPU s per million operations")
			b.WriteString("\n")
			sweepTable(&b, ks, res, "goroutines", "cores", "cores busy (CPU s per wall s)")
			continue
		case "W5over":
			for _, m := range []struct{ metric, title string }{
				{"goodput_per_s", "goodput, completed requests/s"}, {"completed_pct", "completed % (≈40 if it kept up)"}, {"shed_pct", "shed % (purgatory-shed: answered at once, not parked)"},
				{"intake_late_p50_ms", "intake late p50 ms"}, {"intake_late_max_ms", "intake late max ms"}, {"arrival_late_max_ms", "arrivals late max ms"},
				{"lag_p99_ms", "completion lag p99 ms"}, {"cpu_s", "CPU s"},
			} {
				sweepTable(&b, ks, res, "requests/s", m.metric, m.title)
				b.WriteString("\n")
			}
			continue
		}
		cols := headline[w]
		b.WriteString("| system |")
		for _, c := range cols {
			fmt.Fprintf(&b, " %s |", c.title)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
		ref := key{w, 0, reference(w)}
		for _, k := range ks {
			fmt.Fprintf(&b, "| %s |", k.system)
			for _, c := range cols {
				v := median(values(res[k], c.metric))
				cell := format(v)
				if r, ok := res[ref]; ok && c.ratio && k.system != ref.system {
					if rv := median(values(r, c.metric)); rv != 0 && !math.IsNaN(rv) && !math.IsNaN(v) {
						cell += fmt.Sprintf(" (%.2f×)", v/rv)
					}
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func systemsIn(ks []key) []string {
	var s []string
	for _, k := range ks {
		if !slices.Contains(s, k.system) {
			s = append(s, k.system)
		}
	}
	return s
}

func sweepTable(b *strings.Builder, ks []key, res map[key][]result, variant, metric, title string) {
	systems := systemsIn(ks)
	var variants []int
	for _, k := range ks {
		if !slices.Contains(variants, k.variant) {
			variants = append(variants, k.variant)
		}
	}
	fmt.Fprintf(b, "%s by %s:\n\n| %s |", title, variant, variant)
	for _, s := range systems {
		fmt.Fprintf(b, " %s |", s)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(systems)) + "\n")
	for _, v := range variants {
		fmt.Fprintf(b, "| %d |", v)
		for _, s := range systems {
			if r, ok := res[key{ks[0].workload, v, s}]; ok {
				fmt.Fprintf(b, " %s |", format(median(values(r, metric))))
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
}

// scalingTable is W7's headline: each system's operations per second at each
// G as a ratio to its own at G=1, and per CPU second at G=2 against G=1.
func scalingTable(b *strings.Builder, ks []key, res map[key][]result) {
	systems := systemsIn(ks)
	fmt.Fprintf(b, "Throughput against the same system at G=1 (medians), and operations per CPU-second at G=2 against G=1:\n\n| system | G=2 / G=1 | G=4 / G=1 | G=8 / G=1 | ops per CPU-s, G=2 / G=1 |\n|---|---|---|---|---|\n")
	for _, s := range systems {
		at := func(g int, metric string) float64 { return median(values(res[key{"W7", g, s}], metric)) }
		fmt.Fprintf(b, "| %s |", s)
		for _, g := range []int{2, 4, 8} {
			fmt.Fprintf(b, " %s× |", format(at(g, "mops_per_s")/at(1, "mops_per_s")))
		}
		fmt.Fprintf(b, " %s× |\n", format(at(1, "cpu_s_per_mops")/at(2, "cpu_s_per_mops")))
	}
	// Against the peer at the same G: the timers against time.AfterFunc,
	// the purgatories against naive on the same keys.
	peers := [][2]string{{"wheel", "stdlib"}, {"owned", "stdlib"}, {"purgatory", "naive"}, {"purgatory-shared", "naive-shared"}}
	fmt.Fprintf(b, "\nThroughput against the peer at the same G (medians):\n\n| system / peer | G=1 | G=2 | G=4 | G=8 |\n|---|---|---|---|---|\n")
	for _, pr := range peers {
		if !slices.Contains(systems, pr[0]) || !slices.Contains(systems, pr[1]) {
			continue
		}
		fmt.Fprintf(b, "| %s / %s |", pr[0], pr[1])
		for _, g := range []int{1, 2, 4, 8} {
			v := median(values(res[key{"W7", g, pr[0]}], "mops_per_s")) / median(values(res[key{"W7", g, pr[1]}], "mops_per_s"))
			fmt.Fprintf(b, " %s× |", format(v))
		}
		b.WriteString("\n")
	}
}

// w8Table is W8's headline: the purgatory's ns per add+complete against the
// lean version's at each G (fresh against fresh, reused against pooled), and
// its throughput at G=2 against G=1.
func w8Table(b *strings.Builder, res map[key][]result) {
	at := func(g int, s, metric string) float64 { return median(values(res[key{"W8", g, s}], metric)) }
	fmt.Fprintf(b, "ns per add+complete against lean's at the same G (medians):\n\n| system / peer | G=1 | G=2 | G=4 | G=8 |\n|---|---|---|---|---|\n")
	for _, pr := range [][2]string{{"purgatory", "lean"}, {"purgatory-reused", "lean-pooled"}, {"purgatory-reused", "lean"}, {"naive", "lean"}} {
		fmt.Fprintf(b, "| %s / %s |", pr[0], pr[1])
		for _, g := range []int{1, 2, 4, 8} {
			fmt.Fprintf(b, " %s× |", format(at(g, pr[0], "ns_per_op")/at(g, pr[1], "ns_per_op")))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\nThroughput at G=2 against G=1 (medians):\n\n| system | G=2 / G=1 |\n|---|---|\n")
	for _, s := range w8Systems {
		fmt.Fprintf(b, "| %s | %s× |\n", s, format(at(1, s, "ns_per_op")/at(2, s, "ns_per_op")))
	}
}

// ledgerTable is W8ledger's: each line's ns per loop for the purgatory and
// pooled lean, and the ratio, then the bookkeeping (total less timer).
func ledgerTable(b *strings.Builder, res map[key][]result) {
	at := func(s, line string) float64 {
		return median(values(res[key{"W8ledger", 0, s}], line+"_ns"))
	}
	b.WriteString("| line | purgatory-reused ns | lean-pooled ns | ratio |\n|---|---|---|---|\n")
	row := func(what string, ours, lean float64) {
		ratio := format(ours/lean) + "×"
		if math.IsNaN(lean) {
			ratio = "–"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", what, format(ours), format(lean), ratio)
	}
	for _, l := range ledgerLines {
		row(l.what, at("purgatory-reused", l.name), at("lean-pooled", l.name))
	}
	row("the bookkeeping: add+complete less the timer", at("purgatory-reused", "total")-at("purgatory-reused", "timer"),
		at("lean-pooled", "total")-at("lean-pooled", "timer"))
}

// pairTable is W8pair's: per goroutine count, the medians over processes of
// each summary of the window pairs.
func pairTable(b *strings.Builder, ks []key, res map[key][]result) {
	b.WriteString("| goroutines | ratio, median pair | lowest | highest | where lean ran fast | where lean ran slow | purgatory-reused per CPU-s | lean-pooled per CPU-s |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range ks {
		at := func(m string) string { return format(median(values(res[k], m))) }
		fmt.Fprintf(b, "| %d | %s× | %s× | %s× | %s× | %s× | %s | %s |\n", max(k.variant, 1), at("ratio"), at("ratio_min"), at("ratio_max"),
			at("ratio_lean_fast"), at("ratio_lean_slow"), at("ops_per_cpu_s"), at("peer_ops_per_cpu_s"))
	}
}

// w5PairTable is W5pair's: per key count, the medians over processes of each
// summary of the run pairs.
func w5PairTable(b *strings.Builder, ks []key, res map[key][]result) {
	b.WriteString("| keys | CPU ratio, median pair | lowest | highest | purgatory µs per request | naive µs per request | lost | ended twice |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range ks {
		at := func(m string) string { return format(median(values(res[k], m))) }
		fmt.Fprintf(b, "| %d | %s× | %s× | %s× | %s | %s | %s | %s |\n", k.variant, at("ratio"), at("ratio_min"), at("ratio_max"),
			at("cpu_us_per_req"), at("peer_cpu_us_per_req"), at("lost"), at("ended_twice"))
	}
}

// w9PairTable is W9pair's: per receiver count, the medians over processes of
// each summary of the run pairs.
func w9PairTable(b *strings.Builder, ks []key, res map[key][]result) {
	b.WriteString("| receivers | CPU ratio, median pair | lowest | highest | p99 ratio, median pair | purgatory µs per item | lean-pooled µs per item | purgatory p99 ms | lean-pooled p99 ms | lost | delivered twice |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range ks {
		at := func(m string) string { return format(median(values(res[k], m))) }
		fmt.Fprintf(b, "| %d | %s× | %s× | %s× | %s× | %s | %s | %s | %s | %s | %s |\n", k.variant, at("ratio"), at("ratio_min"), at("ratio_max"), at("p99_ratio"),
			at("cpu_us_per_item"), at("peer_cpu_us_per_item"), at("lat_p99_ms"), at("peer_lat_p99_ms"), at("lost"), at("twice"))
	}
}

func format(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case v == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// ratioTableBy shows, for each variant (named by), each system's median of
// metric against ref's in the same run.
func ratioTableBy(b *strings.Builder, ks []key, res map[key][]result, metric, title, ref, by string) {
	systems := systemsIn(ks)
	var variants []int
	for _, k := range ks {
		if !slices.Contains(variants, k.variant) {
			variants = append(variants, k.variant)
		}
	}
	fmt.Fprintf(b, "%s against %s by %s:\n\n| %s |", title, ref, by, by)
	for _, s := range systems {
		fmt.Fprintf(b, " %s |", s)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(systems)) + "\n")
	for _, v := range variants {
		fmt.Fprintf(b, "| %d |", v)
		rv := median(values(res[key{ks[0].workload, v, ref}], metric))
		for _, s := range systems {
			r, ok := res[key{ks[0].workload, v, s}]
			if !ok || rv == 0 || math.IsNaN(rv) {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %.2f× |", median(values(r, metric))/rv)
		}
		b.WriteString("\n")
	}
}

// highestRate is a sweep's highest rate at which every one of system's runs
// kept up; ks are the sweep's keys.
func highestRate(ks []key, res map[key][]result, system string) int {
	runs := 0 // a rate that every run reached has this many; in any order of ks
	for _, k := range ks {
		runs = max(runs, len(res[k]))
	}
	best := 0
	for _, k := range ks {
		if kept := values(res[k], "keeps_up"); k.system == system && len(kept) == runs && slices.Min(kept) == 1 {
			best = max(best, k.variant)
		}
	}
	return best
}

// w11Table is W11's: a table per shape, each system's medians with its
// ratios to the channel peer and the waiter list.
func w11Table(b *strings.Builder, ks []key, res map[key][]result) {
	systems := systemsIn(ks)
	for shape := range w11Shapes {
		if _, ok := res[key{"W11", shape, "channel"}]; !ok {
			continue
		}
		fmt.Fprintf(b, "%s:\n\n| system | CPU µs per wake | × channel | × list | peak RSS MB | × channel | collections | lateness p50 ms | × channel | p99 ms | expired %% | early | stale | missed |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", w11Shapes[shape].name)
		of := func(system, metric string) float64 { return median(values(res[key{"W11", shape, system}], metric)) }
		ratio := func(system, metric, ref string) string {
			r := of(ref, metric)
			if r == 0 || math.IsNaN(r) {
				return "–"
			}
			return fmt.Sprintf("%.2f×", of(system, metric)/r)
		}
		for _, sys := range systems {
			if _, ok := res[key{"W11", shape, sys}]; !ok {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sys,
				format(of(sys, "cpu_us_per_wake")), ratio(sys, "cpu_us_per_wake", "channel"), ratio(sys, "cpu_us_per_wake", "list"),
				format(of(sys, "peak_rss_mb")), ratio(sys, "peak_rss_mb", "channel"), format(of(sys, "gcs")),
				format(of(sys, "late_p50_ms")), ratio(sys, "late_p50_ms", "channel"), format(of(sys, "late_p99_ms")),
				format(of(sys, "expired_pct")), format(of(sys, "early")), format(of(sys, "stale")), format(of(sys, "missed")))
		}
		b.WriteString("\n")
	}
}
