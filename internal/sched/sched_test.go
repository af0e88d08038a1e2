//go:build purgatorycheck

package sched

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// counter is shared state with a lost update: two goroutines each load it,
// then store one more, with a point between (a fault), or under a Mutex.
type counter struct {
	n      int
	mu     Mutex
	locked bool
}

func (c *counter) add() {
	if c.locked {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	At("load")
	v := c.n
	At("store")
	c.n = v + 1
}

func counterScenario(locked bool, lost *int) Scenario {
	return Scenario{Name: fmt.Sprint("counter, locked ", locked), Start: func(t *testing.T) World {
		c := &counter{locked: locked}
		return World{
			Paths: []Path{{Name: "a", Run: c.add}, {Name: "b", Run: c.add}},
			Final: func() error {
				if c.n != 2 {
					*lost++
					return fmt.Errorf("counter %d after two adds", c.n)
				}
				return nil
			},
			Stop: func() {},
		}
	}}
}

// The checker finds the lost update of two unlocked adds, and none with
// the mutex, after exploring every schedule within the bound.
func TestExploreFindsALostUpdate(t *testing.T) {
	lost := 0
	st := Explore(t, counterScenario(true, &lost), 2)
	if lost != 0 || st.Runs < 2 {
		t.Fatalf("locked: %d runs, %d lost updates", st.Runs, lost)
	}
	t.Logf("locked: %d schedules", st.Runs)
	found := false
	for _, bound := range []int{0, 1} {
		lost = 0
		r := run(t, ptr(counterScenario(false, &lost)), nil, keepGoing)
		if r.err != nil {
			t.Fatalf("the first schedule, with no preemption, lost an update")
		}
		st := explore(t, counterScenario(false, &lost), bound, nil) // on past the lost updates, counting them
		t.Logf("unlocked, bound %d: %d schedules, %d lost updates", bound, st.Runs, lost)
		found = found || lost > 0
		if bound == 0 && lost > 0 {
			t.Fatalf("no preemption, yet an update was lost")
		}
	}
	if !found {
		t.Fatal("one preemption between a load and its store loses an update; the checker did not find it")
	}
}

func ptr[T any](v T) *T { return &v }

// The clock is a path: a goroutine that sleeps runs on only once the
// checker has moved the clock.
func TestClockIsAPath(t *testing.T) {
	var order []string
	sc := Scenario{Name: "clock", Clock: []time.Duration{time.Second}, Start: func(t *testing.T) World {
		order = nil
		return World{Paths: []Path{
			{Name: "sleeper", Run: func() { time.Sleep(time.Second); At("woke"); order = append(order, "woke") }},
			{Name: "other", Run: func() { At("x"); order = append(order, "x") }},
		}, Stop: func() {}}
	}}
	st := Explore(t, sc, 2)
	if st.Runs < 2 {
		t.Fatalf("%d runs", st.Runs)
	}
	if !strings.Contains(strings.Join(order, ","), "woke") {
		t.Fatalf("the sleeper never woke: %v", order)
	}
}
