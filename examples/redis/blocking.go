package main

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP. A client that finds
// every key empty blocks: its command becomes an operation of the server's
// purgatory, watched under its keys, with its timeout. A write that gives one
// of those keys elements makes it ready, and once the write's command (or
// EXEC) is over, serveReady hands the key's elements to its blocked clients
// in the order they blocked (purgatory.HandOff): each client's TryComplete
// takes what it is owed, and the hand-off stops at the first that finds the
// list empty (src/blocked.c's handleClientsBlockedOnKeys,
// serveClientsBlockedOnListKey).

type blockKind uint8

const (
	blockPop  blockKind = iota // BLPOP, BRPOP
	blockMove                  // BLMOVE, BRPOPLPUSH
	blockMpop                  // BLMPOP
)

// blockedOp is a blocked client's wait. Its fields but the result are set
// before it is added; the result (key, vals, errMsg) is written by the try
// that completes it, on the loop, and read on the loop once OnComplete has
// run.
type blockedOp struct {
	purgatory.Op
	c      *client
	kind   blockKind
	keys   []string
	left   bool   // pops from the left end
	dst    string // blockMove: where the element goes
	toLeft bool   // blockMove: to dst's left end
	count  int64  // blockMpop: elements at most

	unblockErr bool // CLIENT UNBLOCK ... ERROR, set before its ForceComplete

	answered bool        // the try that served it answered it (server.served)
	over     atomic.Bool // OnComplete has run: the wait has ended
	settleFn func()      // settles it on the loop: bound once, for OnComplete

	free atomic.Bool // the purgatory is done with its last use (Recycle): c may use it again
}

// TryComplete serves the client from the key the hand-off under way serves,
// or, in its own first tries, from the first of its keys that holds
// elements: it takes what the client is owed, answers it (server.served) and
// reports true, or reports false if the list is empty. A client whose
// connection is gone is done at once, and takes nothing. It runs on the loop:
// only serveReady's HandOff and blockOn's TryCompleteElseWatch try.
func (b *blockedOp) TryComplete() bool {
	if b.c.gone {
		return true // gone: let the next client have it
	}
	s := b.c.srv
	key := s.serving
	if key == "" {
		for _, k := range b.keys {
			if l, _ := s.db.list(k); l != nil && l.len() > 0 {
				key = k
				break
			}
		}
	}
	l, _ := s.db.list(key)
	if key == "" || l == nil || l.len() == 0 {
		return false
	}
	c := b.c
	switch b.kind {
	case blockPop:
		s.popAndReply(c, key, l, b.left, 1, replyKeyElement)
		s.stats.handedOff.Add(1)
	case blockMpop:
		n := int(min(b.count, int64(l.len())))
		s.popAndReply(c, key, l, b.left, n, replyKeyElements)
		s.stats.handedOff.Add(int64(n))
	default: // BLMOVE
		if _, wrong := s.db.list(b.dst); wrong && b.dst != key {
			c.w.err(errWrongType) // the element stays for the next client
			break
		}
		v, _ := s.move(key, b.dst, b.left, b.toLeft)
		c.w.bulk(v) // the element lives on in its destination list: the reply takes nothing
		s.stats.handedOff.Add(1)
	}
	s.served(b)
	return true
}

// served ends the wait of a client a try has just served and answered (its
// reply is in the client's buffer): the loop writes it once it is done with
// what woke it. The client is no longer blocked. On the loop.
func (s *server) served(b *blockedOp) {
	c := b.c
	b.answered = true
	c.op = nil
	s.db.unblock(b.keys)
	s.mark(c)
}

// OnComplete hands a wait that ended otherwise than by a try that served it
// to the loop, to be answered there (server.settle). It takes no lock and
// never blocks, whichever goroutine ended the wait: a wheel worker (a
// timeout), the context's (the client went away), the purgatory's Close, or
// the loop itself (CLIENT UNBLOCK).
func (b *blockedOp) OnComplete() {
	answered := b.answered // the try that set it ran before: the purgatory orders them
	b.over.Store(true)
	if !answered {
		b.c.srv.loop.run(b.settleFn) // false only once the loop has stopped: nobody is left to answer
	}
}

// ended reports whether the wait has ended (OnComplete has run).
func (b *blockedOp) ended() bool { return b.over.Load() }

func (b *blockedOp) OnExpiration() {}

// Recycle is the purgatory saying it is done with the wait: the client's
// next wait may use the operation again (client.waitOp).
func (b *blockedOp) Recycle() { b.free.Store(true) }

// waitOp returns an operation for a wait of c's, reset: its last wait's
// once the purgatory is done with it, so that a client in a BLPOP loop
// allocates none per wait, else a new one. Its keys' array is kept. On the
// loop; blockOn claims the operation.
func (c *client) waitOp(kind blockKind, left bool) *blockedOp {
	b := c.lastOp
	if b == nil || !b.free.Load() {
		b = &blockedOp{}
		b.settleFn = func() {
			c.srv.settle(b)
			c.srv.flushAll()
		}
		b.free.Store(true)
		c.lastOp = b
	}
	b.over.Store(false)
	b.kind, b.keys, b.left = kind, b.keys[:0], left
	b.dst, b.toLeft, b.count, b.unblockErr = "", false, 0, false
	b.answered = false
	return b
}

