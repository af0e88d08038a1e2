package sched

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCheckerCatchesFaults is the interleaving checker's mutation test
// (issue 70, item 4; CI's long step, PURGATORY_MUTATION=1): each known
// fault, a patch of the library's code in testdata/faults, is applied to a
// copy of the module, and the checker, run on the fault's package, must
// fail on it with a scenario and the schedule that shows it. The library
// itself holds no fault switches.
func TestCheckerCatchesFaults(t *testing.T) {
	if os.Getenv("PURGATORY_MUTATION") != "1" {
		t.Skip("the checker's mutation test: set PURGATORY_MUTATION=1 (CI's long step); it compiles the checker once per fault")
	}
	patches, err := filepath.Glob("testdata/faults/*.patch")
	if err != nil || len(patches) == 0 {
		t.Fatalf("no faults in testdata/faults: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, patch := range patches {
		t.Run(strings.TrimSuffix(filepath.Base(patch), ".patch"), func(t *testing.T) { catch(t, root, patch) })
	}
}

// caught is how a checker run that failed names what caught the fault.
// deadlocked is how a checker run names the scenario whose bubble
// deadlocked, which synctest reports with a panic instead of the checker's
// trace.
var deadlocked = regexp.MustCompile(`(?s)--- FAIL: TestEveryInterleaving/(\S+) .*panic: deadlock`)

var caught = regexp.MustCompile(`scenario "([^"]+)": (.*)\n(?:.*\n)*?\s*after (\d+) steps`)

// catch applies patch to a copy of the module at root and runs the checker
// on the patch's package, which must fail with a scenario's trace.
func catch(t *testing.T, root, patch string) {
	desc, pkg := header(t, patch)
	dir := t.TempDir()
	copyModule(t, root, dir)
	abs, _ := filepath.Abs(patch)
	if out, err := exec.Command("git", "-C", dir, "apply", abs).CombinedOutput(); err != nil {
		t.Fatalf("the patch does not apply (the code moved on: make it again): %v\n%s", err, out)
	}
	start := time.Now()
	cmd := exec.Command("go", "test", "-tags", "purgatorycheck", "-count=1", "-failfast", "-run", "TestEveryInterleaving", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PURGATORY_LONG=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("fault %q: the checker passed it", desc)
	}
	m := caught.FindSubmatch(out)
	if m == nil {
		if d := deadlocked.FindSubmatch(out); d != nil { // the checker has no trace for a bubble that deadlocks
			t.Logf("fault %q: caught by %q, which deadlocked (no trace), in %v", desc, d[1], time.Since(start).Round(time.Second))
			return
		}
		t.Fatalf("fault %q: the checker failed without a scenario's trace:\n%s", desc, tail(out))
	}
	t.Logf("fault %q: caught by %q, a schedule of %s steps, in %v: %s", desc, m[1], m[3], time.Since(start).Round(time.Second), m[2])
}

// header reads a fault's description and package from its patch's first
// lines ("fault: …", "package: …").
func header(t *testing.T, patch string) (desc, pkg string) {
	f, err := os.Open(patch)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() && (desc == "" || pkg == "") {
		if v, ok := strings.CutPrefix(sc.Text(), "fault: "); ok {
			desc = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "package: "); ok {
			pkg = v
		}
	}
	if desc == "" || pkg == "" {
		t.Fatalf("%s: no fault: or package: line", patch)
	}
	return desc, pkg
}

// copyModule copies the module's library, without the examples, the
// benchmarks and the git directory, to dir.
func copyModule(t *testing.T, root, dir string) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "examples", "bench", "docs", "_readme":
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
