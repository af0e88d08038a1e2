package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// figuresRun is a run of two systems on two variants, three processes each.
func figuresRun() (map[key][]result, meta) {
	run := func(ms ...map[string]float64) []result {
		var rs []result
		for _, m := range ms {
			rs = append(rs, result{Metrics: m})
		}
		return rs
	}
	res := map[key][]result{
		{"W5", 0, "purgatory"}:         run(map[string]float64{"cpu_s": 3}, map[string]float64{"cpu_s": 4}, map[string]float64{"cpu_s": 9}),
		{"W5", 0, "naive"}:             run(map[string]float64{"cpu_s": 8}, map[string]float64{"cpu_s": 6}, map[string]float64{"cpu_s": 7}),
		{"W5sweep", 100, "purgatory"}:  run(map[string]float64{"keeps_up": 1}, map[string]float64{"keeps_up": 1}, map[string]float64{"keeps_up": 1}),
		{"W5sweep", 200, "purgatory"}:  run(map[string]float64{"keeps_up": 1}, map[string]float64{"keeps_up": 0}, map[string]float64{"keeps_up": 1}),
		{"W5sweep", 100, "naive"}:      run(map[string]float64{"keeps_up": 0}, map[string]float64{"keeps_up": 1}, map[string]float64{"keeps_up": 1}),
		{"W6", 10000, "purgatory-lvl"}: run(map[string]float64{"cpu_us_per_req": 4.1}),
	}
	return res, meta{Commit: "abc1234", Machine: "2 CPUs (a test)"}
}

// Marked figures are written from results.json: medians, arithmetic, a
// sweep's highest rate in every run, the run itself; and checked: a figure
// edited by hand away from its source fails the check, naming the line and
// the value it should have.
func TestFiguresWriteAndCheck(t *testing.T) {
	res, m := figuresRun()
	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	text := strings.Join([]string{
		"# Benchmarks",
		"",
		"From <!-- fig run -->?<!-- /fig -->.",
		"",
		"CPU <!-- fig W5/purgatory/cpu_s / W5/naive/cpu_s | x -->?<!-- /fig --> of naive's,",
		"<!-- fig W5/purgatory/cpu_s -->?<!-- /fig --> s against <!-- fig W5/naive/cpu_s | %.1f s -->?<!-- /fig -->;",
		"less a floor of 1 s: <!-- fig ( W5/purgatory/cpu_s - 1 ) / ( W5/naive/cpu_s - 1 ) | x -->?<!-- /fig -->.",
		"",
		"- kept up to <!-- fig W5sweep/purgatory/highest_rate -->?<!-- /fig --> requests/s, naive to <!-- fig W5sweep/naive/highest_rate -->?<!-- /fig -->.",
		"- <!-- fig W6@10000/purgatory-lvl/cpu_us_per_req -->?<!-- /fig --> µs per request.",
	}, "\n")
	if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := docFigures([]string{doc}, nil, res, m, true); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	for _, want := range []string{
		"From <!-- fig run -->commit abc1234 on 2 CPUs (a test)<!-- /fig -->.",
		"CPU <!-- fig W5/purgatory/cpu_s / W5/naive/cpu_s | x -->0.57×<!-- /fig --> of naive's,",
		"<!-- fig W5/purgatory/cpu_s -->4.00<!-- /fig --> s against <!-- fig W5/naive/cpu_s | %.1f s -->7.0 s<!-- /fig -->;",
		"less a floor of 1 s: <!-- fig ( W5/purgatory/cpu_s - 1 ) / ( W5/naive/cpu_s - 1 ) | x -->0.50×<!-- /fig -->.",
		"kept up to <!-- fig W5sweep/purgatory/highest_rate -->100<!-- /fig --> requests/s, naive to <!-- fig W5sweep/naive/highest_rate -->0<!-- /fig -->.",
		"<!-- fig W6@10000/purgatory-lvl/cpu_us_per_req -->4.10<!-- /fig --> µs per request.",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the written doc lacks %q:\n%s", want, got)
		}
	}
	if err := docFigures([]string{doc}, nil, res, m, false); err != nil {
		t.Fatalf("a doc just written fails the check: %v", err)
	}

	edited := strings.Replace(string(got), "-->0.57×<!--", "-->0.51×<!--", 1)
	if err := os.WriteFile(doc, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	err := docFigures([]string{doc}, nil, res, m, false)
	if err == nil || !strings.Contains(err.Error(), "line 5") || !strings.Contains(err.Error(), "-->0.57×<!--") {
		t.Fatalf("a figure edited by hand: want the check to fail on line 5 with 0.57×, got %v", err)
	}
}