// settle answers b's client if b is still its wait: a wait that has ended
// otherwise than by a hand-off (timed out, unblocked, shut down). A client
// gone, or answered already (shutdown's last pass, CLIENT UNBLOCK), leaves
// nothing to do. On the loop; the caller flushes.
func (s *server) settle(b *blockedOp) {
	c := b.c
	if c.op != b || !b.ended() {
		return
	}
	c.op = nil
	s.db.unblock(b.keys)
	b.answer(c)
	s.mark(c)
}

// answer writes the reply of a wait that ended otherwise than by a try that
// served it. On the loop.
func (b *blockedOp) answer(c *client) {
	w := &c.w
	switch b.Outcome() {
	case purgatory.Completed: // gone before it was served: no reply
	case purgatory.Forced: // CLIENT UNBLOCK
		if b.unblockErr {
			w.err(errUnblocked)
			return
		}
		w.nullArray()
	case purgatory.Expired:
		w.nullArray()
	case purgatory.Closed:
		w.err(errShutdown)
	}
}

// blockOn blocks c on op's keys until op.Timeout (NoTimeout for none). On
// the loop, which has found every key empty.
func (s *server) blockOn(c *client, op *blockedOp, timeout time.Duration) {
	op.free.Store(false)
	op.c = c
	op.Timeout, op.Context = timeout, c.ctx
	c.op = op
	s.db.block(op.keys)
	s.blocked.TryCompleteElseWatch(op, op.keys...)
}

// parseTimeout is Redis's getTimeoutFromObjectOrReply for seconds: a float,
// rounded up to the millisecond; 0 waits for ever (NoTimeout), and one too
// far for the clock saturates to NoTimeout. It writes Redis's error and
// reports false for a bad one.
func parseTimeout(c *client, arg []byte) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(string(arg)), 64)
	if err != nil || math.IsNaN(f) || len(arg) == 0 || arg[0] == ' ' {
		c.w.err(errTimeoutFloat)
		return 0, false
	}
	ms := math.Ceil(f * 1000)
	switch {
	case ms < 0:
		c.w.err(errTimeoutNeg)
		return 0, false
	case ms == 0:
		return purgatory.NoTimeout, true
	case ms >= float64(math.MaxInt64/int64(time.Millisecond)):
		return purgatory.NoTimeout, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// bpopCmd is BLPOP and BRPOP: key... timeout.
func bpopCmd(left bool) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		timeout, ok := parseTimeout(c, args[len(args)-1])
		if !ok {
			return
		}
		b := c.waitOp(blockPop, left)
		for _, k := range args[1 : len(args)-1] {
			b.keys = append(b.keys, string(k))
		}
		for _, key := range b.keys {
			l, wrong := s.db.list(key)
			if wrong {
				c.w.err(errWrongType)
				return
			}
			if l != nil && l.len() > 0 {
				s.popAndReply(c, key, l, left, 1, replyKeyElement)
				return
			}
		}
		if c.inExec {
			c.w.nullArray()
			return
		}
		s.blockOn(c, b, timeout)
	}
}

// blmoveCmd is BLMOVE, and BRPOPLPUSH (fixed ends).
func blmoveCmd(fixed bool) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		fromLeft, toLeft, ok := moveEnds(c, args, fixed)
		if !ok {
			return
		}
		timeout, ok := parseTimeout(c, args[len(args)-1])
		if !ok {
			return
		}
		src, dst := string(args[1]), string(args[2])
		l, wrong := s.db.list(src)
		switch {
		case wrong:
			c.w.err(errWrongType)
			return
		case l != nil && l.len() > 0:
			v, wrong := s.move(src, dst, fromLeft, toLeft)
			if wrong {
				c.w.err(errWrongType)
				return
			}
			c.w.bulk(v)
			return
		case c.inExec:
			c.w.nullBulk()
			return
		}
		b := c.waitOp(blockMove, fromLeft)
		b.keys, b.dst, b.toLeft = append(b.keys, src), dst, toLeft
		s.blockOn(c, b, timeout)
	}
}

// blmpopCmd is BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT n].
func blmpopCmd(s *server, c *client, args [][]byte) {
	timeout, ok := parseTimeout(c, args[1])
	if !ok {
		return
	}
	m, ok := parseMpop(c, args[2:])
	if !ok {
		return
	}
	if s.mpopFrom(c, m) {
		return
	}
	if c.inExec {
		c.w.nullArray()
		return
	}
	b := c.waitOp(blockMpop, m.left)
	b.keys, b.count = append(b.keys, m.keys...), m.count
	s.blockOn(c, b, timeout)
}
