package main

import (
	"io"
	"net"
)

// The server runs on one event loop, as Redis does: one goroutine reads the
// connections in the order the poller reports them ready, runs each command
// a read completes at once (the hand-offs it makes ready included), and
// writes each client's replies when it is done with what woke it. Nothing the
// loop owns is locked: the keyspace, the clients, and the blocked clients'
// tries (HandOff and TryCompleteElseWatch are only called on the loop). What
// ends off the loop (a timeout on a wheel worker, a client's context, the
// purgatory's Close) hands its answer to the loop with eventLoop.run, which
// neither locks nor blocks.
//
// Two loops implement it: gnetLoop, on github.com/panjf2000/gnet/v2's event
// loop, for connections with a file descriptor (TCP, Unix sockets), and
// pipeLoop, one goroutine fed by one reader per connection, for connections
// without one (the tests' in-memory pipes, inside synctest bubbles, where a
// goroutine in epoll_wait is not durably blocked).

// eventLoop is the goroutine that runs the server.
type eventLoop interface {
	// enroll hands conn to the loop, which calls server.open on itself,
	// then server.received as conn's bytes come and server.disconnected when it
	// ends. It may block until the loop has taken conn.
	enroll(conn net.Conn) error
	// run runs f on the loop. It may be called from any goroutine, the
	// loop's included (f then runs after what the loop is doing now); it
	// never blocks and takes no lock of the server's. It reports false if
	// the loop has stopped, and f will not run.
	run(f func()) bool
	// stop ends the loop, closing what connections are left, and waits for
	// it. Call it once, off the loop.
	stop()
}

// link is a client's connection as the loop sees it. Its methods are called
// on the loop only.
type link interface {
	// write writes b, or what the socket does not take now later, in order:
	// it never blocks and does not keep b. An error means the connection
	// has failed and nothing of b was taken; the loop then calls
	// server.disconnected, possibly before write returns.
	write(b []byte) error
	// close closes the connection once what write took is sent (or the
	// socket refuses it); the loop then calls server.disconnected.
	close()
	remoteAddr() net.Addr
	localAddr() net.Addr
}

// open makes a client of a connection the loop has taken. On the loop.
func (s *server) open(l link) *client {
	c := s.newClient(l)
	if s.closed.Load() { // shutting down: nothing more is served
		c.closing = true
		l.close()
	}
	return c
}

// received runs the commands in what c's connection brought, src, read into
// the client's bounded reader (the loop's own buffers have no cap), and then
// writes the replies of every client they answered. On the loop.
func (s *server) received(c *client, src io.Reader) {
	for !c.gone && !c.closing {
		n, _ := src.Read(c.rd.space())
		if n == 0 {
			break
		}
		cmds, err := c.rd.read(n)
		s.runCommands(c, cmds)
		if err != nil {
			c.refuse(err)
			break
		}
	}
	s.flushAll()
}

// runCommands runs cmds for c, each followed by the hand-offs it made ready,
// until one blocks (or QUIT): the rest wait, owned, for the client to be
// unblocked, as Redis keeps a blocked client's input for later. On the loop.
func (s *server) runCommands(c *client, cmds [][][]byte) {
	i := 0
	for ; i < len(cmds) && c.op == nil && !c.closing; i++ {
		s.exec(c, cmds[i])
		s.serveReady()
	}
	if !c.closing {
		for _, cmd := range cmds[i:] {
			c.pending = append(c.pending, ownArgs(cmd))
		}
	}
	s.mark(c)
}

// mark queues c's replies for the next flushAll. On the loop.
func (s *server) mark(c *client) {
	if !c.marked {
		c.marked = true
		s.answered = append(s.answered, c)
	}
}

// flushAll writes the replies of every client marked since the last flush:
// those that sent the commands and those a hand-off, a timeout or CLIENT
// UNBLOCK answered. A client unblocked meanwhile first runs what it sent while
// blocked (Redis's processUnblockedClients), which may answer others in turn.
// On the loop.
func (s *server) flushAll() {
	for len(s.answered) > 0 {
		batch := s.answered
		s.answered = s.spareAnswered[:0]
		for _, c := range batch {
			c.marked = false
			if c.op == nil && len(c.pending) > 0 && !c.gone && !c.closing {
				cmds := c.pending
				c.pending = nil
				s.runCommands(c, cmds)
				c.marked = false // flushed now
			}
			s.flush(c)
		}
		clear(batch)
		s.spareAnswered = batch[:0]
	}
}

// flush writes c's replies, and closes a closing client's connection after
// them. Their elements count as written once the connection has taken them,
// into the socket or into what the loop sends as the socket drains: if the
// connection then fails they are gone with it, as in Redis. A write that
// fails at once takes nothing, and its elements are gone with the client
// too (dropTaken says why they are not put back). On the loop.
func (s *server) flush(c *client) {
	if c.gone {
		c.w.out = c.w.out[:0]
		s.dropTaken(c)
		return
	}
	if len(c.w.out) > 0 {
		n := c.taken
		c.taken = 0
		err := c.link.write(c.w.out) // may call s.disconnected for c
		c.w.out = c.w.out[:0]
		if err != nil {
			s.stats.dropped.Add(int64(n))
		} else {
			s.stats.popWritten.Add(int64(n))
		}
	}
	if c.closing && !c.gone {
		c.link.close()
	}
}

// dropTaken drops what c's replies not written took out of lists: those
// elements are gone with the client, as in Redis, whose freeClient drops a
// reply never written.
//
// They are not put back. Between the pop and the failed write other commands
// ran on the loop, and any of them may have seen the list without the element
// (an LRANGE, an LLEN, a pop that took the next one, a push behind it): a
// value put back afterwards contradicts what they saw, and no one order of
// the commands gives both (issue 71: RPUSH k a b hands b to W, RPOP takes a,
// W's write fails; b put back would leave [b], where W taking b leaves [] and
// W taking nothing answers the RPOP with b). Putting back only when no command
// has touched the list since would mean tracking reads too; dropping, as Redis
// does, is the one rule that always gives a sequential history.
func (s *server) dropTaken(c *client) {
	s.stats.dropped.Add(int64(c.taken))
	c.taken = 0
}

// disconnected forgets a client whose connection has ended: it ends its wait
// (its context), drops what replies it never got took out of lists, and
// stops watching its keys. On the loop, once per client.
func (s *server) disconnected(c *client) {
	if c.gone {
		return
	}
	c.gone = true
	c.cancel()
	c.rd.release()
	if b := c.op; b != nil {
		c.op = nil
		s.db.unblock(b.keys)
	}
	c.pending = nil
	s.dropTaken(c)
	s.db.unwatchAll(c)
	delete(s.clients, c.id)
	s.nclients.Add(-1)
	if s.closed.Load() && len(s.clients) == 0 {
		s.allClosed()
	}
}
