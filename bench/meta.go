package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// meta is where and from what a run's figures come: results.json's first
// line, and RESULTS.md's first sentence, so that a figure copied anywhere
// can be dated by its commit and machine.
type meta struct {
	// Workloads are the workloads this meta is for, when a run was merged
	// into an earlier one (-merge); empty for the run the rest are from.
	Workloads []string `json:"workloads,omitempty"`
	Commit    string   `json:"commit"`  // the checkout's commit, "-dirty" if it had changes
	Machine   string   `json:"machine"` // CPUs, model, kernel
	Go        string   `json:"go"`      // the Go version and GOMAXPROCS
	Date      string   `json:"date"`    // UTC, of the run
	Command   string   `json:"command"` // how the bench was started
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

// metas are the metas of a results file: the main run's, and those of
// workloads merged into it since.
type metas []meta

// main returns the main run's meta.
func (ms metas) main() meta {
	for _, m := range ms {
		if len(m.Workloads) == 0 {
			return m
		}
	}
	if len(ms) > 0 {
		return ms[0]
	}
	return meta{}
}

// of returns the meta of a workload merged in later, if it was.
func (ms metas) of(workload string) (meta, bool) {
	for _, m := range ms {
		if slices.Contains(m.Workloads, workload) {
			return m, true
		}
	}
	return meta{}, false
}

// merged returns ms with the workloads of m, a run merged in now, moved to
// m's meta.
func (ms metas) merged(m meta) metas {
	var out metas
	for _, old := range ms {
		if len(old.Workloads) > 0 {
			old.Workloads = slices.DeleteFunc(slices.Clone(old.Workloads), func(w string) bool { return slices.Contains(m.Workloads, w) })
			if len(old.Workloads) == 0 {
				continue
			}
		}
		out = append(out, old)
	}
	return append(out, m)
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