// A reference that results.json does not hold, or an expression that does
// not parse, is an error, and the marker is left as it was.
func TestFiguresBadMarkers(t *testing.T) {
	res, m := figuresRun()
	for _, expr := range []string{"W5/stdlib/cpu_s", "W5/purgatory", "W5@x/purgatory/cpu_s", "( W5/naive/cpu_s", "W5/naive/cpu_s -", "W5/naive/cpu_s / 0", "W9sweep/naive/highest_rate"} {
		text := "<!-- fig " + expr + " -->1<!-- /fig -->"
		out, errs := fillFigures(text, res, m)
		if len(errs) != 1 || out != text {
			t.Errorf("%q: want one error and the text unchanged, got %v and %q", expr, errs, out)
		}
	}
}

// A figure outside markers must say where it was measured: in its block, or
// in a paragraph of its own under its heading. In a strict file any number
// with a unit counts; elsewhere only ratios and fine-grained times do, and
// targets never do.
func TestUnsourcedFigures(t *testing.T) {
	for _, c := range []struct {
		name   string
		text   string
		strict bool
		want   int
	}{
		{"a bare ratio", "The purgatory does 0.74× of naive.", false, 1},
		{"a bare duration, strict", "It took 1.20 s.", true, 1},
		{"a bare duration, loose", "A tick of 1 ms, a threshold of 5 s.", false, 0},
		{"targets", "Target ≤ 0.5×, ≥ 1.3×, no worse than +5 %.", true, 0},
		{"marked", "CPU <!-- fig W5/naive/cpu_s -->7.00<!-- /fig --> s.", true, 0},
		{"sourced in its block", "- 372 ns per add+complete (measured at commit 2c6e359 on the 2-core Intel Xeon, with `go test -bench WatchComplete`).", true, 0},
		{"sourced badly", "- 372 ns per add+complete (measured on a machine).", true, 1},
		{"sourced across a line break", "372 ns per add+complete (measured at\ncommit 2c6e359 on the 2-core Intel Xeon, with `go test\n-bench WatchComplete`).", true, 0},
		{"sourced by the section", "## Go test\n\nMeasured at commit 2c6e359 on the 2-core Intel Xeon, with `go test -bench .`.\n\n| a | 135.8 ns |\n\nAnd 7.4 M/s.\n\n## Next\n\n0.9× here.", true, 1},
		{"in code", "```\n0.5× 12 ns\n```\n`3 ns` in a code span", false, 0},
	} {
		pattern := figure
		if c.strict {
			pattern = strictFigure
		}
		if errs := unsourced(c.text, pattern); len(errs) != c.want {
			t.Errorf("%s: want %d unsourced, got %v", c.name, c.want, errs)
		}
	}
}

// TestHighestRateInAnyOrder: the highest rate every run kept up at does not
// depend on the order of the sweep's keys (a map's, in -figures), even when
// the last rate tried has fewer runs than the others.
func TestHighestRateInAnyOrder(t *testing.T) {
	res := map[key][]result{}
	kept := func(ok float64) result { return result{Metrics: map[string]float64{"keeps_up": ok}} }
	for _, rate := range []int{100, 200, 300} {
		res[key{"W5sweep", rate, "a"}] = []result{kept(1), kept(1), kept(1)}
	}
	res[key{"W5sweep", 400, "a"}] = []result{kept(0)} // the sweep stopped here
	ks := slices.Collect(maps.Keys(res))
	slices.SortFunc(ks, func(a, b key) int { return a.variant - b.variant })
	for range 2 {
		if got := highestRate(ks, res, "a"); got != 300 {
			t.Errorf("keys in order %v: highest rate %d, want 300", ks, got)
		}
		slices.Reverse(ks) // the last rate, with one run, first
	}
}
