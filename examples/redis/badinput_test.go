package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// bystander is a client blocked on a key before the bad input comes: check
// says it is still blocked, then serves it, so a test shows the bad client
// left the others alone.
type bystander struct {
	t    *testing.T
	w, r *raw
}

func newBystander(t *testing.T, addr string) *bystander {
	b := &bystander{t: t, w: dial(t, addr), r: dial(t, addr)}
	b.w.send("blpop", "bystander", "0")
	waitBlocked(t, b.r, 1)
	return b
}

func (b *bystander) check() {
	b.t.Helper()
	require.Equal(b.t, "PONG", b.r.do("ping"))
	require.Equal(b.t, 1, blockedClients(b.t, b.r), "the bystander is still blocked")
	require.Equal(b.t, "1", b.r.do("rpush", "bystander", "still served"))
	require.Equal(b.t, []any{"bystander", "still served"}, b.w.read())
}

// closed reports whether the server closed c's connection: its next read
// ends with EOF (or a reset, if bytes sent were left unread).
func closed(c *raw) bool {
	_, err := c.r.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// A bulk length over proto-max-bulk-len (512 MB) is refused with Redis's
// protocol error, and the connection closed.
func TestBulkTooLong(t *testing.T) {
	_, addr := testServer(t)
	b := newBystander(t, addr)
	c := dial(t, addr)
	_, err := c.conn.Write([]byte("*2\r\n$4\r\nECHO\r\n$536870913\r\n"))
	require.NoError(t, err)
	require.Equal(t, "-ERR Protocol error: invalid bulk length", c.read())
	require.True(t, closed(c))
	b.check()
}

// An inline command over 64 KiB is refused, and the connection closed.
func TestInlineTooLong(t *testing.T) {
	_, addr := testServer(t)
	b := newBystander(t, addr)
	c := dial(t, addr)
	_, err := c.conn.Write([]byte("ECHO " + strings.Repeat("x", 70<<10)))
	require.NoError(t, err)
	require.Equal(t, "-ERR Protocol error: too big inline request", c.read())
	require.True(t, closed(c))
	b.check()
}

// A command past client-query-buffer-limit closes the connection without an
// answer, as Redis's does; one under it is served.
func TestQueryBufferLimit(t *testing.T) {
	const limit = 1 << 20
	_, addr := testServer(t, limit)
	b := newBystander(t, addr)

	c := dial(t, addr)
	under := strings.Repeat("u", limit/2)
	require.Equal(t, under, c.do("echo", under))

	over := strings.Repeat("o", limit)
	go func() { // the server may close before it has read it all
		fmt.Fprintf(c.conn, "*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(over), over)
	}()
	require.True(t, closed(c), "closed, with no answer")
	b.check()
}

// BLPOP with 100,000 keys blocks on all of them, and is served by a push to
// the last; another such BLPOP times out.
func TestBlpopWithManyKeys(t *testing.T) {
	_, addr := testServer(t)
	b := newBystander(t, addr)
	const n = 100_000
	args := []string{"blpop"}
	for i := range n {
		args = append(args, "k"+strconv.Itoa(i))
	}
	w := dial(t, addr)
	w.send(append(args, "0")...)
	waitBlocked(t, b.r, 2)
	require.Equal(t, "1", b.r.do("rpush", "k99999", "last"))
	require.Equal(t, []any{"k99999", "last"}, w.read())
	require.Nil(t, w.do(append(args, "0.01")...))
	b.check()
}

// Values read as big bulks (mapped off the heap, unmapped once their command
// has run) outlive their read: what a command keeps, it copies. A list's
// element, a string, an LSET and an LINSERT all read back intact after other
// big bulks have come and gone.
func TestBigValuesOutliveTheirRead(t *testing.T) {
	_, addr := testServer(t)
	c := dial(t, addr)
	big := func(b byte) string { return strings.Repeat(string(b), 3<<20) }
	require.Equal(t, "1", c.do("rpush", "l", big('a')))
	require.Equal(t, "OK", c.do("set", "s", big('b')))
	require.Equal(t, "2", c.do("rpush", "l", "x"))
	require.Equal(t, "OK", c.do("lset", "l", "1", big('c')))
	require.Equal(t, "3", c.do("linsert", "l", "before", big('a'), big('d')))
	for range 3 {
		require.Equal(t, big('e'), c.do("echo", big('e')))
	}
	require.Equal(t, []any{big('d'), big('a'), big('c')}, c.do("lrange", "l", "0", "-1"))
	require.Equal(t, big('b'), c.do("get", "s"))
}
