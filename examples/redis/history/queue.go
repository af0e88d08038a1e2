package history

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// The queue workload. Lists come in two families, so that each producer's
// order through a list can be checked: in the r family values are pushed at
// the right (RPUSH) and taken from the left (BLPOP, LPOP, LMPOP and BLMPOP
// LEFT, BLMOVE … LEFT RIGHT); in the l family the other way round (LPUSH;
// BRPOP, RPOP, … RIGHT, BRPOPLPUSH, BLMOVE … RIGHT LEFT). Each family has two
// source lists and a destination (dr, dl) that its moves push into and its
// pops drain too.

type family struct {
	push      string   // RPUSH or LPUSH
	left      bool     // pops take from the left
	sources   []string // where producers push
	dst       string   // where moves push
	pop, bpop string   // LPOP, BLPOP or RPOP, BRPOP
	end, in   string   // LEFT/RIGHT: the end pops take from, the end moves push to
}

var families = [2]family{
	{push: "RPUSH", left: true, sources: []string{"r0", "r1"}, dst: "dr", pop: "LPOP", bpop: "BLPOP", end: "LEFT", in: "RIGHT"},
	{push: "LPUSH", left: false, sources: []string{"l0", "l1"}, dst: "dl", pop: "RPOP", bpop: "BRPOP", end: "RIGHT", in: "LEFT"},
}

// queueKeys are every list the workload uses.
var queueKeys = []string{"r0", "r1", "dr", "l0", "l1", "dl"}

// Status is how an operation ended, as its client saw it.
type Status uint8

const (
	OK      Status = iota // answered
	Nil                   // a pop answered nil: it took nothing
	Unknown               // the client was killed, or its connection failed, before the answer
)

// Push is one push command: its values, in the order it pushed them.
type Push struct {
	Producer     int
	Seq          int // the producer's count of values before Values[0]: its order
	Key          string
	Values       []string
	Call, Return time.Duration // since the workload's start; Return of an Unknown is when it was killed
	Status       Status
}

// Pop is one pop command, of any kind.
type Pop struct {
	Cmd          string
	Keys         []string // the keys it asked for
	Key          string   // the key it took from
	Values       []string
	Dst          string // a move's destination ("" for a pop)
	Blocking     bool
	Count        int // how many values it could take
	Call, Return time.Duration
	Status       Status
	Client       int64 // the server's id of its client, for a blocking pop
}

// QueueHistory is a queue workload's run.
type QueueHistory struct {
	Seed   uint64
	Pushes []Push
	Pops   []Pop
	Final  map[string][]string // what each list held at the end
	Killed int                 // clients killed mid-command
	// Gone is when the server had surely let go of each killed consumer: it
	// no longer listed it (CLIENT LIST), or it closed the connection. Until
	// then it may have served it.
	Gone     map[int64]time.Duration
	Errors   []string // error replies to valid commands: each a failure
	Duration time.Duration
}

// QueueConfig says how to run the queue workload.
type QueueConfig struct {
	Addr                 string
	Seed                 uint64
	Duration             time.Duration
	Producers, Consumers int
}

// recorder is a run's shared state: the history so far, under mu.
type recorder struct {
	start time.Time
	until time.Time
	addr  string
	mu    sync.Mutex
	h     QueueHistory
	// waiting are the connections of consumers in a blocking pop, which
	// the nemesis may kill.
	waiting map[*conn]bool
	watched map[int64]bool // killed consumers the server may still list
}

func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) push(p Push) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Pushes = append(r.h.Pushes, p)
}

func (r *recorder) pop(p Pop) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Pops = append(r.h.Pops, p)
}

func (r *recorder) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Errors = append(r.h.Errors, err.Error())
}

// wait and done mark c in a blocking pop, and out of it.
func (r *recorder) wait(c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting[c] = true
}

func (r *recorder) done(c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.waiting, c)
}

// killWaiting resets the connection of one consumer in a blocking pop, if
// any is: its pop's outcome is then unknown.
func (r *recorder) killWaiting() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.waiting {
		delete(r.waiting, c)
		c.kill(true)
		r.watched[c.id] = true
		r.h.Killed++
		return
	}
}

func (r *recorder) killed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Killed++
}

