package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The figures of the docs. A figure that comes from results.json is written
// between markers, and the bench writes it (-figures write) or checks it
// (-figures check, which CI runs):
//
//	<!-- fig EXPR [| FORMAT] -->TEXT<!-- /fig -->
//
// EXPR is arithmetic (+ - * / and parentheses, each separated by spaces)
// over numbers and references WORKLOAD[@VARIANT]/SYSTEM/METRIC, each the
// median of that metric over the run's processes (highest_rate is a sweep's
// highest rate kept up in every run). FORMAT is x (a ratio: 1.83×), or a
// printf verb with its unit (%.0f k/s); without one, the report's format.
// The marker `<!-- fig run -->TEXT<!-- /fig -->` is the run's commit and
// machine.
//
// Every other figure must say where it comes from, visibly, in its
// paragraph, list item or table, or in a paragraph of its own under its
// section's heading: "measured at commit C on MACHINE, with `COMMAND`".
// -figures check fails on a figure that has neither, and on a marked one that
// differs from results.json. What counts as a figure: in the -strict files
// (docs/benchmarks.md, which is all measurements), any number with a unit of
// time, size or rate, or a ratio; elsewhere, where durations and sizes are
// mostly settings (a 1 ms tick, a 5 s threshold), a ratio or a number of
// nanoseconds, microseconds or operations per second.

var (
	figMarker = regexp.MustCompile(`<!-- fig ([^>]*?) -->(.*?)<!-- /fig -->`)
	sourced   = regexp.MustCompile("(?i)measured at commit [0-9a-f]{7,40} on [^,]+, with `[^`]+`")
	// strictFigure and figure find what reads as a measured figure (see
	// above). Targets (≤ 0.5×, ≥ 1.3×, +5 %) are not figures.
	strictFigure = regexp.MustCompile(`(^|[^\w.])([≤≥<>+] ?)?(\d[\d,]*(\.\d+)?) ?(×|ns\b|µs\b|ms\b|s\b|%|MiB\b|KiB\b|GiB\b|MB\b|M/s|k/s|/s\b)`)
	figure       = regexp.MustCompile(`(^|[^\w.])([≤≥<>+] ?)?(\d[\d,]*(\.\d+)?) ?(×|ns\b|µs\b|M/s|k/s)`)
	comment      = regexp.MustCompile(`<!--.*?-->`)
	codeSpan     = regexp.MustCompile("`[^`]*`")
)

// runFigures is -figures: mode check or write, the results file, and the
// docs and the strict ones among them as comma-separated globs.
func runFigures(mode, resultsPath, docs, strict string) error {
	if mode != "check" && mode != "write" {
		return fmt.Errorf("bench: -figures %q: check or write", mode)
	}
	res, ms, err := load(resultsPath)
	if err != nil {
		return err
	}
	m := ms.main()
	paths, err := globs(docs)
	if err != nil {
		return err
	}
	strictPaths, err := globs(strict)
	if err != nil {
		return err
	}
	return docFigures(paths, strictPaths, res, m, mode == "write")
}

// globs returns the files that comma-separated globs match, each glob at
// least one.
func globs(list string) ([]string, error) {
	var paths []string
	for _, glob := range strings.Split(list, ",") {
		matches, err := filepath.Glob(glob)
		if err != nil || len(matches) == 0 {
			return nil, fmt.Errorf("bench: %q matches no file", glob)
		}
		paths = append(paths, matches...)
	}
	return paths, nil
}

// docFigures writes (write) or checks every marked figure of the files
// against results, and checks that every other figure says where it comes
// from. It returns every problem it found, joined.
func docFigures(paths, strict []string, res map[key][]result, m meta, write bool) error {
	var problems []error
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text, errs := fillFigures(string(data), res, m)
		for _, err := range errs {
			problems = append(problems, fmt.Errorf("%s: %w", path, err))
		}
		if !write {
			if text != string(data) {
				problems = append(problems, fmt.Errorf("%s: marked figures differ from results.json; `go -C bench run . -figures write` rewrites them:\n%s", path, figureDiff(string(data), text)))
			}
			pattern := figure
			if slices.Contains(strict, path) {
				pattern = strictFigure
			}
			for _, err := range unsourced(text, pattern) {
				problems = append(problems, fmt.Errorf("%s: %w", path, err))
			}
			continue
		}
		if text != string(data) {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return err
			}
		}
	}
	return errors.Join(problems...)
}

// fillFigures returns text with each marked figure's TEXT written from
// results, and the markers it could not evaluate.
func fillFigures(text string, res map[key][]result, m meta) (string, []error) {
	var errs []error
	out := figMarker.ReplaceAllStringFunc(text, func(match string) string {
		sub := figMarker.FindStringSubmatch(match)
		spec := sub[1]
		if spec == "run" {
			return "<!-- fig run -->" + fmt.Sprintf("commit %s on %s", m.Commit, m.Machine) + "<!-- /fig -->"
		}
		expr, format, _ := strings.Cut(spec, "|")
		v, err := evaluate(strings.TrimSpace(expr), res)
		if err != nil {
			errs = append(errs, fmt.Errorf("fig %q: %w", spec, err))
			return match
		}
		return "<!-- fig " + spec + " -->" + render(v, strings.TrimSpace(format)) + "<!-- /fig -->"
	})
	return out, errs
}

