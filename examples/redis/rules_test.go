package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
)

// bubbleServer starts a server inside a synctest bubble, its clients on
// in-memory pipes, shut down when the test ends. dial opens a client.
func bubbleServer(t *testing.T) (s *server, dial func() *raw) {
	t.Helper()
	s, err := newServer(defaultConfig(defaultQueryBufferLimit), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	require.NoError(t, err)
	ln := testkit.NewPipeListener()
	served := make(chan error, 1)
	go func() { served <- s.serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, s.shutdown(context.Background()))
		require.NoError(t, <-served)
	})
	return s, func() *raw {
		conn, err := ln.Dial(context.Background(), "", "")
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		return &raw{t: t, conn: conn, r: bufio.NewReader(conn)}
	}
}

// Clients blocked on a key are served in the order they blocked, one element
// each, from their own end of the list, after the command that pushed.
func TestServedInTheOrderTheyBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, dial := bubbleServer(t)
		r := dial()
		waiters := []*raw{dial(), dial(), dial()}
		waiters[0].send("blpop", "k", "0")
		synctest.Wait()
		waiters[1].send("brpop", "k", "0")
		synctest.Wait()
		waiters[2].send("blpop", "k", "0")
		synctest.Wait()
		require.Equal(t, 3, blockedClients(t, r))
		require.Equal(t, "4", r.do("rpush", "k", "a", "b", "c", "d"))
		require.Equal(t, []any{"k", "a"}, waiters[0].read())
		require.Equal(t, []any{"k", "d"}, waiters[1].read(), "the second pops from its own end")
		require.Equal(t, []any{"k", "b"}, waiters[2].read())
		require.Equal(t, []any{"c"}, r.do("lrange", "k", "0", "-1"))
		require.Equal(t, 0, blockedClients(t, r))
	})
}

// Keys made ready by a command are served after the whole command or EXEC,
// with the list as it then is: LPUSH then DEL in one MULTI wakes nobody, and
// keys made ready in one EXEC are served in the order they became ready.
func TestServedAfterTheCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, dial := bubbleServer(t)
		r, w := dial(), dial()
		w.send("blpop", "a", "b", "0")
		synctest.Wait()
		require.Equal(t, "OK", r.do("multi"))
		require.Equal(t, "QUEUED", r.do("lpush", "a", "x"))
		require.Equal(t, "QUEUED", r.do("del", "a"))
		require.Equal(t, []any{"1", "1"}, r.do("exec"))
		synctest.Wait()
		require.Equal(t, 1, blockedClients(t, r), "the list was gone by the end of EXEC")

		require.Equal(t, "OK", r.do("multi"))
		r.do("rpush", "b", "from-b")
		r.do("rpush", "a", "from-a")
		require.Equal(t, []any{"1", "1"}, r.do("exec"))
		require.Equal(t, []any{"b", "from-b"}, w.read(), "b became ready first, though the client lists a first")
		require.Equal(t, []any{"from-a"}, r.do("lrange", "a", "0", "-1"))
	})
}

// A served BLMOVE pushes to its destination, whose blocked clients are then
// served in the same pass; a BLMOVE whose destination holds another type
// gets WRONGTYPE and leaves the element for the next client; WATCH on the
// destination is spoiled.
func TestBlmoveHandsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, dial := bubbleServer(t)
		r, mover, popper, watcher := dial(), dial(), dial(), dial()
		require.Equal(t, "OK", watcher.do("watch", "dst"))
		mover.send("blmove", "src", "dst", "left", "right", "0")
		synctest.Wait()
		popper.send("blpop", "dst", "0")
		synctest.Wait()
		require.Equal(t, "1", r.do("lpush", "src", "x"))
		require.Equal(t, "x", mover.read())
		require.Equal(t, []any{"dst", "x"}, popper.read(), "served in the same pass")
		require.Equal(t, "OK", watcher.do("multi"))
		watcher.do("ping")
		require.Nil(t, watcher.do("exec"), "the watched destination was written")

		require.Equal(t, "OK", r.do("set", "str", "v"))
		mover.send("blmove", "src", "str", "left", "left", "0")
		synctest.Wait()
		popper.send("blpop", "src", "0")
		synctest.Wait()
		require.Equal(t, "1", r.do("lpush", "src", "y"))
		require.Equal(t, "-"+errWrongType, mover.read())
		require.Equal(t, []any{"src", "y"}, popper.read(), "the element was left for the next client")
	})
}

