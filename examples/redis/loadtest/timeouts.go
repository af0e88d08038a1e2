package main

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The timeout workload: how late BLPOP's timeouts answer. Clients, each in a
// loop of BLPOP on a key of its own that nothing pushes to, with a timeout
// of timeoutMs, for the run's duration; alone, or beside the hand-off at a
// fixed rate (the example's timeouts fire on the wheel's goroutines, which
// need a P while the loop holds the one it has). Lateness is the reply's
// arrival minus the command's send minus the timeout, at the client.

const (
	timeoutClients = 32
	timeoutMs      = 10
)

// runTimeouts runs the timeout clients for d, beside the hand-off at rate
// (0: alone).
func runTimeouts(s *server, rate int, d time.Duration, consumers, producers int) (map[string]float64, error) {
	var hand map[string]float64
	var herr error
	var wg sync.WaitGroup
	if rate > 0 {
		wg.Go(func() {
			hand, herr = runHandoff(s, handoffConfig{rate: rate, duration: d, consumers: consumers, producers: producers})
		})
	}
	late := make([][]int64, timeoutClients)
	errs := make([]error, timeoutClients)
	for i := range timeoutClients {
		wg.Go(func() { late[i], errs[i] = timeOut(s.addr, "t:"+strconv.Itoa(i), d) })
	}
	wg.Wait()
	var all []int64
	for i, l := range late {
		if errs[i] != nil {
			return nil, errs[i]
		}
		all = append(all, l...)
	}
	if herr != nil {
		return nil, herr
	}
	slices.Sort(all)
	m := map[string]float64{
		"timeouts": float64(len(all)), "timeout_ms": timeoutMs,
		"late_p50_ms": quantileMs(all, 0.50), "late_p99_ms": quantileMs(all, 0.99), "late_p999_ms": quantileMs(all, 0.999),
	}
	if len(all) > 0 {
		m["late_min_ms"] = float64(all[0]) / 1e6
	}
	for k, v := range hand {
		m["handoff_"+k] = v
	}
	return m, nil
}

// timeOut is one client: BLPOP key timeoutMs, again and again for d, each
// answered by its timeout. It returns each one's lateness, in ns.
func timeOut(addr, key string, d time.Duration) ([]int64, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	secs := strconv.FormatFloat(timeoutMs/1000.0, 'f', -1, 64)
	cmd := fmt.Appendf(nil, "*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(secs), secs)
	var late []int64
	for end := time.Now().Add(d); time.Now().Before(end); {
		sent := time.Now()
		if _, err := conn.Write(cmd); err != nil {
			return nil, err
		}
		v, err := readArray(r)
		if err != nil {
			return nil, err
		}
		if v != nil {
			return nil, fmt.Errorf("BLPOP %s answered %q: nothing pushes to it", key, v)
		}
		late = append(late, int64(time.Since(sent)-timeoutMs*time.Millisecond))
	}
	return late, nil
}
