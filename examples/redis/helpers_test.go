package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind. Those running
// before any test are not the tests': gnet's package starts a worker pool
// (ants) when it is initialised, for the process.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

// testServer starts a server on a free port of the loopback, shut down when
// the test ends; queryLimit, if not 0, is its client-query-buffer-limit.
func testServer(t testing.TB, queryLimit ...int64) (*server, string) {
	t.Helper()
	limit := int64(defaultQueryBufferLimit)
	if len(queryLimit) > 0 {
		limit = queryLimit[0]
	}
	s, err := newServer(defaultConfig(limit), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.shutdown(ctx))
		require.NoError(t, <-served)
	})
	return s, ln.Addr().String()
}

// onLoop runs f on s's loop and waits for it: what the loop owns is read
// there.
func onLoop(t testing.TB, s *server, f func()) {
	t.Helper()
	s.lnMu.Lock()
	lp := s.loop
	s.lnMu.Unlock()
	done := make(chan struct{})
	require.True(t, lp.run(func() { f(); close(done) }), "the loop has stopped")
	<-done
}

// raw is a client that speaks RESP by hand: it sends commands and reads each
// reply as a Go value (a string for +, -, $ and :, nil for a null, []any for
// an array), so tests see exactly what the server wrote.
type raw struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

func dial(t testing.TB, addr string) *raw {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &raw{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// send writes a command as a multibulk.
func (c *raw) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := c.conn.Write([]byte(b.String()))
	require.NoError(c.t, err)
}

// do sends a command and reads its reply.
func (c *raw) do(args ...string) any {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// read reads one reply; an error reply is "-" and its text.
func (c *raw) read() any {
	c.t.Helper()
	v, err := readReply(c.r)
	require.NoError(c.t, err)
	return v
}

// readReply parses one RESP2 or RESP3 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "-" + body, nil
	case '_':
		return nil, nil
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*', '%', '~':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		if line[0] == '%' {
			n *= 2
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply line %q", line)
}

// blockedClients reads INFO's blocked_clients.
func blockedClients(t testing.TB, c *raw) int {
	t.Helper()
	info := c.do("info", "clients").(string)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("INFO has no blocked_clients: %q", info)
	return 0
}

// waitBlocked waits until n clients are blocked, as Redis's tests do
// (wait_for_blocked_clients_count): the server counts a client once it is
// watched.
func waitBlocked(t testing.TB, c *raw, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return blockedClients(t, c) == n }, 10*time.Second, time.Millisecond,
		"waiting for %d blocked clients", n)
}
