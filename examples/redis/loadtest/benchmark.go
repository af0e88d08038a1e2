package main

import (
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// runBenchmark runs redis-benchmark -t lpush,rpop,lrange_100 -P 16 -c 50
// against s, and returns the requests per second of each test, and the
// server's CPU per request of the whole.
func runBenchmark(s *server, requests int) (map[string]float64, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark not found: install redis-tools (run ./redis-suite.sh once): %w", err)
	}
	host, port, _ := net.SplitHostPort(s.addr)
	cpu0, err := s.cpu()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "-h", host, "-p", port, "-t", "lpush,rpop,lrange_100", "-P", "16", "-c", "50",
		"-n", strconv.Itoa(requests), "--csv").Output()
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	cpu1, err := s.cpu()
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("redis-benchmark's CSV: %v: %q", err, out)
	}
	names := map[string]string{"LPUSH": "lpush", "RPOP": "rpop", "LRANGE_100 (first 100 elements)": "lrange_100"}
	m := map[string]float64{}
	for _, row := range rows[1:] {
		name, ok := names[row[0]]
		if !ok {
			continue // LPUSH (needed to benchmark LRANGE): LRANGE's fill
		}
		rps, err := strconv.ParseFloat(row[1], 64)
		if err != nil {
			return nil, fmt.Errorf("redis-benchmark's %s: %v", row[0], err)
		}
		m[name+"_rps"] = rps
		if p99, err := strconv.ParseFloat(row[6], 64); err == nil {
			m[name+"_p99_ms"] = p99
		}
	}
	for _, name := range names {
		if _, ok := m[name+"_rps"]; !ok {
			return nil, fmt.Errorf("redis-benchmark gave no %s: %q", name, out)
		}
	}
	m["cpu_us_per_request"] = float64((cpu1 - cpu0).Microseconds()) / float64(4*requests)
	return m, nil
}
