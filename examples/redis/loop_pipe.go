package main

import (
	"net"
	"sync"
)

// pipeLoop is the server's loop for connections without a file descriptor
// (the tests' in-memory pipes): one goroutine runs the tasks it is handed in
// the order they come, a reader goroutine per connection hands it what the
// connection brings, and a writer goroutine per connection writes what the
// loop wrote, so that the loop never blocks on a pipe nobody reads. Inside a
// synctest bubble every one of them blocks durably.
type pipeLoop struct {
	s     *server
	mu    sync.Mutex
	tasks []func()
	wake  chan struct{} // a token: tasks has some
	done  chan struct{} // closed by stop
	ended chan struct{} // closed when the loop goroutine has returned
	conns sync.WaitGroup
	links map[*pipeLink]struct{} // on the loop: the connections open
}

func newPipeLoop(s *server) *pipeLoop {
	p := &pipeLoop{s: s, wake: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{}), links: map[*pipeLink]struct{}{}}
	go p.loop()
	return p
}

func (p *pipeLoop) loop() {
	defer close(p.ended)
	for {
		select {
		case <-p.wake:
		case <-p.done:
			for l := range p.links {
				l.conn.Close()
			}
			return
		}
		p.mu.Lock()
		tasks := p.tasks
		p.tasks = nil
		p.mu.Unlock()
		for _, f := range tasks {
			f()
		}
	}
}

func (p *pipeLoop) run(f func()) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	p.mu.Lock()
	p.tasks = append(p.tasks, f)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

func (p *pipeLoop) stop() {
	close(p.done)
	<-p.ended
	p.conns.Wait()
}

// pipeLink is a connection pipeLoop serves.
type pipeLink struct {
	p       *pipeLoop
	conn    net.Conn
	c       *client
	mu      sync.Mutex
	out     []byte        // written by the loop, not yet by the writer
	more    chan struct{} // a token: out has some, or closing is set
	closing bool
}

func (p *pipeLoop) enroll(conn net.Conn) error {
	l := &pipeLink{p: p, conn: conn, more: make(chan struct{}, 1)}
	if !p.run(func() {
		p.links[l] = struct{}{}
		l.c = p.s.open(l)
		p.conns.Go(l.reader)
		p.conns.Go(l.writer)
	}) {
		conn.Close()
	}
	return nil
}

// reader hands the loop what the connection brings, and its end.
func (l *pipeLink) reader() {
	for {
		buf := make([]byte, 16<<10)
		n, err := l.conn.Read(buf)
		if n > 0 {
			data := &pipeData{b: buf[:n]}
			l.p.run(func() { l.p.s.received(l.c, data) })
		}
		if err != nil {
			l.p.run(func() {
				delete(l.p.links, l)
				l.p.s.disconnected(l.c)
				l.p.s.flushAll()
			})
			l.close() // the writer ends
			return
		}
	}
}

// writer writes what the loop wrote, and closes the connection after it once
// the loop has closed the link.
func (l *pipeLink) writer() {
	for range l.more {
		l.mu.Lock()
		out, closing := l.out, l.closing
		l.out = nil
		l.mu.Unlock()
		if len(out) > 0 {
			l.conn.Write(out) // a failure shows in the reader
		}
		if closing {
			l.conn.Close()
			return
		}
	}
}

func (l *pipeLink) write(b []byte) error {
	l.mu.Lock()
	l.out = append(l.out, b...)
	l.mu.Unlock()
	l.signal()
	return nil
}

func (l *pipeLink) close() {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	l.signal()
}

func (l *pipeLink) signal() {
	select {
	case l.more <- struct{}{}:
	default:
	}
}

func (l *pipeLink) remoteAddr() net.Addr { return l.conn.RemoteAddr() }
func (l *pipeLink) localAddr() net.Addr  { return l.conn.LocalAddr() }

// pipeData is what a read brought, read by the loop.
type pipeData struct{ b []byte }

func (d *pipeData) Read(p []byte) (int, error) {
	n := copy(p, d.b)
	d.b = d.b[n:]
	return n, nil
}
