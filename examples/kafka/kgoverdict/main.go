// Command kgoverdict judges a run of kgo-suite.sh: each result of franz-go's
// integration tests against the list of what is out of scope.
//
//	go run ./kgoverdict RESULTS.tsv OUT_OF_SCOPE.txt [TEST_REGEX]
//
// RESULTS.tsv has a line per test and subtest, NAME <TAB> pass|fail|skip|timeout
// <TAB> seconds. OUT_OF_SCOPE.txt has a line per test or subtest expected to
// skip or fail, NAME <TAB> skip|fail <TAB> reason; an entry covers the
// subtests under it. The verdict is on the leaves (a test whose subtests
// reported is judged by them): a failure or a skip not listed, a listed leaf
// that passes, and a listed entry of a test that ran with no result under it
// are each a problem. It prints the counts and the problems, and exits 1 if
// there is one. TEST_REGEX, if given, is the run's selection: entries of
// tests it did not select are not looked for.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

type result struct{ name, got string }

func main() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		fmt.Fprintln(os.Stderr, "usage: kgoverdict RESULTS.tsv OUT_OF_SCOPE.txt [TEST_REGEX]")
		os.Exit(2)
	}
	results, err := readResults(os.Args[1])
	if err == nil {
		var listed map[string]string
		if listed, err = readListed(os.Args[2]); err == nil {
			only := ""
			if len(os.Args) == 4 {
				only = os.Args[3]
			}
			var problems []string
			if problems, err = judge(results, listed, only); err == nil {
				for _, p := range problems {
					fmt.Fprintln(os.Stderr, "kgo-suite: "+p)
				}
				if len(problems) > 0 {
					os.Exit(1)
				}
				return
			}
		}
	}
	fmt.Fprintln(os.Stderr, "kgoverdict:", err)
	os.Exit(2)
}

func readResults(path string) ([]result, error) {
	var out []result
	err := eachLine(path, func(f []string) error {
		if len(f) != 3 {
			return fmt.Errorf("%s: a result line needs 3 fields: %q", path, f)
		}
		out = append(out, result{f[0], f[1]})
		return nil
	})
	return out, err
}

func readListed(path string) (map[string]string, error) {
	listed := map[string]string{}
	err := eachLine(path, func(f []string) error {
		if len(f) != 3 || (f[1] != "skip" && f[1] != "fail") {
			return fmt.Errorf("%s: want NAME<TAB>skip|fail<TAB>reason: %q", path, f)
		}
		listed[f[0]] = f[1]
		return nil
	})
	return listed, err
}

// eachLine calls f with the tab-separated fields of each line of path that
// is not empty and not a comment.
func eachLine(path string, f func([]string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	for s.Scan() {
		if line := s.Text(); line != "" && !strings.HasPrefix(line, "#") {
			if err := f(strings.Split(line, "\t")); err != nil {
				return err
			}
		}
	}
	return s.Err()
}

// judge returns the problems of a run, and prints its leaves' counts.
func judge(results []result, listed map[string]string, only string) ([]string, error) {
	sel, err := regexp.Compile(only)
	if err != nil {
		return nil, err
	}
	ran := map[string]bool{}
	for _, r := range results {
		ran[top(r.name)] = true
	}
	counts := map[string]int{}
	seen := map[string]bool{}
	var problems []string
	for _, r := range results {
		if !leaf(r.name, results) {
			continue
		}
		counts[r.got]++
		e := entry(r.name, listed)
		want := listed[e]
		seen[e] = e != ""
		switch {
		case (r.got == "fail" || r.got == "timeout") && want != "fail":
			problems = append(problems, fmt.Sprintf("%s: %s, not listed as expected to fail", r.name, r.got))
		case r.got == "skip" && want != "skip":
			problems = append(problems, r.name+": skipped, not listed (list it, with the reason)")
		case r.got == "pass" && want != "":
			problems = append(problems, fmt.Sprintf("%s: passes, listed as expected to %s: take it off the list", r.name, want))
		}
	}
	for e, want := range listed {
		if !seen[e] && ran[top(e)] && sel.MatchString(top(e)) {
			problems = append(problems, fmt.Sprintf("%s: listed (%s), but no result of it", e, want))
		}
	}
	fmt.Printf("kgo-suite: leaves: %d pass, %d fail, %d timeout, %d skip\n", counts["pass"], counts["fail"], counts["timeout"], counts["skip"])
	return problems, nil
}

func top(name string) string { return strings.SplitN(name, "/", 2)[0] }

// leaf reports whether no result is of a subtest of name.
func leaf(name string, results []result) bool {
	for _, r := range results {
		if strings.HasPrefix(r.name, name+"/") {
			return false
		}
	}
	return true
}

// entry returns the listed entry that covers name: itself or the nearest
// test above it; "" if none.
func entry(name string, listed map[string]string) string {
	parts := strings.Split(name, "/")
	for i := len(parts); i > 0; i-- {
		if e := strings.Join(parts[:i], "/"); listed[e] != "" {
			return e
		}
	}
	return ""
}
