package main

import (
	"encoding/json"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// A 10-minute soak at 100,000 requests/s once flooded the purgatory: i × length
// overflowed int64 past the 15-millionth request, arrival times went negative
// and nothing paced the arrivals any more.
func TestArrivalAtLongRuns(t *testing.T) {
	for _, c := range []struct {
		n      int
		length time.Duration
	}{
		{1_000_000, 10 * time.Second},
		{60_000_000, 10 * time.Minute},
		{360_000_000, time.Hour},
	} {
		step := c.length / time.Duration(c.n)
		prev := time.Duration(-1)
		for _, i := range []int{0, 1, c.n / 4, c.n / 2, c.n - 2, c.n - 1} {
			at := arrivalAt(i, c.n, c.length)
			want := time.Duration(i) * step
			if at < prev || at < 0 || at >= c.length || (at-want).Abs() > time.Microsecond {
				t.Fatalf("n=%d over %v: request %d arrives at %v, want %v (after %v, before %v)", c.n, c.length, i, at, want, prev, c.length)
			}
			prev = at
		}
	}
}

// The open loop's intake never blocks its producer, hands over every request
// once and in order, and reports the end only once it is closed and empty.
func TestIntake(t *testing.T) {
	q := newIntake()
	const n = 10_000
	sent := make([]*request, n)
	go func() {
		for i := range sent {
			sent[i] = &request{key: i}
			q.push(sent[i])
		}
		q.close()
	}()
	next := 0
	for {
		batch, ok := q.take()
		if !ok {
			break
		}
		for _, r := range batch {
			if r.key != next {
				t.Fatalf("took request %d, want %d", r.key, next)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("took %d requests, want %d", next, n)
	}
	if _, ok := q.take(); ok {
		t.Fatal("take after the end returned ok")
	}
}

// floor ends every request exactly once, as expired, and its result, which
// has no lag samples, still encodes: the child prints it as JSON.
func TestFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := w5(floor{}, 20_000, 100, 50*time.Millisecond, false)
		m := res.Metrics
		if m["expired_pct"] != 100 || m["completed_pct"] != 0 || m["lost"] != 0 || m["ended_twice"] != 0 {
			t.Fatalf("floor: expired %v %%, completed %v %%, lost %v, ended twice %v; want 100, 0, 0, 0", m["expired_pct"], m["completed_pct"], m["lost"], m["ended_twice"])
		}
		if _, ok := m["lag_p99_ms"]; ok {
			t.Fatalf("floor completed nothing, yet reports a lag p99 of %v ms", m["lag_p99_ms"])
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("floor's result does not encode: %v", err)
		}
	})
}

// TestW7 runs every W7 system at 1 and 2 goroutines in quick mode: each makes
// operations, and its CPU per operation is a positive number.
func TestW7(t *testing.T) {
	for _, system := range scalingSystems {
		for _, g := range []int{1, 2} {
			r, err := w7(system, g, params{quick: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Metrics["mops_per_s"] <= 0 || r.Metrics["cpu_s_per_mops"] <= 0 {
				t.Errorf("%s at G=%d: %v", system, g, r.Metrics)
			}
		}
	}
}

// TestW6 runs W6 briefly on every system: nothing lost or ended twice, and
// the completed share within a point of what an ideal system completes.
func TestW6(t *testing.T) {
	for _, system := range levelSystems {
		r, err := runLevelWorkload(system, params{quick: true, keys: 50, duration: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		m := r.Metrics
		if m["lost"] != 0 || m["ended_twice"] != 0 || m["completed_pct"] < 10 || math.Abs(m["completed_pct"]-m["expected_pct"]) > 1 {
			t.Errorf("%s: %v", system, m)
		}
	}
}

// history.reached finds the first move that reached a level, and the oldest
// kept once the ring has wrapped past it.
func TestHistoryReached(t *testing.T) {
	h := history{level: make([]int64, 4), at: make([]time.Duration, 4)}
	if _, ok := h.reached(1); ok {
		t.Fatal("an empty history reached something")
	}
	for i := 1; i <= 6; i++ {
		h.record(int64(10*i), time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		target int64
		at     time.Duration
		ok     bool
	}{{25, 3 * time.Millisecond, true}, {30, 3 * time.Millisecond, true}, {41, 5 * time.Millisecond, true}, {60, 6 * time.Millisecond, true}, {61, 0, false}} {
		if at, ok := h.reached(c.target); at != c.at || ok != c.ok {
			t.Errorf("reached(%d) = %v, %v; want %v, %v", c.target, at, ok, c.at, c.ok)
		}
	}
}
