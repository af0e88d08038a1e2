package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// client is one connection and its goroutine, which reads, runs each batch
// of commands a read brings under the server's lock, and writes the replies.
//
// A client blocked in BLPOP and its kind is an operation in the server's
// purgatory (blockedOp). Its goroutine goes on reading meanwhile, so that a
// client that goes away leaves its wait at once (its context, done when the
// connection ends), and what it sends is kept to run once it is unblocked, as
// Redis does.
//
// A hand-off that serves the client answers it where it runs: the serving
// try writes the reply into the client's buffer, under the server's lock,
// and once the command that pushed is over the server writes it to the
// socket if the socket takes it without blocking (flushAnswer), as Redis
// writes its replies from its one thread. The client's goroutine then sleeps
// on in Read, and wakes only for the client's next command. It is woken
// (kick: its read deadline set in the past) only for what it must do itself:
// answer a wait that ended otherwise (a timeout, CLIENT UNBLOCK, shutdown:
// OnComplete, on whatever goroutine ended it, takes no lock of the server's),
// write what the socket would not take at once, or run the commands the
// client sent while blocked.
//
// Writes are in order: one writer at a time (writing), and what a writer
// writes is taken from the client's buffer under the server's lock, in the
// order the replies were made.
type client struct {
	id     int64
	srv    *server
	conn   net.Conn
	raw    syscall.RawConn // for writes that must not block; nil if the connection has none
	rd     *reader
	ctx    context.Context // done once the connection is gone
	cancel context.CancelFunc

	// Under the server's lock.
	w          replies
	name       string
	lastCmd    string     // the last command it sent, as CLIENT LIST's cmd= shows it (lastCommand)
	multi      bool       // inside MULTI
	inExec     bool       // running EXEC's commands: blocking commands do not block
	multiErr   bool       // a command failed to queue: EXEC aborts
	queued     [][][]byte // MULTI's commands, owned
	dirtyCAS   bool       // a watched key was written
	watched    []string
	op         *blockedOp // the wait under way, if blocked
	lastOp     *blockedOp // the last wait's, for the next (waitOp)
	pops       []popped   // what the replies in w took out of lists
	pending    [][][]byte // commands read while blocked, owned, run once unblocked
	spare      []byte     // the reply buffer not in use: take swaps it with w's
	sparePops  []popped   // pops' array once written, for take
	writing    bool       // a writer owns the socket: replies wait in w for it
	handed     []byte     // what a write that would have blocked left, for the goroutine
	handedPops []popped
	answered   bool // in server.answered: a hand-off put its reply in w

	// tryWrite's, under the server's lock: the bytes, and what their write
	// did, for writeRaw, bound once (a closure per write would allocate).
	rawOut   []byte
	rawN     int
	rawErr   error
	writeRaw func(fd uintptr) bool

	woken   atomic.Bool // kicked: the goroutine has something to do
	closing atomic.Bool // shutting down: close once the replies are written
}

// aLongTimeAgo is a read deadline in the past: it wakes a goroutine in Read.
var aLongTimeAgo = time.Unix(1, 0)

func (s *server) newClient(conn net.Conn) *client {
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{id: s.nextID.Add(1), srv: s, conn: conn, ctx: ctx, cancel: cancel, w: replies{resp: 2}, lastCmd: "NULL"}
	if sc, ok := conn.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
		c.writeRaw = c.writeOnce
	}
	c.rd = newReader(&s.limits)
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	if s.closed.Load() {
		c.closeAfterWrite()
	}
	return c
}

// serve is the client's goroutine.
func (c *client) serve() {
	defer c.end()
	for {
		n, err := c.conn.Read(c.rd.space())
		if n > 0 {
			cmds, perr := c.rd.read(n)
			if len(cmds) > 0 && !c.run(cmds) {
				return
			}
			if perr != nil {
				c.refuse(perr)
				return
			}
		}
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return // gone; end cancels a wait under way
		case c.closing.Load():
			c.finish()
			return
		default: // kicked
			c.conn.SetReadDeadline(time.Time{})
			if c.woken.Swap(false) && !c.run(nil) {
				return
			}
		}
	}
}

// run runs, under the server's lock, what the client sent while blocked and
// then cmds, each followed by the hand-offs it made ready, until one blocks:
// the rest wait for the client to be unblocked. A wait that has ended
// otherwise than by a hand-off is answered first. It writes the replies, and
// reports whether the connection goes on.
func (c *client) run(cmds [][][]byte) bool {
	s := c.srv
	s.mu.Lock()
	c.settle()
	if len(c.pending) > 0 {
		cmds = append(c.pending, cmds...)
		c.pending = nil
	}
	i := 0
	for ; i < len(cmds) && c.op == nil; i++ {
		s.exec(c, cmds[i])
		s.serveReady()
	}
	for _, cmd := range cmds[i:] {
		c.pending = append(c.pending, ownArgs(cmd))
	}
	out, pops := c.take()
	if c.writing { // handed to this goroutine: what it left goes first
		out, pops = append(c.handed, out...), append(c.handedPops, pops...)
		c.handed, c.handedPops = nil, nil
	}
	if len(out) == 0 {
		c.writing = false
		s.mu.Unlock()
		return !c.closing.Load()
	}
	c.writing = true
	s.mu.Unlock()
	return c.writeAll(out, pops)
}

// settle answers the client's wait if it has ended otherwise than by a
// hand-off (timed out, unblocked, shut down, or gone). The caller holds the
// server's lock.
func (c *client) settle() {
	if b := c.op; b != nil && b.ended() {
		c.op = nil
		c.srv.db.unblock(b.keys)
		b.answer(c)
	}
}