// Blocking commands inside MULTI never block; a timeout answers a null
// (RESP2 *-1, RESP3 _); CLIENT UNBLOCK answers 1 for a blocked client (which
// gets a null, or an error with ERROR) and 0 for one that is not; a client
// whose connection closes leaves its wait at once.
func TestBlockingRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, dial := bubbleServer(t)
		r, w := dial(), dial()
		require.Equal(t, "OK", r.do("multi"))
		r.do("blpop", "none", "0")
		r.do("blmove", "none", "x", "left", "left", "0")
		require.Equal(t, []any{nil, nil}, r.do("exec"))

		begin := time.Now()
		require.Nil(t, w.do("blpop", "none", "0.0501"))
		require.Equal(t, 51*time.Millisecond, time.Since(begin), "rounded up to the millisecond")
		_, err := w.conn.Write([]byte("*2\r\n$5\r\nhello\r\n$1\r\n3\r\n"))
		require.NoError(t, err)
		w.read()
		w.send("blpop", "none", "0.01")
		line, err := w.r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "_\r\n", line, "RESP3's null")

		id := w.do("client", "id").(string)
		w.send("blpop", "none", "0")
		synctest.Wait()
		require.Equal(t, "1", r.do("client", "unblock", id))
		require.Nil(t, w.read())
		require.Equal(t, "0", r.do("client", "unblock", id), "not blocked")
		w.send("blpop", "none", "0")
		synctest.Wait()
		require.Equal(t, "1", r.do("client", "unblock", id, "error"))
		require.Equal(t, "-"+errUnblocked, w.read())

		gone := dial()
		gone.send("blpop", "none", "0")
		synctest.Wait()
		require.Equal(t, 1, blockedClients(t, r))
		gone.conn.Close()
		synctest.Wait()
		require.Equal(t, 0, blockedClients(t, r), "left its wait at once")

		require.Equal(t, "-"+errTimeoutNeg, r.do("blpop", "k", "-1"))
		require.Equal(t, "-"+errTimeoutFloat, r.do("blpop", "k", "abc"))
	})
}

// Shutdown answers every blocked client with an error that names it, then
// closes their connections.
func TestShutdownAnswersBlockedClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, dial := bubbleServer(t)
		ws := []*raw{dial(), dial()}
		for _, w := range ws {
			w.send("blpop", "k", "0")
		}
		synctest.Wait()
		shut := make(chan error, 1)
		go func() { shut <- s.shutdown(context.Background()) }()
		for _, w := range ws { // a pipe has no buffer: shutdown waits for these reads
			require.Equal(t, "-"+errShutdown, w.read())
			_, err := readReply(w.r)
			require.ErrorIs(t, err, io.EOF, "then closed")
		}
		require.NoError(t, <-shut)
	})
}

// An element handed to a client whose connection takes the reply and then
// fails is gone with it, as in Redis: it is counted written, not put back,
// and the next client blocked on the key stays blocked.
func TestHandedToAClientThatWentAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, dial := bubbleServer(t)
		r, gone, next := dial(), dial(), dial()
		gone.send("blpop", "q", "0")
		synctest.Wait()
		next.send("blpop", "q", "0")
		synctest.Wait()
		require.Equal(t, "2", r.do("rpush", "q", "x", "y"))
		require.Equal(t, []any{"q", "y"}, next.read(), "served second, it takes the second")
		next.send("blpop", "q", "0")
		synctest.Wait()
		require.Equal(t, 1, blockedClients(t, r), "next is blocked again: x is gone's")
		gone.conn.Close() // its reply unread
		synctest.Wait()
		require.EqualValues(t, 0, s.stats.dropped.Load(), "x was written: not dropped")
		require.EqualValues(t, 2, s.stats.popWritten.Load(), "x and y were written")
		require.Equal(t, []any{}, r.do("lrange", "q", "0", "-1"))
		require.Equal(t, 1, blockedClients(t, r), "next waits on: x went with gone")
		require.Equal(t, "1", r.do("rpush", "q", "z"))
		require.Equal(t, []any{"q", "z"}, next.read())
	})
}

// failingLink is a connection that fails as it is written to, as a socket
// the peer has reset does: the write takes nothing, and the loop learns at
// once that the connection has ended (gnet's Write closes it before it
// returns).
type failingLink struct {
	link
	s *server
	c *client
}

func (l failingLink) write([]byte) error {
	l.s.disconnected(l.c)
	return errors.New("connection reset by peer")
}

// An element handed to a client whose connection fails as its reply is
// written is gone with the client, as in Redis: dropped, not put back (a
// command between the pop and the write may have seen the list without it,
// and a put-back would contradict it: TestPutBackIsSequential), and the next
// client blocked on the key stays blocked.
func TestHandedToAClientWhoseWriteFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, dial := bubbleServer(t)
		r, gone, next := dial(), dial(), dial()
		id := gone.do("client", "id").(string)
		gone.send("blpop", "q", "0")
		synctest.Wait()
		next.send("blpop", "q", "0")
		synctest.Wait()
		onLoop(t, s, func() {
			for _, c := range s.clients {
				if fmt.Sprint(c.id) == id {
					c.link = failingLink{c.link, s, c}
				}
			}
		})
		require.Equal(t, "2", r.do("rpush", "q", "x", "y"))
		require.Equal(t, []any{"q", "y"}, next.read(), "served second, it takes the second")
		next.send("blpop", "q", "0")
		synctest.Wait() // the loop counts a reply's elements written after the write, which next may read first
		require.EqualValues(t, 1, s.stats.dropped.Load(), "x, whose write failed, went with gone")
		require.EqualValues(t, 1, s.stats.popWritten.Load(), "y was written; x to gone was not")
		require.Equal(t, []any{}, r.do("lrange", "q", "0", "-1"), "x was not put back")
		require.Equal(t, 1, blockedClients(t, r), "next waits on")
		require.Equal(t, "1", r.do("rpush", "q", "z"))
		require.Equal(t, []any{"q", "z"}, next.read())
	})
}

