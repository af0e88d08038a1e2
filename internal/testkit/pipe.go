package testkit

import (
	"context"
	"net"
	"sync"
)

// PipeListener is a net.Listener whose connections are in-memory pipes, so
// that an http.Server and its clients run inside a synctest bubble: give
// Dial to an http.Transport as its DialContext.
type PipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewPipeListener returns a PipeListener ready to Accept.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *PipeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *PipeListener) Addr() net.Addr { return pipeAddr{} }

// Dial connects to the listener, whatever the address.
func (l *PipeListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
