// Package history checks a Redis-protocol server's lists as Jepsen checks
// queues: clients run a workload over the wire, some are killed mid-command,
// every operation's call and return times are recorded, and the history is
// checked afterwards, with nothing of the server's inside known. Two
// workloads, each with its checker:
//
//   - the queue (queue.go, queuecheck.go): producers push unique values,
//     consumers take them with every kind of pop, blocking or not, and the
//     history is checked for lost, duplicated, unexpected and recovered
//     values (Jepsen's total-queue), each producer's order through a list
//     (FIFO), and blocking pops that answered nil while their list held a
//     value for the whole wait;
//   - list-append (appendtxn.go): transactions of appends and reads on three
//     keys, checked for linearizability with porcupine (Elle's list-append
//     workload, as Jepsen's Redis tests run it).
//
// It runs against any server that speaks RESP2: examples/redis's tests run it
// against this server and, as the control, against redis-server 7.0.15.
package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// conn is a client connection that speaks RESP2 by hand, so that a command
// can be written and the connection then killed before its reply is read.
type conn struct {
	c  net.Conn
	r  *bufio.Reader
	id int64 // the server's id of this client, if asked (CLIENT ID)
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// errReply is an error reply of the server's.
type errReply string

func (e errReply) Error() string { return string(e) }

// write writes the commands in one write.
func (c *conn) write(cmds ...[]string) error {
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	_, err := io.WriteString(c.c, b.String())
	return err
}

// do writes one command and reads its reply.
func (c *conn) do(args ...string) (any, error) {
	if err := c.write(args); err != nil {
		return nil, err
	}
	return c.read()
}

// read reads one reply: a string (+, :, $), nil (a null), []any (*), or an
// errReply as the error.
func (c *conn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("history: an empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return nil, errReply(body)
	case '$':
		return c.bulk(body)
	case '*':
		return c.array(body)
	}
	return nil, fmt.Errorf("history: an unexpected reply line %q", line)
}

func (c *conn) bulk(n string) (any, error) {
	size, err := strconv.Atoi(n)
	if err != nil || size < 0 {
		return nil, err
	}
	buf := make([]byte, size+2)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return nil, err
	}
	return string(buf[:size]), nil
}

func (c *conn) array(n string) (any, error) {
	size, err := strconv.Atoi(n)
	if err != nil || size < 0 {
		return nil, err
	}
	out := make([]any, size)
	for i := range out {
		if out[i], err = c.read(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kill ends the connection as a killed client's does: with a reset (RST,
// SO_LINGER 0) or, with rst false, a half-close that the server reads as
// the end of its input, then the rest.
func (c *conn) kill(rst bool) {
	if tc, ok := c.c.(*net.TCPConn); ok {
		if rst {
			tc.SetLinger(0)
		} else {
			tc.CloseWrite()
			time.Sleep(time.Millisecond)
		}
	}
	c.c.Close()
}

func (c *conn) close() { c.c.Close() }

// strs reads a reply that is an array of bulks.
func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
