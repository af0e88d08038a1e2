package main

import (
	"slices"
	"strings"
	"testing"
)

// TestJudge: every way a run can go wrong against the list is a problem, and
// a run that matches the list is none.
func TestJudge(t *testing.T) {
	listed := map[string]string{"TestTxn": "fail", "TestGroup/848": "skip", "TestSCRAM": "skip"}
	results := []result{
		{"TestPing", "pass"},
		{"TestTxn", "timeout"},      // listed as fail: a timeout is one
		{"TestGroup", "pass"},       // not a leaf
		{"TestGroup/848", "skip"},   // not a leaf: judged by its subtest
		{"TestGroup/848/s", "skip"}, // covered by TestGroup/848
		{"TestGroup/range", "pass"},
		{"TestSCRAM", "skip"},
	}
	if problems, err := judge(results, listed, ""); err != nil || len(problems) != 0 {
		t.Fatalf("a run as listed: problems %q, error %v", problems, err)
	}
	for _, tc := range []struct {
		change result
		want   string
	}{
		{result{"TestPing", "fail"}, "TestPing: fail, not listed"},
		{result{"TestPing", "skip"}, "TestPing: skipped, not listed"},
		{result{"TestTxn", "pass"}, "TestTxn: passes, listed as expected to fail"},
		{result{"TestGroup/848/s", "pass"}, "TestGroup/848/s: passes, listed as expected to skip"},
		{result{"TestSCRAM/sub", "pass"}, "TestSCRAM/sub: passes"},
	} {
		rs := slices.Clone(results)
		i := slices.IndexFunc(rs, func(r result) bool { return r.name == tc.change.name })
		if i < 0 {
			rs = append(rs, tc.change)
		} else {
			rs[i] = tc.change
		}
		problems, _ := judge(rs, listed, "")
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, tc.want) }) {
			t.Errorf("%v: problems %q; want one starting %q", tc.change, problems, tc.want)
		}
	}
	// A listed test that ran with no result of the entry: the list is stale.
	problems, _ := judge([]result{{"TestSCRAM", "pass"}, {"TestSCRAM/a", "pass"}}, map[string]string{"TestSCRAM/b": "skip"}, "")
	if len(problems) != 1 || !strings.Contains(problems[0], "no result of it") {
		t.Errorf("a stale entry: problems %q", problems)
	}
	// One the run did not select is not looked for.
	if problems, _ := judge([]result{{"TestPing", "pass"}}, listed, "Ping"); len(problems) != 0 {
		t.Errorf("entries of tests not selected: problems %q", problems)
	}
}
