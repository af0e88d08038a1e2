package main

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// outbox is a connection's answers on their way out, in the order the
// requests came. Whoever gives the answer that the first request waits for
// (its handler on the reader, or a purgatory's OnComplete on any goroutine)
// encodes it and every answer ready behind it, and writes them to the socket
// at once if the socket takes them without blocking. Only a write that would
// block goes to the connection's writer goroutine, which waits for the client
// to read. So an answer given later, such as a parked fetch's, goes out on
// the goroutine that gave it and wakes no other.
//
// What it pays for, measured by the load test (go run ./loadtest -rates
// 5000,10000 -duration 10s -runs 1 -idle-fetches 50 -idle-max-wait 1s
// -wake-fetches 0 -group-members 0) on a 2-core Intel Xeon, commit edb189b,
// which brought the outbox, and its parent 1faab30 (every later answer
// through the writer goroutine) alternated, 3 runs each, medians: CPU per record 0.81x
// and 0.85x of 1faab30's at R = 1 (5,000 and 10,000 records/s), 0.92x and
// 0.94x at R = 3. Before that, the reader's own write of an answer given at
// once (commit 11e0f4e, medians of 3) had taken R = 1's CPU per record from
// 1.10x and 1.08x of kfake's to 0.95x and 0.92x.
//
// Concurrency: mu guards every field below it; reply may be called from any
// goroutine, enqueue from the reader alone, write from the writer alone.
type outbox struct {
	raw   syscall.RawConn // nil if the connection has none: every write is the writer's
	nc    net.Conn
	slots chan struct{} // one per answer not yet written: the reader waits when all are taken
	kick  chan struct{} // wakes the writer

	mu       sync.Mutex
	queue    []*pendingAnswer // answers not yet encoded, in request order
	out      []byte           // encoded answers not yet written
	outN     int              // how many answers out holds (their slots, freed once written)
	spare    []byte           // out's other buffer, while one is being written
	writing  bool             // someone writes out now; no one else may
	handed   bool             // the writer does, the socket being full
	readDone bool             // the reader has ended: the writer ends once all is written
	failed   bool             // a write failed: nothing more is written
	handoffs int              // writes handed to the writer so far (tests read it)
}

// maxInFlight bounds the requests a connection may have unanswered or
// unwritten; its reader waits beyond it, which holds the client back
// (Kafka's broker mutes the channel instead).
const maxInFlight = 64

func (o *outbox) init(nc net.Conn) {
	o.nc = nc
	o.slots = make(chan struct{}, maxInFlight)
	o.kick = make(chan struct{}, 1)
	if sc, ok := nc.(syscall.Conn); ok {
		o.raw, _ = sc.SyscallConn()
	}
}

// pendingAnswer is one request's answer, given once.
type pendingAnswer struct {
	h    header
	o    *outbox
	done bool          // replied; under o.mu
	resp kmsg.Response // framed, or nil for none
}

// enqueue takes a slot, waiting while maxInFlight answers are still to be
// written, and returns the place of the answer to h, last in the outbox.
// Only the reader calls it.
func (o *outbox) enqueue(h header) *pendingAnswer {
	o.slots <- struct{}{}
	a := &pendingAnswer{h: h, o: o}
	o.mu.Lock()
	o.queue = append(o.queue, a)
	o.mu.Unlock()
	return a
}

func (a *pendingAnswer) reply(resp kmsg.Response) {
	if resp != nil {
		resp.SetVersion(a.h.version)
		resp = &framed{resp, a.h}
	}
	o := a.o
	o.mu.Lock()
	if a.done {
		o.mu.Unlock()
		return
	}
	a.resp, a.done = resp, true
	o.push()
}

