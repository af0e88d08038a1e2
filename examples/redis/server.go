package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// server is the Redis-protocol server: one keyspace, its clients, and a
// purgatory of the clients blocked on list keys, all served on one event
// loop (loop.go), Redis's single thread. A command runs on the loop with the
// hand-offs it makes ready (serveReady) before the next one, so that a client
// that sends LRANGE right after its LPUSH's reply never sees an element
// already handed off. A blocked client's TryComplete runs on the loop too
// (HandOff and TryCompleteElseWatch are only called there), and its
// OnComplete, on whatever goroutine the wait ended, hands the answer to the
// loop (blockedOp.OnComplete).
//
// Off the loop, only these are read: the counters (stats, nextID, nclients),
// closed, limits, and ln and loop under lnMu.
type server struct {
	db      *db
	blocked *purgatory.Purgatory[string]
	serving string // the key the hand-off under way serves: a blocked pop takes from it
	// answered are the clients whose replies flushAll writes next: those
	// a command, a hand-off or a settled wait answered since the last.
	answered, spareAnswered []*client
	clients                 map[int64]*client
	cfg                     config
	limits                  atomic.Pointer[limits] // cfg's, for the readers

	nextID   atomic.Int64
	nclients atomic.Int64 // len(clients), for /metrics
	closed   atomic.Bool
	log      *slog.Logger
	tw       *timingwheel.TimingWheel
	stats    serverStats

	lnMu      sync.Mutex
	ln        net.Listener
	loop      eventLoop
	accepting chan struct{} // closed when serve's accept loop has returned
	// drained is closed, on the loop, once shutdown has begun and the last
	// client has gone.
	drained     chan struct{}
	drainedOnce sync.Once
	stopped     chan struct{}
}

// serverStats are the counts the tests and the metrics read.
type serverStats struct {
	handedOff  atomic.Int64 // elements a hand-off gave to a blocked client
	popWritten atomic.Int64 // elements popped and written to a connection that was open when written
	dropped    atomic.Int64 // elements popped for a client whose connection ended before it took the reply: gone with it
	commands   atomic.Int64
}

// newServer makes a server; obs, if not nil, feed the metrics' histograms.
func newServer(cfg config, log *slog.Logger, obs *observers) (*server, error) {
	wopts := []timingwheel.Option{timingwheel.WithLogger(log)}
	popts := []purgatory.Option{purgatory.WithLogger(log)}
	if obs != nil {
		wopts = append(wopts, timingwheel.WithObserver(obs.wheel))
		popts = append(popts, purgatory.WithObserver(obs.blocked))
	}
	tw, err := timingwheel.New(wopts...)
	if err != nil {
		return nil, err
	}
	p, err := purgatory.New[string]("redis_blocked", append(popts, purgatory.WithTimingWheel(tw))...)
	if err != nil {
		tw.Stop()
		return nil, err
	}
	s := &server{db: newDB(), blocked: p, clients: map[int64]*client{}, cfg: cfg, log: log, tw: tw,
		drained: make(chan struct{}), stopped: make(chan struct{})}
	s.limits.Store(new(cfg.limits()))
	return s, nil
}

// command is one entry of the command table.
type command struct {
	name  string
	arity int // as Redis: n exactly, -n at least n (the name counts)
	run   func(s *server, c *client, args [][]byte)
	flags cmdFlags
}

type cmdFlags uint8

const (
	cmdWrite     cmdFlags = 1 << iota // touches keys (for nothing but documentation here)
	cmdNoMulti                        // runs at once inside MULTI: EXEC, DISCARD, MULTI, WATCH
	cmdBlocking                       // may block: never inside MULTI
	cmdContainer                      // has subcommands (CLIENT LIST): named parent|sub, as Redis 7.0
)

var commands map[string]*command

func init() {
	commands = map[string]*command{}
	for _, cmd := range commandTable() {
		commands[cmd.name] = cmd
	}
}

// exec runs one command for c. On the loop.
func (s *server) exec(c *client, args [][]byte) {
	s.stats.commands.Add(1)
	name := strings.ToLower(string(args[0]))
	cmd := commands[name]
	if !c.inExec { // EXEC's own commands leave it at exec, as Redis's execCommand
		c.lastCmd = lastCommand(cmd, args)
	}
	if cmd == nil {
		c.flagMultiError()
		c.w.err(unknownCommand(args))
		return
	}
	if cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity {
		c.flagMultiError()
		c.w.err(errWrongArgs(cmd.name))
		return
	}
	if c.multi && cmd.flags&cmdNoMulti == 0 {
		c.queued = append(c.queued, ownArgs(args))
		c.w.status("QUEUED")
		return
	}
	cmd.run(s, c, args)
}

