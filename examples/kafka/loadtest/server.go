package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a broker under test, a child process, so that its CPU is its own.
type server struct {
	cmd  *exec.Cmd
	addr string
}

// build compiles the example broker and the kfake reference into dir.
func build(dir string) (map[string]string, error) {
	bins := map[string]string{"purgatory": filepath.Join(dir, "kafka"), "purgatory-r1": filepath.Join(dir, "kafka"), "kfake": filepath.Join(dir, "kfake")}
	for name, pkg := range map[string]string{"purgatory": ".", "kfake": "./loadtest/kfake"} { // purgatory-r1 is the same binary
		cmd := exec.Command("go", "build", "-o", bins[name], pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go build %s (run the load test from examples/kafka): %w", pkg, err)
		}
	}
	return bins, nil
}

// start runs a server; profile, if not empty, is where the example broker
// writes its CPU profile.
func start(bin, topics string, replicas int, profile string) (*server, error) {
	args := []string{"-addr", "127.0.0.1:0", "-topics", topics}
	if !strings.HasSuffix(bin, "kfake") {
		// kfake's group coordinator has no initial rebalance delay.
		args = append(args, "-metrics-addr", "", "-replicas", strconv.Itoa(replicas), "-group-initial-rebalance-delay", "0")
		if profile != "" {
			args = append(args, "-cpuprofile", profile)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		cmd.Process.Kill()
		return nil, fmt.Errorf("%s printed nothing: %v", bin, cmd.Wait())
	}
	f := strings.Fields(lines.Text())
	if len(f) < 4 || f[1] != "listening" {
		cmd.Process.Kill()
		return nil, fmt.Errorf("%s: first line %q", bin, lines.Text())
	}
	go func() { // the rest of its output, until it exits
		for lines.Scan() {
		}
	}()
	return &server{cmd: cmd, addr: f[3]}, nil
}

// cpu returns the CPU time the server has used so far (user and system).
func (s *server) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / hz, nil
}

func (s *server) stop() error {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within 15 s of SIGTERM", s.cmd.Path)
	}
}
