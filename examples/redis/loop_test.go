package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Commands run in the order their bytes arrive, across connections: one
// client's EXEC, written before another's LPUSH, runs first, every time. It is
// what Redis's "BRPOPLPUSH does not affect WATCH while still blocked" counts
// on, and what a goroutine per connection broke now and then (issue 50): the
// loop reads ready connections in the order epoll reports them.
func TestCommandsRunInTheOrderTheyArrive(t *testing.T) {
	_, addr := testServer(t)
	watching, pusher := dial(t, addr), dial(t, addr)
	for i := range 200 {
		require.Equal(t, "OK", watching.do("watch", "k"))
		require.Equal(t, "OK", watching.do("multi"))
		require.Equal(t, "QUEUED", watching.do("ping"))
		watching.send("exec")
		require.Equal(t, "1", pusher.do("lpush", "k", "x"), "run %d", i)
		require.Equal(t, []any{"PONG"}, watching.read(), "run %d: LPUSH ran before the EXEC sent first", i)
		require.Equal(t, "1", pusher.do("del", "k"))
	}
}

// Commands a blocked client sent after its blocking one run on the loop
// right after it is served, in order; a timeout, which ends on a wheel
// worker, is answered through the loop, and then what was sent after it
// runs too.
func TestPipelinedAfterABlockedCommand(t *testing.T) {
	_, addr := testServer(t)
	w, r := dial(t, addr), dial(t, addr)
	_, err := w.conn.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nk\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nLLEN\r\n$1\r\nk\r\n"))
	require.NoError(t, err)
	waitBlocked(t, r, 1)
	require.Equal(t, "2", r.do("rpush", "k", "a", "b"))
	require.Equal(t, []any{"k", "a"}, w.read())
	require.Equal(t, "PONG", w.read())
	require.Equal(t, "1", w.read(), "run after the pop, not while blocked")

	_, err = w.conn.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nz\r\n$4\r\n0.05\r\n*2\r\n$4\r\nECHO\r\n$5\r\nafter\r\n"))
	require.NoError(t, err)
	require.Nil(t, w.read(), "timed out")
	require.Equal(t, "after", w.read())
}

// Shutdown on the event loop answers every blocked client, writes what each
// is owed, and closes every connection: the blocked clients read the error
// that names the shutdown and then the end of the stream, and so does a
// client that was not blocked (its connection ends).
func TestShutdownOnTheLoop(t *testing.T) {
	s, addr := testServer(t)
	ws := []*raw{dial(t, addr), dial(t, addr)}
	idle := dial(t, addr)
	require.Equal(t, "PONG", idle.do("ping"))
	for _, w := range ws {
		w.send("blpop", "k", "0")
	}
	waitBlocked(t, idle, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.shutdown(ctx))
	for _, w := range ws {
		require.Equal(t, "-"+errShutdown, w.read())
		_, err := readReply(w.r)
		require.ErrorIs(t, err, io.EOF, "then closed")
	}
	_, err := readReply(idle.r)
	require.ErrorIs(t, err, io.EOF)
	require.EqualValues(t, 0, s.nclients.Load())
}