// lastCommand is the name CLIENT LIST shows as a client's cmd= once it has
// sent args, as Redis 7.0 names its lastcmd: set when the command is looked
// up (queued inside MULTI, run, or refused for its arity; not for the
// commands EXEC runs), "NULL" for an unknown command, and parent|sub for a
// command with subcommands. exec sets it on the loop, so CLIENT LIST shows
// cmd=exec only once EXEC has run.
func lastCommand(cmd *command, args [][]byte) string {
	switch {
	case cmd == nil:
		return "NULL"
	case cmd.flags&cmdContainer != 0 && len(args) > 1:
		return cmd.name + "|" + strings.ToLower(string(args[1]))
	}
	return cmd.name
}

// unknownCommand is Redis 7.0's reply to a command it does not know.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(args[0])
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		b.WriteString("'")
		b.Write(a)
		b.WriteString("' ")
	}
	return b.String()
}

// ownArgs copies args out of the connection's buffer, which the next read
// moves.
func ownArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// serveReady serves the clients blocked on the keys the last command (or
// EXEC) made ready, in the order they became ready, each with its list as it
// is now (Redis's handleClientsBlockedOnKeys): a hand-off per key, which
// serves its clients in the order they blocked until the list runs out. A
// served BLMOVE pushes to its destination, which then becomes ready and is
// served in the same pass. The clients served are marked: the loop writes
// their replies once it is done with what woke it (flushAll). On the loop.
func (s *server) serveReady() {
	d := s.db
	for i := 0; i < len(d.ready); i++ {
		key := d.ready[i]
		delete(d.isReady, key) // it may become ready again, and be served again
		if l, _ := d.list(key); l == nil || l.len() == 0 {
			continue
		}
		s.serving = key
		s.blocked.HandOff(key)
		s.serving = ""
	}
	d.ready = d.ready[:0]
}

// serve serves clients on ln until shutdown, on an event loop of its own:
// gnet's for a listener whose connections have a file descriptor, a
// goroutine's for others (pipeLoop).
func (s *server) serve(ln net.Listener) error {
	lp, err := newLoop(s, ln)
	if err != nil {
		return err
	}
	s.lnMu.Lock()
	if s.closed.Load() {
		s.lnMu.Unlock()
		lp.stop()
		return nil
	}
	s.ln, s.loop, s.accepting = ln, lp, make(chan struct{})
	defer close(s.accepting)
	s.lnMu.Unlock()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		if err := lp.enroll(conn); err != nil {
			s.log.Warn("connection refused", "remote", conn.RemoteAddr(), "err", err)
			conn.Close()
		}
	}
}

// shutdown answers every blocked client with an error that names the
// shutdown, writes what each client is owed, closes every connection and
// stops the loop; ctx bounds the waits for the callbacks under way and for
// the connections to close.
func (s *server) shutdown(ctx context.Context) error {
	if s.closed.Swap(true) {
		<-s.stopped
		return nil
	}
	defer close(s.stopped)
	s.lnMu.Lock()
	ln, lp, accepting := s.ln, s.loop, s.accepting
	s.lnMu.Unlock()
	if ln != nil {
		ln.Close()
		<-accepting // no enroll under way: the loop can stop
	}
	// Every wait ends Closed (or Completed, by a try on the loop under
	// way): its OnComplete hands its answer to the loop. Shutdown waits for
	// the callbacks a timeout or a context started just before.
	err := s.blocked.Shutdown(ctx)
	if lp != nil {
		if lp.run(s.closeAll) {
			select {
			case <-s.drained:
			case <-ctx.Done():
				err = errors.Join(err, ctx.Err())
			}
		}
		lp.stop()
	}
	s.tw.Stop()
	return err
}

// closeAll answers every client whose wait has ended and not yet been
// answered (their OnComplete's task may come after this one), writes what
// each is owed, and closes them all. On the loop, at shutdown.
func (s *server) closeAll() {
	for _, c := range s.clients {
		if c.op != nil {
			s.settle(c.op)
		}
		c.closing = true
		c.pending = nil
		s.mark(c)
	}
	s.flushAll()
	if len(s.clients) == 0 {
		s.allClosed()
	}
}

// allClosed marks the last client gone once shutdown has begun.
func (s *server) allClosed() { s.drainedOnce.Do(func() { close(s.drained) }) }
