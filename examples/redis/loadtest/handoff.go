package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The hand-off workload: consumers clients blocked in BLPOP q, and producers
// LPUSHing to q, one element per command (pipelined), at a fixed rate or as
// fast as they can. Each element is "SEQ:NANOS": its number, unique in the
// run, and the wall-clock time its producer wrote it, so a consumer reads
// the push-to-pop latency off the element it pops.
//
// As fast as they can means with at most as many elements pushed and not yet
// popped as there are consumers: a producer pushes while there is room. So
// every element finds a consumer that is, or soon will be, blocked for it,
// and what is measured is the hand-off, not BLPOP taking from a long list:
// the highest rate the server keeps up with.

// handoffConfig is one run's shape.
type handoffConfig struct {
	rate      int // elements per second; 0 as fast as they can
	duration  time.Duration
	consumers int
	producers int
}

// consumerTimeout is each BLPOP's timeout: a consumer asks again after it.
const consumerTimeout = "1"

func runHandoff(s *server, cfg handoffConfig) (map[string]float64, error) {
	var pushed, popped atomic.Int64
	errc := make(chan error, cfg.consumers+cfg.producers)
	cons, stop, err := startConsumers(s.addr, cfg.consumers, &popped, errc)
	if err != nil {
		return nil, err
	}
	defer stop()
	ctl, err := dialRaw(s.addr)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	if err := waitBlocked(ctl, cfg.consumers); err != nil {
		return nil, err
	}

	cpu0, err := s.cpu()
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	var pwg sync.WaitGroup
	var seq atomic.Int64
	for range cfg.producers {
		pwg.Go(func() {
			if err := produce(s.addr, cfg, &seq, &pushed, &popped); err != nil {
				errc <- err
			}
		})
	}
	pwg.Wait()
	k := handoffCounts{window: time.Since(begin), pushed: pushed.Load(), poppedInWindow: popped.Load()}
	// Drain: every element pushed is popped, or the server lost it.
	for deadline := time.Now().Add(5 * time.Second); popped.Load() < k.pushed && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	cpu1, err := s.cpu()
	if err != nil {
		return nil, err
	}
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	if k.left, err = ctl.int("LLEN", "q"); err != nil {
		return nil, err
	}
	k.popped, k.cpu = popped.Load(), cpu1-cpu0
	return handoffMetrics(cfg, cons, k), nil
}

// startConsumers connects n consumers, each blocking in BLPOP on its own
// goroutine; stop closes them and waits for their goroutines.
func startConsumers(addr string, n int, popped *atomic.Int64, errc chan<- error) (cons []*consumer, stop func(), err error) {
	var wg sync.WaitGroup
	stop = func() {
		for _, c := range cons {
			c.conn.Close()
		}
		wg.Wait()
	}
	for range n {
		c, err := dialConsumer(addr)
		if err != nil {
			stop()
			return nil, nil, err
		}
		cons = append(cons, c)
		wg.Go(func() {
			if err := c.run(popped); err != nil {
				errc <- err
			}
		})
	}
	return cons, stop, nil
}

// handoffCounts is what a hand-off run counted.
type handoffCounts struct {
	window                 time.Duration // the producers' window
	pushed, poppedInWindow int64         // by the window's end
	popped, left           int64         // once drained, and what the list kept
	cpu                    time.Duration // the server's, window and drain
}

// handoffMetrics is a run's results: counts, rates, push-to-pop latency,
// elements lost or popped twice, CPU per element, and whether the server
// kept up.
func handoffMetrics(cfg handoffConfig, cons []*consumer, k handoffCounts) map[string]float64 {
	var lat, seqs []int64
	for _, c := range cons {
		c.mu.Lock()
		lat = append(lat, c.lat...)
		seqs = append(seqs, c.seqs...)
		c.mu.Unlock()
	}
	slices.Sort(seqs)
	twice := 0
	for i := 1; i < len(seqs); i++ {
		if seqs[i] == seqs[i-1] {
			twice++
		}
	}
	slices.Sort(lat)
	n, w := k.pushed, k.window.Seconds()
	m := map[string]float64{
		"pushed": float64(n), "popped": float64(k.popped), "left_in_list": float64(k.left),
		"lost": float64(n - k.popped - k.left), "twice": float64(twice),
		"pushed_per_s": float64(n) / w, "popped_per_s": float64(k.poppedInWindow) / w,
		"lat_p50_ms": quantileMs(lat, 0.50), "lat_p99_ms": quantileMs(lat, 0.99), "lat_p999_ms": quantileMs(lat, 0.999),
		"cpu_us_per_element": float64(k.cpu.Microseconds()) / float64(max(k.popped, 1)),
		"backlog_at_end":     float64(n - k.poppedInWindow), "window_s": w, "keeps_up": 0,
		"consumers": float64(cfg.consumers), "producers": float64(cfg.producers), "target_rate_per_sec": float64(cfg.rate),
	}
	// Kept up: the producers pushed at the rate (97 %), what was pushed
	// and not yet popped when they stopped is at most 100 ms of it, and
	// push-to-pop p50 is under 10 ms (W5sweep's bound in bench/).
	if cfg.rate == 0 || float64(n) >= 0.97*float64(cfg.rate)*cfg.duration.Seconds() &&
		float64(n-k.poppedInWindow) <= max(float64(cfg.consumers), float64(cfg.rate)/10) &&
		m["lat_p50_ms"] < 10 {
		m["keeps_up"] = 1
	}
	return m
}

func quantileMs(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]) / 1e6
}

// consumer is a client in a BLPOP loop.
type consumer struct {
	conn net.Conn
	r    *bufio.Reader
	mu   sync.Mutex
	lat  []int64 // push-to-pop latency of each element popped, ns
	seqs []int64
}

