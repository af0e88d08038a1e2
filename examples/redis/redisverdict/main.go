// Command redisverdict judges a run of redis-suite.sh: Redis's own list
// tests against this server, beside the same tests against redis-server.
//
//	go run ./redisverdict OURS_DIR REDIS_DIR OUT_OF_SCOPE.txt
//
// Each directory holds one log per test file the suite ran, named after it
// (list.log for tests/unit/type/list.tcl): the output of Redis's
// tests/test_helper.tcl for that file alone. OUT_OF_SCOPE.txt lists the tests
// this server does not pass, one a line: FILE <TAB> TEST NAME <TAB> reason
// (FILE as unit/type/list; names repeat across files, and within one: a
// listed name stands for every test of that name in its file).
//
// The verdict: every test that passed against redis-server passes here as
// many times as there (names repeat within a file: one of two that fails is
// not hidden by the other), unless it is listed; a listed test that passes here is a problem (it is in
// scope now: take it off the list); so is any test that failed here ([err])
// or an exception, unless listed. It prints the counts and the problems, and
// exits 1 if there is one.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// run is one side's results: per test file and name, how many tests of
// that name passed and failed.
type run struct {
	passed     map[key]int
	failed     map[key]int
	exceptions map[string]string // file: the exception that ended its run
}

type key struct{ file, name string }

var (
	colors = regexp.MustCompile("\x1b\\[[0-9;]*m")
	okLine = regexp.MustCompile(`^\[ok\]: (.*) \(\d+ ms\)$`)
	errLn  = regexp.MustCompile(`^\[err\]: (.*) in tests/(unit/[^ ]+)\.tcl$`)
	excLn  = regexp.MustCompile(`^\[exception\]: (.*)$`)
)

// readRun reads every FILE.log of dir; a log is of tests/unit/type/FILE.tcl.
func readRun(dir string) (*run, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		return nil, fmt.Errorf("%s: no logs (FILE.log, one per test file)", dir)
	}
	r := &run{passed: map[key]int{}, failed: map[key]int{}, exceptions: map[string]string{}}
	for _, path := range logs {
		file := "unit/type/" + strings.TrimSuffix(filepath.Base(path), ".log")
		if err := r.readLog(path, file); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *run) readLog(path, file string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := colors.ReplaceAllString(sc.Text(), "")
		if m := okLine.FindStringSubmatch(line); m != nil {
			r.passed[key{file, m[1]}]++
		} else if m := errLn.FindStringSubmatch(line); m != nil {
			r.failed[key{m[2], m[1]}]++
		} else if m := excLn.FindStringSubmatch(line); m != nil && r.exceptions[file] == "" {
			r.exceptions[file] = m[1]
		}
	}
	return sc.Err()
}

// readListed reads OUT_OF_SCOPE.txt: FILE <TAB> NAME <TAB> reason.
func readListed(path string) (map[key]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	listed := map[key]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) != 3 || fs[2] == "" {
			return nil, fmt.Errorf("%s:%d: want FILE <TAB> TEST NAME <TAB> reason", path, n)
		}
		listed[key{fs[0], fs[1]}] = fs[2]
	}
	return listed, sc.Err()
}

// judge returns the problems of ours against the reference run and the list.
func judge(ours, ref *run, listed map[key]string) (problems []string) {
	for k, n := range ref.passed {
		_, out := listed[k]
		switch {
		case ours.passed[k] >= n && out:
			problems = append(problems, fmt.Sprintf("%s: %q passes: it is in scope now; take it off the out-of-scope list", k.file, k.name))
		case ours.passed[k] < n && !out:
			why := "did not pass"
			if ours.failed[k] > 0 {
				why = "failed"
			} else if e := ours.exceptions[k.file]; e != "" {
				why = "did not run: an exception ended its file's run: " + e
			}
			if n > 1 {
				why = fmt.Sprintf("%s (%d of its %d tests passed)", why, ours.passed[k], n)
			}
			problems = append(problems, fmt.Sprintf("%s: %q %s", k.file, k.name, why))
		}
	}
	for k := range ours.failed {
		if _, out := listed[k]; !out && ref.passed[k] == 0 {
			problems = append(problems, fmt.Sprintf("%s: %q failed (and does not pass against redis-server either)", k.file, k.name))
		}
	}
	for k := range listed {
		if ref.passed[k] == 0 {
			problems = append(problems, fmt.Sprintf("%s: %q is listed but did not pass against redis-server: a stale entry", k.file, k.name))
		}
	}
	sort.Strings(problems)
	return problems
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: redisverdict OURS_DIR REDIS_DIR OUT_OF_SCOPE.txt")
		os.Exit(2)
	}
	ours, err := readRun(os.Args[1])
	if err != nil {
		fail(err)
	}
	ref, err := readRun(os.Args[2])
	if err != nil {
		fail(err)
	}
	listed, err := readListed(os.Args[3])
	if err != nil {
		fail(err)
	}
	problems := judge(ours, ref, listed)
	passing, all := countIn(ours.passed, ref.passed)
	fmt.Printf("redis-suite: %d of the %d tests that pass against redis-server pass here (%d names); %d names listed out of scope\n",
		passing, all, len(ref.passed), len(listed))
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "redis-suite: "+p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// countIn counts the tests that passed in ref, and of them those that
// passed in ours, name by name.
func countIn(ours, ref map[key]int) (passing, all int) {
	for k, n := range ref {
		all += n
		passing += min(ours[k], n)
	}
	return passing, all
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "redisverdict:", err)
	os.Exit(2)
}