// A client's waits, one after another, use one operation (the purgatory's
// Recycle hands it back), whichever way each ended, and none answers with
// what an earlier one left in it: a hand-off, a timeout, CLIENT UNBLOCK …
// ERROR, a BLMOVE and a BLMPOP of two, each answered as its own.
func TestWaitsReuseTheirOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, dial := bubbleServer(t)
		r, w := dial(), dial()
		id := w.do("client", "id").(string)
		op := func() *blockedOp {
			synctest.Wait()
			var op *blockedOp
			onLoop(t, s, func() {
				for _, c := range s.clients {
					if fmt.Sprint(c.id) == id {
						op = c.lastOp
					}
				}
			})
			return op
		}

		w.send("blpop", "a", "b", "0")
		first := op()
		r.do("rpush", "b", "x")
		require.Equal(t, []any{"b", "x"}, w.read())

		w.send("brpop", "a", "1")
		require.Same(t, first, op(), "the second wait's operation")
		time.Sleep(time.Second)
		require.Nil(t, w.read(), "timed out")

		w.send("blpop", "a", "0")
		require.Same(t, first, op())
		require.Equal(t, "1", r.do("client", "unblock", id, "error"))
		require.Equal(t, "-"+errUnblocked, w.read())

		w.send("blmove", "a", "d", "right", "left", "0")
		require.Same(t, first, op())
		r.do("rpush", "a", "1", "2")
		require.Equal(t, "2", w.read())

		w.send("blmpop", "0", "2", "c", "a", "left", "count", "2")
		require.Equal(t, []any{"a", []any{"1"}}, w.read(), "served at once: a holds 1")
		w.send("blmpop", "0", "1", "c", "right", "count", "2")
		require.Same(t, first, op())
		r.do("rpush", "c", "p", "q", "r")
		require.Equal(t, []any{"c", []any{"r", "q"}}, w.read())
		require.Equal(t, []any{"2"}, r.do("lrange", "d", "0", "-1"))
		require.Equal(t, 0, blockedClients(t, r))
	})
}

// CLIENT LIST names each client's last command as Redis 7.0 does (checked
// against redis-server 7.0.15 by hand): NULL before any and for an unknown
// one, a queued command's own name inside MULTI, exec after EXEC (not the
// commands it ran), the blocking command while blocked, parent|sub for a
// command with subcommands. redis-suite.sh's stopgap waits for cmd=exec.
func TestClientListNamesTheLastCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, dial := bubbleServer(t)
		names := []string{"exec", "queued", "blocked", "config", "arity", "unknown", "lister"}
		clients, byID := map[string]*raw{}, map[string]string{}
		for _, name := range names {
			clients[name] = dial()
			byID[clients[name].do("client", "id").(string)] = name
		}
		c := clients["exec"]
		require.Equal(t, "OK", c.do("watch", "dst"))
		require.Equal(t, "OK", c.do("multi"))
		require.Equal(t, "QUEUED", c.do("get", "k"))
		require.Equal(t, []any{nil}, c.do("exec"))
		require.Equal(t, "OK", clients["queued"].do("multi"))
		require.Equal(t, "QUEUED", clients["queued"].do("get", "k"))
		clients["blocked"].send("brpoplpush", "src", "dst", "0")
		synctest.Wait()
		clients["config"].do("config", "get", "maxmemory")
		require.Equal(t, "-"+errWrongArgs("lpush"), clients["arity"].do("lpush"))
		clients["unknown"].do("foo", "bar")
		dial() // sends nothing: the one id not asked for above
		synctest.Wait()

		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(clients["lister"].do("client", "list").(string)), "\n") {
			id := regexp.MustCompile(`^id=(\d+) `).FindStringSubmatch(line)
			cmd := regexp.MustCompile(` cmd=(\S+) `).FindStringSubmatch(line)
			require.Len(t, id, 2, line)
			require.Len(t, cmd, 2, line)
			name, ok := byID[id[1]]
			if !ok {
				name = "fresh"
			}
			got[name] = cmd[1]
		}
		require.Equal(t, map[string]string{
			"exec": "exec", "queued": "get", "blocked": "brpoplpush", "config": "config|get",
			"arity": "lpush", "unknown": "NULL", "lister": "client|list", "fresh": "NULL",
		}, got)
	})
}