// take returns the replies made so far, with what they took out of lists,
// and starts the next ones in the buffer written out last time. The caller
// holds the server's lock, and takes only to write: no write of the last
// buffer taken is under way.
func (c *client) take() ([]byte, []popped) {
	out, pops := c.w.out, c.pops
	c.w.out, c.spare, c.pops, c.sparePops = c.spare[:0], out, c.sparePops, nil
	return out, pops
}

// popped is what a reply took out of a list: if the reply cannot be written,
// it goes back (server.restoreLocked).
type popped struct {
	key  string
	left bool // from the left end
	vals [][]byte
}

// took records that the reply being made takes vals out of key's list.
// The caller holds the server's lock.
func (c *client) took(key string, left bool, vals ...[]byte) {
	c.pops = append(c.pops, popped{key, left, vals})
}

// writeAll writes out, and then what replies were made meanwhile, until
// there are none: the goroutine's writes, which may block. What the replies
// took out of lists is counted as written, or put back if a write fails:
// nothing a client was given is lost with it. It reports whether the
// connection goes on.
func (c *client) writeAll(out []byte, pops []popped) bool {
	s := c.srv
	for {
		if _, err := c.conn.Write(out); err != nil {
			s.restore(pops)
			return false // writing stays set: end puts back what is left
		}
		s.written(pops)
		s.mu.Lock()
		out, pops = c.take()
		if len(out) == 0 {
			c.writing = false
			s.mu.Unlock()
			return !c.closing.Load()
		}
		s.mu.Unlock()
	}
}

// written counts the elements of replies written to a connection open when
// written.
func (s *server) written(pops []popped) {
	for _, p := range pops {
		s.stats.popWritten.Add(int64(len(p.vals)))
	}
}

// flushAnswer writes the replies a hand-off made for c, from the goroutine
// that made it, under the server's lock: at once if the socket takes them
// without blocking; what it does not take is handed to c's goroutine. A
// writer under way, or commands c sent while blocked (which its goroutine
// must run first), leave the replies in c's buffer for c's goroutine.
func (s *server) flushAnswer(c *client) {
	switch {
	case c.writing:
		return // the writer takes them next
	case len(c.pending) > 0 || c.raw == nil:
		c.kick()
		return
	}
	out, pops := c.take()
	n, err := c.tryWrite(out)
	switch {
	case n == len(out):
		s.written(pops)
		clear(pops)
		c.sparePops = pops[:0]
	case err == nil || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
		c.writing = true
		c.handed, c.handedPops = bytes.Clone(out[n:]), pops
		c.kick()
	default: // the connection failed: its goroutine finds out on its next read
		s.restoreLocked(pops)
		c.writing = true // nothing more is written
	}
}

// tryWrite writes out to the socket as far as it takes it without blocking.
// The caller holds the server's lock.
func (c *client) tryWrite(out []byte) (n int, err error) {
	c.rawOut = out
	werr := c.raw.Write(c.writeRaw)
	n, err, c.rawOut, c.rawErr = max(c.rawN, 0), c.rawErr, nil, nil
	if err == nil {
		err = werr
	}
	return n, err
}

// writeOnce is tryWrite's one attempt, whatever it writes.
func (c *client) writeOnce(fd uintptr) bool {
	c.rawN, c.rawErr = syscall.Write(int(fd), c.rawOut)
	return true
}

// refuse answers a malformed request with Redis's protocol error, or closes
// at once for a query buffer over its limit.
func (c *client) refuse(err error) {
	var pe *protocolError
	if errors.As(err, &pe) {
		c.conn.Write([]byte("-" + pe.Error() + "\r\n"))
	}
	c.srv.log.Debug("client closed", "id", c.id, "reason", err)
}

// kick wakes the client's goroutine, which may be in Read, to see what it
// has to do. It never blocks and takes no lock of the server's: a blocked
// client's OnComplete may call it on any goroutine.
func (c *client) kick() {
	c.woken.Store(true)
	c.conn.SetReadDeadline(aLongTimeAgo)
}

// closeAfterWrite makes the client's goroutine end once it has written what
// it owes (shutdown): a blocked client first gets its answer.
func (c *client) closeAfterWrite() {
	c.closing.Store(true)
	c.conn.SetReadDeadline(aLongTimeAgo)
}

// finish is the goroutine's last act at shutdown: it waits for the wait
// under way to end (the purgatory's Close ends it, or leaves Closed to the
// try under way), answers it and writes what the client is owed. The
// commands the client sent while blocked are dropped.
func (c *client) finish() {
	s := c.srv
	s.mu.Lock()
	b := c.op
	c.pending = nil
	s.mu.Unlock()
	if b != nil {
		b.wait() // tries run under the lock: wait without it
	}
	c.run(nil)
}

// end is the goroutine's last act: it ends a wait under way (its context),
// puts back what replies not written took out of lists, and forgets the
// client.
func (c *client) end() {
	c.cancel()
	s := c.srv
	s.mu.Lock()
	b := c.op
	if b != nil {
		c.op = nil
		s.db.unblock(b.keys)
	}
	s.restoreLocked(c.handedPops)
	s.restoreLocked(c.pops)
	c.handed, c.handedPops, c.pops = nil, nil, nil
	s.db.unwatchAll(c)
	delete(s.clients, c.id)
	s.serveReady()
	s.mu.Unlock()
	if b != nil {
		b.wait() // at most one try away: the context ended it, or a try did
	}
	c.conn.Close()
}
