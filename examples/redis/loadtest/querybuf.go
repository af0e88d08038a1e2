package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The query-buffer workload: one client sends a command whose args grow
// until the server closes its connection at client-query-buffer-limit (1 GiB
// by default in both servers): three bulks of 512 MB, the most
// proto-max-bulk-len lets one be, sent a MiB at a time. Meanwhile the
// server's RSS is sampled every 5 ms, and a second client sends PING every
// 20 ms, each to be answered within a second, before the next.

// bigBulk is a bulk of proto-max-bulk-len's default, 512 MB.
const bigBulk = 512 << 20

func runQueryBuffer(s *server) (map[string]float64, error) {
	base, err := s.rss()
	if err != nil {
		return nil, err
	}
	var peak atomic.Int64
	peak.Store(base)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { watchRSS(s, &peak, stop) })
	var p pinger
	wg.Go(func() { p.run(s.addr, stop) })
	sent, closed, err := fillQueryBuffer(s.addr)
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	m := map[string]float64{
		"base_rss_mb":    float64(base) / (1 << 20),
		"peak_rss_mb":    float64(peak.Load()) / (1 << 20),
		"sent_mb":        float64(sent) / (1 << 20),
		"closed":         0,
		"pings_answered": float64(p.pings.Load()),
		"ping_failures":  float64(p.failures.Load()),
		"ping_max_ms":    float64(p.max.Load()) / 1e6,
	}
	if closed {
		m["closed"] = 1
	}
	return m, nil
}

// watchRSS keeps the server's peak resident set in peak, read every 5 ms
// until stop closes.
func watchRSS(s *server, peak *atomic.Int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		if r, err := s.rss(); err == nil && r > peak.Load() {
			peak.Store(r)
		}
	}
}

// pinger is another client, which PINGs every 20 ms while one fills its
// query buffer: how long the server keeps every other client waiting.
type pinger struct {
	pings, failures atomic.Int64
	max             atomic.Int64 // the slowest PING, ns
}

func (p *pinger) run(addr string, stop <-chan struct{}) {
	c, err := dialRaw(addr)
	if err != nil {
		p.failures.Add(1)
		return
	}
	defer c.Close()
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		begin := time.Now()
		c.SetDeadline(begin.Add(time.Second))
		if l, err := c.line("PING"); err != nil || l != "+PONG" {
			p.failures.Add(1)
			return
		}
		p.pings.Add(1)
		if d := int64(time.Since(begin)); d > p.max.Load() {
			p.max.Store(d)
		}
	}
}

// fillQueryBuffer sends *4 and three 512 MB bulks, until the server closes
// the connection or all is sent (and no reply comes within 5 s). It returns
// the bytes sent and whether the server closed the connection.
func fillQueryBuffer(addr string) (sent int64, closed bool, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	gone := make(chan struct{})
	go func() { // a read ends when the server closes, or answers
		if _, err := bufio.NewReader(conn).ReadByte(); err != nil {
			close(gone)
		}
	}()
	write := func(b []byte) bool {
		n, err := conn.Write(b)
		sent += int64(n)
		return err == nil
	}
	chunk := bytes.Repeat([]byte{'x'}, 1<<20)
	if !write([]byte("*4\r\n$4\r\nECHO\r\n")) {
		return sent, true, nil
	}
	for range 3 {
		if !write(fmt.Appendf(nil, "$%d\r\n", bigBulk)) {
			return sent, true, nil
		}
		for range bigBulk / len(chunk) {
			if !write(chunk) {
				return sent, true, nil
			}
		}
		if !write([]byte("\r\n")) {
			return sent, true, nil
		}
	}
	select {
	case <-gone:
		return sent, true, nil
	case <-time.After(5 * time.Second):
		return sent, false, nil
	}
}
