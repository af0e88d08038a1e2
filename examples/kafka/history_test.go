package main

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/purgatory-go/purgatory/examples/kafka/history"
)

// historyLength is how long the history check runs: KAFKA_HISTORY (20s in
// CI's own step, longer in the soak), else 3 s, which the test command
// runs.
func historyLength(t *testing.T) time.Duration {
	if s := os.Getenv("KAFKA_HISTORY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("KAFKA_HISTORY: %v", err)
		}
		return d
	}
	return 3 * time.Second
}

// historySeed is a fresh seed, printed, or KAFKA_HISTORY_SEED's.
func historySeed(t *testing.T) uint64 {
	if s := os.Getenv("KAFKA_HISTORY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KAFKA_HISTORY_SEED: %v", err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestHistory runs package history's workload (kgo producers killed after a
// send, partition consumers killed in a long poll, group members killed in
// the middle of a rebalance) against this broker, at R = 3, and against
// franz-go's kfake as the control, and checks each history: no lost
// acknowledged write, sends and polls agreeing on every offset, each
// consumer's polls contiguous, no value at two offsets.
func TestHistory(t *testing.T) {
	length, seed := historyLength(t), historySeed(t)
	_, ours, _ := startBroker(t, Config{Replicas: 3, InitialRebalanceDelay: -1}, "hist:4")
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "hist"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	for _, s := range []struct{ name, addr string }{{"ours", ours}, {"kfake", fake.ListenAddrs()[0]}} {
		t.Run(s.name, func(t *testing.T) {
			h, err := history.Run(history.Config{Addr: s.addr, Topic: "hist", Partitions: 4, Seed: seed, Duration: length,
				Producers: 3, Consumers: 2, Members: 3, Group: "hist-group"})
			if err != nil {
				t.Fatal(err)
			}
			r := history.Check(h)
			t.Logf("%s: %v", s.name, r)
			if !r.OK() {
				t.Errorf("%s: %v", s.name, r)
			}
		})
	}
}
