package history

import (
	"net"
	"strconv"
	"time"
)

// consumer takes values with every kind of pop of one family at a time:
// blocking pops of one key or two, moves into the family's destination,
// LMPOP and BLMPOP with a count, LPOP and RPOP with and without one; and
// now and then a blocking pop whose client is killed (a reset or a
// half-close) while it waits, or just as it is served.
type consumer struct {
	client
}

func (c *consumer) run() {
	for time.Now().Before(c.rec.until) {
		if err := c.connect(); err != nil {
			c.rec.failed(err)
			return
		}
		f := &families[c.r.IntN(2)]
		op := c.pick(f)
		if c.r.IntN(100) == 0 {
			c.killed(op)
		} else {
			c.do(op)
		}
	}
	if c.c != nil {
		c.c.close()
	}
}

// connect makes the consumer's connection, if it has none, and learns its
// client id, by which a killed one is watched.
func (c *consumer) connect() error {
	if c.c != nil {
		return nil
	}
	conn, err := c.conn()
	if err != nil {
		return err
	}
	v, err := conn.do("CLIENT", "ID")
	if err != nil {
		return err
	}
	conn.id, err = strconv.ParseInt(v.(string), 10, 64)
	return err
}

// keys picks one or two keys of f to pop from: its sources, and its
// destination, which pops drain too.
func (c *consumer) keys(f *family) []string {
	all := append(append([]string(nil), f.sources...), f.dst)
	c.r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:1+c.r.IntN(2)]
}

// timeout is a blocking pop's timeout: 10 to 200 ms.
func (c *consumer) timeout() string {
	return seconds(time.Duration(10+c.r.IntN(190)) * time.Millisecond)
}

// pick makes a pop of f, and its command.
func (c *consumer) pick(f *family) (op popOp) {
	op.Keys, op.Count = c.keys(f), 1
	t := c.timeout()
	switch n := c.r.IntN(8); {
	case n < 3:
		op.Cmd, op.Blocking, op.args = f.bpop, true, append(append([]string{f.bpop}, op.Keys...), t)
	case n < 4:
		op.Keys, op.Dst, op.Blocking = []string{f.sources[c.r.IntN(len(f.sources))]}, f.dst, true
		op.Cmd, op.args = "BLMOVE", []string{"BLMOVE", op.Keys[0], f.dst, f.end, f.in, t}
		if !f.left && c.r.IntN(2) == 0 {
			op.Cmd, op.args = "BRPOPLPUSH", []string{"BRPOPLPUSH", op.Keys[0], f.dst, t}
		}
	case n < 6:
		op.Count = 1 + c.r.IntN(3)
		op.Cmd, op.args = "LMPOP", c.mpop(op.Keys, f.end, op.Count)
		if n == 5 {
			op.Cmd, op.Blocking, op.args = "BLMPOP", true, append([]string{"BLMPOP", t}, op.args[1:]...)
		}
	default:
		op.Keys = op.Keys[:1]
		op.Cmd, op.args = f.pop, []string{f.pop, op.Keys[0]}
		if n == 7 {
			op.Count = 1 + c.r.IntN(3)
			op.args = append(op.args, strconv.Itoa(op.Count))
		}
	}
	return op
}

func (c *consumer) mpop(keys []string, end string, count int) []string {
	args := append([]string{"LMPOP", strconv.Itoa(len(keys))}, keys...)
	return append(args, end, "COUNT", strconv.Itoa(count))
}

// popOp is a Pop with the command that makes it.
type popOp struct {
	Pop
	args []string
}

// do runs op and records it with what it took. While a blocking pop waits,
// the nemesis may reset its connection (recorder.killWaiting).
func (c *consumer) do(op popOp) {
	op.Call = c.rec.now()
	var v any
	conn := c.c
	if op.Blocking {
		op.Client = conn.id
		c.rec.wait(conn)
	}
	if err := c.c.write(op.args); err != nil {
		c.lose()
		op.Status = Unknown
	} else {
		v, op.Status = c.reply()
	}
	if op.Blocking {
		c.rec.done(conn)
	}
	op.Return = c.rec.now()
	if op.Status == OK {
		op.Key, op.Values = taken(op, v)
	}
	c.rec.pop(op.Pop)
}

// taken reads what a pop's answer says it took, and from which key.
func taken(op popOp, v any) (string, []string) {
	switch op.Cmd {
	case "BLMOVE", "BRPOPLPUSH":
		return op.Keys[0], []string{v.(string)}
	case "LPOP", "RPOP":
		if s, ok := v.(string); ok {
			return op.Keys[0], []string{s}
		}
		return op.Keys[0], strs(v)
	case "LMPOP", "BLMPOP":
		a := v.([]any)
		return a[0].(string), strs(a[1])
	}
	a := strs(v) // BLPOP, BRPOP: [key, value]
	return a[0], a[1:]
}

// killed writes a blocking pop that waits up to 10 s (or for ever), then
// kills the client within 20 ms: with a reset, after which what it may have
// taken is unknown, or a half-close, after which it reads what the server
// still sends until the server closes the connection: an answer, with what
// it took, or none (unknown again: Redis drops a reply it has not written
// when it frees the client).
func (c *consumer) killed(op popOp) {
	if !op.Blocking {
		c.do(op)
		return
	}
	if op.Cmd == "BLMPOP" {
		op.args[1] = "10"
	} else {
		op.args[len(op.args)-1] = "0" // the timeout, last
	}
	op.Call, op.Client = c.rec.now(), c.c.id
	c.c.write(op.args)
	time.Sleep(time.Duration(c.r.IntN(20_000)) * time.Microsecond)
	op.Status = Unknown
	if c.r.IntN(2) == 0 {
		c.c.kill(true)
		c.rec.watch(op.Client)
	} else if v, ok := c.halfClose(); ok {
		op.Status = OK
		op.Key, op.Values = taken(op, v)
	}
	c.c, op.Return = nil, c.rec.now()
	c.rec.killed()
	c.rec.pop(op.Pop)
}

// halfClose ends the connection's input to the server and reads until the
// server closes it: one answer, if the pop was served (ok), then the end.
// The server has let go of the client once the connection is closed.
func (c *consumer) halfClose() (v any, ok bool) {
	c.c.c.(interface{ CloseWrite() error }).CloseWrite()
	c.c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	v, err := c.c.read()
	ok = err == nil && v != nil
	for err == nil {
		_, err = c.c.read()
	}
	if ne, timeout := err.(net.Error); timeout && ne.Timeout() {
		c.rec.watch(c.c.id) // not closed yet: the prober tells when it goes
	} else {
		c.rec.goneAt(c.c.id, c.rec.now())
	}
	c.c.close()
	return v, ok
}
