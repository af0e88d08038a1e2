// Package crashout keeps a test process's crash output where a fuzz
// coordinator would lose it. Go's fuzzing coordinator discards its workers'
// standard error, so a worker that dies, from a panic in a goroutine the
// target started or from the fuzzer's own "deadlocked!" panic when one input
// runs for over 10 s, leaves only "fuzzing process hung or terminated
// unexpectedly" and an input that may pass when run alone. It is for tests
// only.
package crashout

import (
	"fmt"
	"os"
	"runtime/debug"
)

// Dir names the environment variable that turns Keep on: a directory that
// exists, where each process writes a file of its own. .ci/run sets it while
// fuzzing and prints the files that are not empty when a target fails.
const Dir = "PURGATORY_CRASH_DIR"

// Keep sends the process's crash output, with every goroutine's stack rather
// than the crashing one's alone, to a new file in $PURGATORY_CRASH_DIR, as
// well as to standard error; without the variable it does nothing. Call it
// first in TestMain. A file it cannot make is reported on standard error and
// leaves the crash output as it was.
func Keep() {
	dir := os.Getenv(Dir)
	if dir == "" {
		return
	}
	f, err := os.CreateTemp(dir, "crash-*.txt")
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashout: crash output stays on standard error only: %v\n", err)
		return
	}
	defer f.Close() // SetCrashOutput keeps a duplicate of the descriptor
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "crashout: crash output stays on standard error only: %v\n", err)
		return
	}
	debug.SetTraceback("all")
}
