package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a server under test, a child process, so that its CPU is its own.
type server struct {
	cmd  *exec.Cmd
	addr string
}

// serverProcs is the example's GOMAXPROCS (0: Go's default, the CPUs).
var serverProcs int

// systems are the servers measured: the example, and Debian's redis-server;
// and the example at -baseline's revision, if given.
var systems = []string{"purgatory", "redis-server"}

// baseline is -baseline: a git revision of the example to measure too.
var baseline string

// labels name the systems in the report and the charts.
var labels = map[string]string{"purgatory": "examples/redis (purgatory)", "redis-server": "redis-server 7.0.15"}

// build compiles the example into dir and finds redis-server; it returns the
// command line of each system.
func build(dir string) (map[string][]string, error) {
	bin := filepath.Join(dir, "redis")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build (run the load test from examples/redis): %w", err)
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found: install it (apt-get install redis-server, or run ./redis-suite.sh once): %w", err)
	}
	bins := map[string][]string{
		"purgatory":    {bin, "-addr", "127.0.0.1:0", "-metrics-addr", ""},
		"redis-server": {redis, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"},
	}
	if baseline != "" {
		old, err := buildAt(dir, baseline)
		if err != nil {
			return nil, err
		}
		bins["baseline"] = []string{old, "-addr", "127.0.0.1:0", "-metrics-addr", ""}
		systems = []string{"purgatory", "baseline", "redis-server"}
		labels["baseline"] = "examples/redis at " + baseline
	}
	return bins, nil
}

// buildAt compiles the example as it was at git revision rev into dir: the
// repository's tree at rev (git archive), built in a directory of its own.
func buildAt(dir, rev string) (string, error) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("-baseline needs the example's git repository: %w", err)
	}
	src := filepath.Join(dir, "baseline-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", strings.TrimSpace(string(top)), rev, src)
	archive.Stderr = os.Stderr
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("-baseline %s: git archive: %w", rev, err)
	}
	bin := filepath.Join(dir, "redis-baseline")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(src, "examples", "redis")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("-baseline %s: go build: %w", rev, err)
	}
	return bin, nil
}

// start runs a system. The example prints the address it got; redis-server
// is given a free port and polled until it answers.
func start(system string, argv []string, profile string) (*server, error) {
	args := append([]string(nil), argv[1:]...)
	port := ""
	if system == "redis-server" {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		port = p
		args = append(args, "--port", port)
	} else if profile != "" {
		args = append(args, "-cpuprofile", profile)
	}
	cmd := exec.Command(argv[0], args...)
	if system != "redis-server" && serverProcs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(serverProcs))
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	lines := bufio.NewScanner(out)
	if system == "redis-server" {
		go func() {
			for lines.Scan() {
			}
		}()
		s.addr = "127.0.0.1:" + port
		for range 100 {
			if c, err := net.Dial("tcp", s.addr); err == nil {
				c.Close()
				return s, nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		s.kill()
		return nil, fmt.Errorf("redis-server did not listen on %s within 5 s", s.addr)
	}
	if !lines.Scan() {
		s.kill()
		return nil, fmt.Errorf("%s printed nothing: %v", argv[0], cmd.Wait())
	}
	f := strings.Fields(lines.Text())
	if len(f) < 4 || f[1] != "listening" {
		s.kill()
		return nil, fmt.Errorf("%s: first line %q, want redis: listening on ADDR", argv[0], lines.Text())
	}
	s.addr = f[3]
	go func() {
		for lines.Scan() {
		}
	}()
	return s, nil
}

// freePort returns a port of the loopback free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
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

// rss returns the server's resident set size now, in bytes.
func (s *server) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
}

// stop ends the server with SIGTERM, as an operator would.
func (s *server) stop() error {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		s.kill()
		return fmt.Errorf("%s did not stop within 15 s of SIGTERM", s.cmd.Path)
	}
}

func (s *server) kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}