// push encodes the answers ready at the front of the queue, then writes out
// unless someone is writing already. It is called with mu held and unlocks
// it.
func (o *outbox) push() {
	o.encodeReady()
	if o.writing || o.failed || len(o.out) == 0 {
		o.mu.Unlock()
		return
	}
	o.writing = true
	for o.raw != nil && len(o.out) > 0 {
		buf, n := o.out, o.outN
		o.out, o.outN = o.spare[:0], 0
		o.mu.Unlock()
		written, err := o.tryWrite(buf)
		o.mu.Lock()
		if err != nil {
			o.outN += n
			o.fail() // which empties out
			break
		}
		if written < len(buf) { // the rest, first, is the writer's
			o.out = append(buf[written:len(buf):len(buf)], o.out...)
			o.outN += n
			break
		}
		o.spare = buf[:0]
		o.free(n)
		o.encodeReady()
	}
	if len(o.out) > 0 { // the socket is full, or there is no way to write without blocking
		o.handed = true
		o.handoffs++
		o.mu.Unlock()
		o.wake()
		return
	}
	o.writing = false
	end := o.ended()
	o.mu.Unlock()
	if end {
		o.wake()
	}
}

// encodeReady moves the answers given at the front of the queue into out, in
// order, up to the first not given yet. The caller holds mu.
func (o *outbox) encodeReady() {
	n := 0
	for ; n < len(o.queue) && o.queue[n].done; n++ {
		if f, ok := o.queue[n].resp.(*framed); ok && !o.failed {
			o.out = f.appendTo(o.out)
			o.outN++
		} else {
			o.free(1) // no answer (acks=0), or nowhere to write it
		}
	}
	clear(o.queue[:n])
	o.queue = o.queue[n:]
}

// tryWrite writes what buf's start the socket takes now, without waiting.
func (o *outbox) tryWrite(buf []byte) (int, error) {
	var n int
	var err error
	if rerr := o.raw.Write(func(fd uintptr) bool {
		n, err = syscall.Write(int(fd), buf)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			n, err = 0, nil
		}
		return true // never wait here
	}); rerr != nil {
		return 0, rerr
	}
	return max(n, 0), err
}

// write runs on the connection's writer goroutine: it writes, waiting as long
// as the client takes to read, whatever was handed to it, and returns once
// the reader has ended and every answer is written (or a write failed).
func (o *outbox) write() {
	for range o.kick {
		o.mu.Lock()
		for o.handed && len(o.out) > 0 && !o.failed {
			buf, n := o.out, o.outN
			o.out, o.outN = o.spare[:0], 0
			o.mu.Unlock()
			_, err := o.nc.Write(buf)
			o.mu.Lock()
			o.spare = buf[:0]
			if err != nil {
				o.outN += n // fail frees them with the rest
				o.fail()
				break
			}
			o.free(n) // out's answers, given meanwhile, keep theirs until written
			o.encodeReady()
		}
		if o.handed {
			o.handed, o.writing = false, false
		}
		end := o.ended()
		o.mu.Unlock()
		if end {
			return
		}
	}
}

// ended reports whether the writer may end: the reader has, and nothing is
// left to write. The caller holds mu.
func (o *outbox) ended() bool {
	return o.readDone && !o.writing && (o.failed || len(o.queue) == 0 && len(o.out) == 0)
}

// readEnded tells the writer that no request will come any more: it ends
// once every answer still due is written.
func (o *outbox) readEnded() {
	o.mu.Lock()
	o.readDone = true
	o.mu.Unlock()
	o.wake()
}

func (o *outbox) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// fail gives up writing after a write failed (the client is gone): it closes
// the connection, which ends the reader, and frees every slot, answered or
// not, so that the reader never waits for one. The caller holds mu.
func (o *outbox) fail() {
	o.failed = true
	o.nc.Close()
	o.free(o.outN + len(o.queue))
	o.out, o.outN = o.out[:0], 0
	for _, a := range o.queue {
		a.done = true // a later reply is dropped
	}
	clear(o.queue)
	o.queue = o.queue[:0]
}

// free gives back n slots.
func (o *outbox) free(n int) {
	for range n {
		<-o.slots
	}
}
