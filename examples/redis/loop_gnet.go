package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// gnetLoop is the server's loop on gnet's: one event loop
// (WithMulticore(false)) that reads the ready connections in the order epoll
// reports them, as Redis's ae does.
//
// gnet, not a loop of our own on epoll: it already does what this needs and
// is tested for it (writes that buffer what the socket does not take and
// send it as the socket drains, tasks handed to the loop from any goroutine
// through a lock-free queue and an eventfd, connections handed to it from
// outside with Enroll), and it is served here (v2.9.7). The server keeps its
// own listener and hands each accepted connection over (gnet.Client's Enroll,
// which dups its descriptor), so that a listener on port 0 reports its
// address as any net.Listener does.
type gnetLoop struct {
	gnet.BuiltinEventEngine
	s   *server
	cli *gnet.Client
	el  atomic.Pointer[gnetEventLoop] // the one loop, once a connection has shown it
}

type gnetEventLoop struct{ gnet.EventLoop }

// newLoop returns the loop that serves ln's connections: gnet's for a TCP or
// a Unix listener, whose connections have a file descriptor, pipeLoop's for
// any other.
func newLoop(s *server, ln net.Listener) (eventLoop, error) {
	switch ln.(type) {
	case *net.TCPListener, *net.UnixListener:
	default:
		return newPipeLoop(s), nil
	}
	g := &gnetLoop{s: s}
	cli, err := gnet.NewClient(g, gnet.WithMulticore(false), gnet.WithLogger(gnetLogger{s.log}))
	if err != nil {
		return nil, err
	}
	if err := cli.Start(); err != nil {
		return nil, err
	}
	g.cli = cli
	return g, nil // the loop is known through a connection: every task is about one
}

// gnetLink is a client's gnet connection.
type gnetLink struct{ gc gnet.Conn }

func (l gnetLink) write(b []byte) error {
	_, err := l.gc.Write(b) // copies into gnet's buffer what the socket does not take
	return err
}
func (l gnetLink) close()               { l.gc.Close() }
func (l gnetLink) remoteAddr() net.Addr { return l.gc.RemoteAddr() }
func (l gnetLink) localAddr() net.Addr  { return l.gc.LocalAddr() }

func (g *gnetLoop) enroll(conn net.Conn) error {
	_, err := g.cli.Enroll(conn) // closes conn: gnet serves a dup of its descriptor
	return err
}

func (g *gnetLoop) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	if g.el.Load() == nil {
		g.el.Store(&gnetEventLoop{gc.EventLoop()})
	}
	gc.SetContext(g.s.open(gnetLink{gc}))
	return nil, gnet.None
}

func (g *gnetLoop) OnTraffic(gc gnet.Conn) gnet.Action {
	c := gc.Context().(*client)
	g.s.received(c, gc)
	return gnet.None
}

func (g *gnetLoop) OnClose(gc gnet.Conn, _ error) gnet.Action {
	if c, ok := gc.Context().(*client); ok {
		g.s.disconnected(c)
		g.s.flushAll()
	}
	return gnet.None
}

func (g *gnetLoop) run(f func()) bool {
	el := g.el.Load()
	if el == nil {
		return false // no connection yet: no client to answer
	}
	return el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		f()
		return nil
	})) == nil
}

func (g *gnetLoop) stop() {
	if err := g.cli.Stop(); err != nil {
		g.s.log.Warn("event loop stopped", "err", err)
	}
}

// gnetLogger writes gnet's log to the server's.
type gnetLogger struct{ log *slog.Logger }

func (l gnetLogger) Debugf(f string, a ...any) { l.log.Debug("gnet: " + fmt.Sprintf(f, a...)) }
func (l gnetLogger) Infof(f string, a ...any)  { l.log.Debug("gnet: " + fmt.Sprintf(f, a...)) }
func (l gnetLogger) Warnf(f string, a ...any)  { l.log.Warn("gnet: " + fmt.Sprintf(f, a...)) }
func (l gnetLogger) Errorf(f string, a ...any) { l.log.Error("gnet: " + fmt.Sprintf(f, a...)) }
func (l gnetLogger) Fatalf(f string, a ...any) { l.log.Error("gnet: " + fmt.Sprintf(f, a...)) }
