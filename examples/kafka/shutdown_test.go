package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShutdownAnswersEveryParkedRequest: Shutdown answers the fetches parked
// on every connection (with what there is) and a produce waiting for a
// stalled follower (NOT_LEADER_FOR_PARTITION: nothing unreplicated is
// acknowledged), then closes the connections.
func TestShutdownAnswersEveryParkedRequest(t *testing.T) {
	b, err := NewBroker(Config{Replicas: 2, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := createTopics(b, "idle:8"); err != nil {
		t.Fatal(err)
	}
	addr, served := serveLoopback(t, b)
	b.StallFollowers(true)

	const conns, perConn = 4, 25
	var cs []*rawConn
	for i := range conns {
		c := dialRaw(t, addr)
		for j := range perConn {
			if err := c.send(fetchReq("idle", int32((i+j)%8), 0, time.Minute, 1)); err != nil {
				t.Fatal(err)
			}
		}
		cs = append(cs, c)
	}
	producer := dialRaw(t, addr)
	if err := producer.send(produceReq(t, "idle", 7, -1, time.Minute, "never replicated")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return b.fetches.Delayed() >= conns*perConn && b.produces.Delayed() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	for i, c := range cs {
		for j := range perConn {
			resp, err := c.recv()
			if err != nil {
				t.Fatalf("connection %d, fetch %d: %v", i, j, err)
			}
			if p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
				t.Errorf("connection %d, fetch %d: error %d", i, j, p.ErrorCode)
			}
		}
		if _, err := c.recv(); !errors.Is(err, io.EOF) {
			t.Errorf("connection %d after its answers: %v, want EOF", i, err)
		}
	}
	resp, err := producer.recv()
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("parked produce at shutdown: error %d, want NOT_LEADER_FOR_PARTITION (6)", p.ErrorCode)
	}
	if s := b.fetches.Stats(); s.Closed < conns*perConn {
		t.Errorf("fetch purgatory: %d closed, want at least %d", s.Closed, conns*perConn)
	}
}

func serveLoopback(t *testing.T, b *Broker) (string, chan error) {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	return ln.Addr().String(), served
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
	}
}

// TestSIGTERMAnswersParkedFetches runs the command itself, parks fetches on
// it, sends it SIGTERM, and checks that every fetch is answered and the
// command exits cleanly.
func TestSIGTERMAnswersParkedFetches(t *testing.T) {
	cmd, lines, addr := startCommand(t, "-topics", "idle:4", "-replicas", "3")

	const parked = 40
	c := dialRaw(t, addr)
	for i := range parked {
		if err := c.send(fetchReq("idle", int32(i%4), 0, time.Minute, 1)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // let them park; they are answered either way
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i := range parked {
		if _, err := c.recv(); err != nil {
			t.Fatalf("fetch %d of %d: %v", i+1, parked, err)
		}
	}
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("command: %v; output %q", err, out)
	}
	if len(out) == 0 || !strings.Contains(out[len(out)-1], "stopped") {
		t.Errorf("last lines %q: want the stop summary", out)
	}
	t.Logf("SIGTERM to exit, %d fetches answered: %v; %q", parked, time.Since(start), out)
}

// TestFaultDrill runs the command with -stall-followers: an acks=all produce
// times out, since no follower copies it; SIGUSR1 resumes the followers, and
// the next one is acknowledged.
func TestFaultDrill(t *testing.T) {
	cmd, lines, addr := startCommand(t, "-topics", "drill:1", "-replicas", "3", "-stall-followers")
	next := func(want string) string {
		t.Helper()
		if !lines.Scan() || !strings.Contains(lines.Text(), want) {
			t.Fatalf("line %q: want one with %q (%v)", lines.Text(), want, lines.Err())
		}
		return lines.Text()
	}
	next("followers stalled")
	c := dialRaw(t, addr)
	produce := func(timeout time.Duration) int16 {
		t.Helper()
		resp, err := c.do(produceReq(t, "drill", 0, -1, timeout, "drill"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(300 * time.Millisecond); code != kerr.RequestTimedOut.Code {
		t.Errorf("acks=all with the followers stalled: error %d, want REQUEST_TIMED_OUT (7)", code)
	}
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	next("followers resumed")
	if code := produce(time.Minute); code != 0 {
		t.Errorf("acks=all after SIGUSR1: error %d, want 0", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("command: %v", err)
	}
}

// startCommand runs the command itself (TestMain runs main in the child)
// with args, on a port of its own and without metrics, and returns it, its
// output after the first line, and the address that line names. The child
// is killed when the test ends, if it still runs.
func startCommand(t *testing.T, args ...string) (*exec.Cmd, *bufio.Scanner, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-addr", "127.0.0.1:0", "-metrics-addr", ""}, args...)...)
	cmd.Env = append(os.Environ(), "KAFKA_EXAMPLE_RUN_MAIN=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("no first line from the command: %v", lines.Err())
	}
	fields := strings.Fields(lines.Text())
	if len(fields) < 4 || !strings.Contains(lines.Text(), "listening on") {
		t.Fatalf("first line %q names no address", lines.Text())
	}
	return cmd, lines, fields[3]
}