// render formats v as verb says (see the comment at the top): the report's
// format, x, or a printf verb.
func render(v float64, verb string) string {
	switch verb {
	case "":
		return format(v)
	case "x":
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf(verb, v)
}

// figureDiff lists the lines of a that b changes, with b's version.
func figureDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			fmt.Fprintf(&out, "  line %d: %s\n     want: %s\n", i+1, strings.TrimSpace(al[i]), strings.TrimSpace(bl[i]))
		}
	}
	return out.String()
}

// unsourced returns an error for each block (paragraph, list item, table)
// that holds a figure neither marked nor sourced.
func unsourced(text string, pattern *regexp.Regexp) []error {
	var errs []error
	sectionSourced := false
	for _, blk := range blocks(text) {
		if blk.heading {
			sectionSourced = false
			continue
		}
		says := sourced.MatchString(strings.Join(strings.Fields(blk.text), " ")) // as read, not as wrapped
		if blk.first && says {
			sectionSourced = true // a paragraph of its own under the heading
		}
		if sectionSourced || says {
			continue
		}
		bare := figMarker.ReplaceAllString(blk.text, "")
		bare = comment.ReplaceAllString(bare, "")
		bare = codeSpan.ReplaceAllString(bare, "")
		for _, f := range pattern.FindAllStringSubmatch(bare, -1) {
			if f[2] != "" {
				continue // a target
			}
			errs = append(errs, fmt.Errorf("line %d: %q is a figure that neither comes from results.json (<!-- fig ... -->) nor says where it was measured (\"measured at commit C on MACHINE, with `COMMAND`\")", blk.line, strings.TrimSpace(f[0])))
			break
		}
	}
	return errs
}

// block is a paragraph, list item, table or heading of a Markdown text, with
// code blocks left out.
type block struct {
	text    string
	line    int  // its first line, from 1
	heading bool // a heading
	first   bool // the first block after a heading
}

func blocks(text string) []block {
	var out []block
	var cur []string
	start, fenced, afterHeading := 0, false, false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block{text: strings.Join(cur, "\n"), line: start, first: afterHeading})
			afterHeading = false
			cur = nil
		}
	}
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case strings.HasPrefix(trimmed, "#"):
			flush()
			out = append(out, block{text: trimmed, line: i + 1, heading: true})
			afterHeading = true
		case trimmed == "":
			flush()
		case strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") || isNumbered(line):
			flush() // a new list item
			cur, start = []string{line}, i+1
		default:
			if len(cur) == 0 {
				start = i + 1
			}
			cur = append(cur, line)
		}
	}
	flush()
	return out
}

func isNumbered(line string) bool {
	n, rest, ok := strings.Cut(line, ". ")
	_, err := strconv.Atoi(n)
	return ok && err == nil && rest != ""
}

// evaluate computes an EXPR of a marker.
func evaluate(expr string, res map[key][]result) (float64, error) {
	tokens := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(expr))
	e := &evaluator{tokens: tokens, res: res}
	v, err := e.sum()
	if err == nil && e.pos < len(tokens) {
		err = fmt.Errorf("unexpected %q", tokens[e.pos])
	}
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = fmt.Errorf("evaluates to %v", v)
	}
	return v, err
}

type evaluator struct {
	tokens []string
	pos    int
	res    map[key][]result
}

func (e *evaluator) next() string {
	if e.pos < len(e.tokens) {
		return e.tokens[e.pos]
	}
	return ""
}

func (e *evaluator) sum() (float64, error) {
	v, err := e.product()
	for err == nil && (e.next() == "+" || e.next() == "-") {
		op := e.next()
		e.pos++
		var w float64
		if w, err = e.product(); op == "+" {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (e *evaluator) product() (float64, error) {
	v, err := e.operand()
	for err == nil && (e.next() == "*" || e.next() == "/") {
		op := e.next()
		e.pos++
		var w float64
		if w, err = e.operand(); op == "*" {
			v *= w
		} else {
			v /= w
		}
	}
	return v, err
}

func (e *evaluator) operand() (float64, error) {
	t := e.next()
	e.pos++
	switch {
	case t == "(":
		v, err := e.sum()
		if err == nil && e.next() != ")" {
			err = errors.New("missing )")
		}
		e.pos++
		return v, err
	case t == "":
		return 0, errors.New("expression ends early")
	}
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		return v, nil
	}
	return lookup(t, e.res)
}

// lookup returns the median of a reference WORKLOAD[@VARIANT]/SYSTEM/METRIC.
func lookup(ref string, res map[key][]result) (float64, error) {
	parts := strings.Split(ref, "/")
	if len(parts) != 3 {
		return 0, fmt.Errorf("%q is not WORKLOAD[@VARIANT]/SYSTEM/METRIC", ref)
	}
	workload, variant := parts[0], 0
	if w, v, ok := strings.Cut(parts[0], "@"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%q: variant %q is not a number", ref, v)
		}
		workload, variant = w, n
	}
	if parts[2] == "highest_rate" {
		var ks []key
		for k := range res {
			if k.workload == workload {
				ks = append(ks, k)
			}
		}
		if !slices.ContainsFunc(ks, func(k key) bool { return k.system == parts[1] }) {
			return 0, fmt.Errorf("%q: no %s run of %s in results.json", ref, workload, parts[1])
		}
		return float64(highestRate(ks, res, parts[1])), nil
	}
	runs, ok := res[key{workload, variant, parts[1]}]
	v := values(runs, parts[2])
	if !ok || len(v) == 0 {
		return 0, fmt.Errorf("%q: not in results.json", ref)
	}
	return median(v), nil
}
