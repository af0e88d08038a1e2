package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// meta is where and from what a run's figures come: results.json's first
// line, and RESULTS.md's first sentence, so that a figure copied anywhere
// can be dated by its commit and machine.
type meta struct {
	Commit  string `json:"commit"`  // the checkout's commit, "-dirty" if it had changes
	Machine string `json:"machine"` // CPUs, model, kernel
	Go      string `json:"go"`      // the Go version and GOMAXPROCS
	Date    string `json:"date"`    // UTC, of the run
	Command string `json:"command"` // how the bench was started
}

// newMeta describes this run.
func newMeta() meta {
	return meta{
		Commit:  commit(),
		Machine: machine(),
		Go:      fmt.Sprintf("%s/%s, GOMAXPROCS=%d", runtime.Version(), runtime.GOARCH, runtime.GOMAXPROCS(0)),
		Date:    time.Now().UTC().Format("2006-01-02"),
		Command: "go -C bench run . " + strings.Join(os.Args[1:], " "),
	}
}

// String is RESULTS.md's first sentence.
func (m meta) String() string {
	return fmt.Sprintf("Measured %s at commit %s on %s, %s (`%s`).", m.Date, m.Commit, m.Machine, m.Go, m.Command)
}

// commit returns the short commit of the checkout the bench runs in, with
// "-dirty" if the library or the bench has uncommitted changes, or "unknown".
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if dirty, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", "..").Output(); err == nil && len(dirty) > 0 {
		c += "-dirty"
	}
	return c
}

// machine describes the machine the run is on.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "model name") {
				model = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	kernel := ""
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		kernel = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d CPUs (%s), %s", runtime.NumCPU(), model, kernel)
}