// RunQueue runs the queue workload against cfg.Addr for cfg.Duration and
// returns its history. The lists it uses are emptied first and drained into
// Final at the end. An error is returned only if the server cannot be used
// at all; a connection that fails mid-run is an Unknown outcome.
func RunQueue(cfg QueueConfig) (*QueueHistory, error) {
	admin, err := dial(cfg.Addr)
	if err != nil {
		return nil, err
	}
	defer admin.close()
	if err := prepare(admin); err != nil {
		return nil, err
	}
	rec := &recorder{start: time.Now(), addr: cfg.Addr, h: QueueHistory{Seed: cfg.Seed, Gone: map[int64]time.Duration{}},
		waiting: map[*conn]bool{}, watched: map[int64]bool{}}
	rec.until = rec.start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for i := range cfg.Producers {
		wg.Go(func() {
			(&producer{client: client{rec: rec, r: rand.New(rand.NewPCG(cfg.Seed, uint64(i)))}, id: i}).run()
		})
	}
	for i := range cfg.Consumers {
		wg.Go(func() { (&consumer{client{rec: rec, r: rand.New(rand.NewPCG(cfg.Seed, uint64(1000+i)))}}).run() })
	}
	wg.Go(func() { busy(rec) })
	wg.Go(rec.watchLoop)
	wg.Wait()
	if err := rec.probe(admin, 10*time.Second); err != nil {
		return nil, err
	}
	rec.h.Duration = rec.now()
	rec.h.Final, err = drain(admin)
	return &rec.h, err
}

// prepare empties the workload's lists and makes big, a list whose LRANGE
// keeps the server busy now and then, so that events pile up behind it.
func prepare(c *conn) error {
	if _, err := c.do(append([]string{"DEL", "big"}, queueKeys...)...); err != nil {
		return err
	}
	args := []string{"RPUSH", "big"}
	for range 10_000 {
		args = append(args, "x")
	}
	for range 25 {
		if _, err := c.do(args...); err != nil {
			return err
		}
	}
	return nil
}

// busy runs LRANGE big 0 -1 (250,000 elements) every 10 to 40 ms until the
// run ends, and is the nemesis: 1 to 3 ms after each LRANGE is sent, while
// the server is likely still at it, it resets the connection of a consumer
// in a blocking pop, so that the reset waits behind the LRANGE with the
// pushes that came meanwhile (as in issue 71's reproduction).
func busy(rec *recorder) {
	c, err := dial(rec.addr)
	if err != nil {
		return
	}
	defer c.close()
	for time.Now().Before(rec.until) {
		if err := c.write([]string{"LRANGE", "big", "0", "-1"}); err != nil {
			return
		}
		time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Microsecond)
		rec.killWaiting()
		if _, err := c.read(); err != nil {
			return
		}
		time.Sleep(time.Duration(10+rand.IntN(30)) * time.Millisecond)
	}
}

// drain reads what each list holds, then deletes it.
func drain(c *conn) (map[string][]string, error) {
	final := map[string][]string{}
	for _, k := range queueKeys {
		v, err := c.do("LRANGE", k, "0", "-1")
		if err != nil {
			return nil, fmt.Errorf("history: the final read of %s: %w", k, err)
		}
		final[k] = strs(v)
	}
	_, err := c.do(append([]string{"DEL", "big"}, queueKeys...)...)
	return final, err
}

// client is what producers and consumers share: a connection, made again
// after a kill or a failure.
type client struct {
	rec *recorder
	c   *conn
	r   *rand.Rand
}

func (cl *client) conn() (*conn, error) {
	if cl.c == nil {
		c, err := dial(cl.rec.addr)
		if err != nil {
			return nil, err
		}
		cl.c = c
	}
	return cl.c, nil
}

// lose forgets a connection that failed.
func (cl *client) lose() {
	if cl.c != nil {
		cl.c.close()
		cl.c = nil
	}
}

// kill kills the connection mid-command: a reset, or a half-close.
func (cl *client) kill() {
	cl.c.kill(cl.r.IntN(3) > 0)
	cl.c = nil
	cl.rec.killed()
}

// reply reads one reply of an operation. A failed read is an Unknown; an
// error reply too, recorded as a failure (the workload sends only valid
// commands).
func (cl *client) reply() (any, Status) {
	v, err := cl.c.read()
	var er errReply
	switch {
	case errors.As(err, &er):
		cl.rec.failed(fmt.Errorf("the server answered %w", err))
		cl.lose() // within an array, the rest is unread
		return nil, Unknown
	case err != nil:
		cl.lose()
		return nil, Unknown
	case v == nil:
		return nil, Nil
	}
	return v, OK
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
