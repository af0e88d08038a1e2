package main

import (
	"context"
	"errors"
)

// client is one connection, served on the server's loop: everything in it
// is the loop's, but ctx and what blockedOp's OnComplete reads.
//
// A client blocked in BLPOP and its kind is an operation in the server's
// purgatory (blockedOp). The loop goes on reading its connection meanwhile,
// so that a client that goes away leaves its wait at once (its context, done
// when the connection ends), and keeps what it sends to run once it is
// unblocked, as Redis does.
//
// A hand-off that serves the client answers it where it runs, on the loop:
// the serving try writes the reply into the client's buffer, and the loop
// writes it when it is done with what woke it (server.flushAll). A wait that
// ends otherwise (a timeout, CLIENT UNBLOCK, shutdown, on whatever goroutine
// ended it) is answered on the loop too: OnComplete hands it there
// (server.settle).
type client struct {
	id     int64
	srv    *server
	link   link
	rd     *reader
	ctx    context.Context // done once the connection is gone
	cancel context.CancelFunc

	w        replies
	name     string
	lastCmd  string     // the last command it sent, as CLIENT LIST's cmd= shows it (lastCommand)
	multi    bool       // inside MULTI
	inExec   bool       // running EXEC's commands: blocking commands do not block
	multiErr bool       // a command failed to queue: EXEC aborts
	queued   [][][]byte // MULTI's commands, owned
	dirtyCAS bool       // a watched key was written
	watched  []string
	op       *blockedOp // the wait under way, if blocked
	lastOp   *blockedOp // the last wait's, for the next (waitOp)
	taken    int        // elements the replies in w took out of lists
	pending  [][][]byte // commands read while blocked, owned, run once unblocked
	marked   bool       // in server.answered: its replies are written at the next flush
	closing  bool       // QUIT or shutdown: close once the replies are written
	gone     bool       // the connection has ended (server.disconnected)
}

func (s *server) newClient(l link) *client {
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{id: s.nextID.Add(1), srv: s, link: l, ctx: ctx, cancel: cancel, w: replies{resp: 2}, lastCmd: "NULL"}
	c.rd = newReader(&s.limits)
	s.clients[c.id] = c
	s.nclients.Add(1)
	return c
}

// took records that the reply being made takes n elements out of lists.
func (c *client) took(n int) { c.taken += n }

// refuse answers a malformed request with Redis's protocol error and closes
// the connection once it is written; a query buffer over its limit is closed
// without an answer.
func (c *client) refuse(err error) {
	var pe *protocolError
	if errors.As(err, &pe) {
		c.w.err(pe.Error())
	}
	c.closing = true
	c.pending = nil
	c.srv.mark(c)
	c.srv.log.Debug("client closed", "id", c.id, "reason", err)
}
