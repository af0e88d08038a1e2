package crashout_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purgatory-go/purgatory/internal/crashout"
)

// TestKeepWritesAGoroutinesPanicWithEveryStack runs this test binary again as a
// child that calls Keep and then panics in a goroutine of its own, as a fuzz
// worker does when the code under test panics off the fuzz function's
// goroutine, and reads what the child left in the directory.
func TestKeepWritesAGoroutinesPanicWithEveryStack(t *testing.T) {
	if os.Getenv("CRASHOUT_CHILD") == "1" {
		crashout.Keep()
		parked := make(chan struct{})
		go func() { <-parked }() // a goroutine only "traceback all" shows
		go func() { panic("a panic off the test's goroutine") }()
		<-parked
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeepWritesAGoroutinesPanicWithEveryStack$")
	cmd.Env = append(os.Environ(), "CRASHOUT_CHILD=1", crashout.Dir+"="+dir)
	err := cmd.Run() // its standard error is discarded, as a fuzz worker's is
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("child: %v; want exit status 2 from its panic", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "crash-*.txt"))
	if len(files) != 1 {
		t.Fatalf("files in %s: %q; want one", dir, files)
	}
	out, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"panic: a panic off the test's goroutine",
		"TestKeepWritesAGoroutinesPanicWithEveryStack.func1", // the parked goroutine: every stack, not the crashing one's alone
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("crash output lacks %q:\n%s", want, out)
		}
	}
}