func dialConsumer(addr string) (*consumer, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &consumer{conn: conn, r: bufio.NewReader(conn)}, nil
}

var blpop = []byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$" + strconv.Itoa(len(consumerTimeout)) + "\r\n" + consumerTimeout + "\r\n")

// run pops until the connection is closed (the run is over).
func (c *consumer) run(popped *atomic.Int64) error {
	for {
		if _, err := c.conn.Write(blpop); err != nil {
			return nil
		}
		v, err := readArray(c.r)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("consumer: %w", err)
		}
		if v == nil {
			continue // timed out
		}
		now := time.Now().UnixNano()
		seqB, tsB, ok := bytes.Cut(v[1], []byte{':'})
		s, err1 := strconv.ParseInt(string(seqB), 10, 64)
		ts, err2 := strconv.ParseInt(string(tsB), 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("consumer: popped %q, not SEQ:NANOS", v[1])
		}
		c.mu.Lock()
		c.lat = append(c.lat, now-ts)
		c.seqs = append(c.seqs, s)
		c.mu.Unlock()
		popped.Add(1)
	}
}

// produce pushes elements at cfg.rate/cfg.producers a second for
// cfg.duration, every millisecond what is due, each an LPUSH of its own in
// one write; or, with rate 0, as fast as there is room (see above).
func produce(addr string, cfg handoffConfig, seq, pushed, popped *atomic.Int64) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	acks := make(chan error, 1)
	var sent atomic.Int64
	go readAcks(conn, &sent, acks)
	var buf []byte
	begin := time.Now()
	rate := float64(cfg.rate) / float64(cfg.producers)
	done := int64(0)
	for elapsed := time.Duration(0); elapsed < cfg.duration; elapsed = time.Since(begin) {
		due := int64(cfg.consumers) - (pushed.Load() - popped.Load()) // closed loop: one each
		if cfg.rate > 0 {
			due = int64(rate*elapsed.Seconds()) - done
		}
		due = min(due, 256)
		if due <= 0 {
			if cfg.rate > 0 {
				time.Sleep(time.Millisecond)
			} else {
				runtime.Gosched()
			}
			continue
		}
		buf = buf[:0]
		now := strconv.FormatInt(time.Now().UnixNano(), 10)
		for range due {
			el := strconv.FormatInt(seq.Add(1), 10) + ":" + now
			buf = fmt.Appendf(buf, "*3\r\n$5\r\nLPUSH\r\n$1\r\nq\r\n$%d\r\n%s\r\n", len(el), el)
		}
		sent.Add(due)
		pushed.Add(due)
		done += due
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		select {
		case err := <-acks:
			return err
		default:
		}
	}
	// Wait for the last replies, so the elements are in before the drain.
	for deadline := time.Now().Add(10 * time.Second); sent.Load() > 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("producer: %d LPUSHes unanswered 10 s after the last", sent.Load())
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// readAcks reads a producer's replies, one integer each, uncounting each
// from sent, until the connection closes or a reply is not an integer.
func readAcks(conn net.Conn, sent *atomic.Int64, acks chan<- error) {
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			acks <- err
			return
		}
		if line[0] != ':' {
			acks <- fmt.Errorf("producer: LPUSH answered %q", line)
			return
		}
		sent.Add(-1)
	}
}

// raw is a control client: one command at a time.
type raw struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(addr string) (*raw, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &raw{conn, bufio.NewReader(conn)}, nil
}

// line sends a command and returns its reply's first line.
func (c *raw) line(args ...string) (string, error) {
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(b); err != nil {
		return "", err
	}
	l, err := c.r.ReadString('\n')
	return string(bytes.TrimRight([]byte(l), "\r\n")), err
}

func (c *raw) int(args ...string) (int64, error) {
	l, err := c.line(args...)
	if err != nil {
		return 0, err
	}
	if len(l) == 0 || l[0] != ':' {
		return 0, fmt.Errorf("%v answered %q", args, l)
	}
	return strconv.ParseInt(l[1:], 10, 64)
}

// waitBlocked waits until INFO says at least n clients are blocked (the
// timeout workload's clients block beside the consumers).
func waitBlocked(c *raw, n int) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l, err := c.line("INFO", "clients")
		if err != nil {
			return err
		}
		size, _ := strconv.Atoi(l[1:])
		body := make([]byte, size+2)
		if _, err := io.ReadFull(c.r, body); err != nil {
			return err
		}
		for _, f := range bytes.Split(body, []byte("\r\n")) {
			if v, ok := bytes.CutPrefix(f, []byte("blocked_clients:")); ok {
				if b, err := strconv.Atoi(string(v)); err == nil && b >= n {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("%d consumers not blocked within 10 s", n)
}

// readArray reads a reply to BLPOP: an array of two bulks, or a null (nil).
func readArray(r *bufio.Reader) ([][]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	switch {
	case bytes.Equal(line, []byte("*-1\r\n")), bytes.Equal(line, []byte("_\r\n")):
		return nil, nil
	case !bytes.Equal(line, []byte("*2\r\n")):
		return nil, fmt.Errorf("BLPOP answered %q", line)
	}
	out := make([][]byte, 2)
	for i := range out {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if len(h) < 4 || h[0] != '$' {
			return nil, fmt.Errorf("BLPOP answered %q in its array", h)
		}
		n, err := strconv.Atoi(string(h[1 : len(h)-2]))
		if err != nil {
			return nil, err
		}
		out[i] = make([]byte, n+2)
		if _, err := io.ReadFull(r, out[i]); err != nil {
			return nil, err
		}
		out[i] = out[i][:n]
	}
	return out, nil
}
