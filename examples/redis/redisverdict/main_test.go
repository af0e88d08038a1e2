package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logs writes one log per file into a new directory.
func logs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name+".log"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The verdict on a run like the real one: coloured lines, names repeated
// across files and within one, an exception that ends a file's run, a
// listed test that fails, and every kind of problem the verdict reports.
func TestJudge(t *testing.T) {
	ref, err := readRun(logs(t, map[string]string{
		"list":   "Testing unit/type/list\n\x1b[0;32;49mok\x1b[0m]\n[\x1b[0;32;49mok\x1b[0m]: BLPOP basics (1 ms)\n[ok]: dump test (0 ms)\n[ok]: after dump (2 ms)\n[ok]: shared name (1 ms)\n",
		"list-3": "[ok]: shared name (1 ms)\n[ok]: flaky one (3 ms)\n[ok]: twice (1 ms)\n[ok]: twice (2 ms)\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[key]string{
		{"unit/type/list", "dump test"}:  "DUMP/RESTORE is out of scope",
		{"unit/type/list", "after dump"}: "runs after the dump test's exception",
	}

	ours, err := readRun(logs(t, map[string]string{
		"list":   "[ok]: BLPOP basics (1 ms)\n[exception]: Executing test client: ERR unknown command 'dump'\n",
		"list-3": "[ok]: shared name (1 ms)\n[err]: flaky one in tests/unit/type/list-3.tcl\n[ok]: twice (1 ms)\n[err]: twice in tests/unit/type/list-3.tcl\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	problems := judge(ours, ref, listed)
	want := []string{
		`unit/type/list-3: "flaky one" failed`,
		`unit/type/list-3: "twice" failed (1 of its 2 tests passed)`,
		`unit/type/list: "shared name" did not run: an exception ended its file's run: Executing test client: ERR unknown command 'dump'`,
	}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want %q", problems, want)
	}
	for i := range want {
		if problems[i] != want[i] {
			t.Errorf("problem %d: %q, want %q", i, problems[i], want[i])
		}
	}

	if passing, all := countIn(ours.passed, ref.passed); passing != 3 || all != 8 {
		t.Errorf("countIn: %d of %d pass, want 3 of 8", passing, all)
	}

	// A listed test that passes now, and a stale entry.
	listed[key{"unit/type/list", "BLPOP basics"}] = "was out of scope"
	listed[key{"unit/type/list", "gone"}] = "no such test"
	problems = judge(ours, ref, listed)
	joined := strings.Join(problems, "\n")
	for _, w := range []string{`"BLPOP basics" passes: it is in scope now`, `"gone" is listed but did not pass against redis-server`} {
		if !strings.Contains(joined, w) {
			t.Errorf("no problem %q in %q", w, problems)
		}
	}
}

func TestReadListed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	os.WriteFile(path, []byte("# comment\n\nunit/type/list\tdump test\tDUMP is out of scope\n"), 0o644)
	listed, err := readListed(path)
	if err != nil || listed[key{"unit/type/list", "dump test"}] != "DUMP is out of scope" {
		t.Fatalf("listed %v, err %v", listed, err)
	}
	os.WriteFile(path, []byte("unit/type/list\tno reason\n"), 0o644)
	if _, err := readListed(path); err == nil {
		t.Fatal("a line without a reason was taken")
	}
}
