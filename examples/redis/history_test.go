package main

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/examples/redis/history"
)

// historyLength is how long each history check runs: REDIS_HISTORY (20s in
// CI's own step, longer in the soak), else 2 s, which the README's test
// command runs.
func historyLength(t *testing.T) time.Duration {
	if s := os.Getenv("REDIS_HISTORY"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "REDIS_HISTORY")
		return d
	}
	return 2 * time.Second
}

// historySeed is a fresh seed, printed, or REDIS_HISTORY_SEED's to replay.
func historySeed(t *testing.T) uint64 {
	if s := os.Getenv("REDIS_HISTORY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "REDIS_HISTORY_SEED")
		return n
	}
	return uint64(time.Now().UnixNano())
}

// historyServers are the servers a history check runs against: this one,
// and redis-server 7.0.15 as the control where it is installed (CI requires
// it).
func historyServers(t *testing.T) map[string]string {
	_, ours := testServer(t)
	servers := map[string]string{"ours": ours}
	if theirs := redisServerTCP(t); theirs != "" {
		servers["redis-server"] = theirs
	}
	return servers
}

// TestQueueHistory runs the queue workload (package history) against this
// server and redis-server, and checks each history as Jepsen's total-queue
// checker does, with each producer's order through a list and blocking pops
// that answered nil while their list held a value.
func TestQueueHistory(t *testing.T) {
	length, seed := historyLength(t), historySeed(t)
	for name, addr := range historyServers(t) {
		t.Run(name, func(t *testing.T) {
			h, err := history.RunQueue(history.QueueConfig{Addr: addr, Seed: seed, Duration: length, Producers: 4, Consumers: 8})
			require.NoError(t, err)
			r := history.CheckQueue(h)
			t.Logf("%s: %v", name, r)
			require.True(t, r.OK(), "%s: %v", name, r)
		})
	}
}

// TestAppendHistory runs the list-append workload (package history:
// transactions of appends and reads on three lists, 256 appends each, some
// clients killed) against this server and redis-server, round after round
// with the next seed until the check's length has passed, and checks each
// round's history for linearizability with porcupine.
func TestAppendHistory(t *testing.T) {
	length, seed := historyLength(t), historySeed(t)
	for name, addr := range historyServers(t) {
		t.Run(name, func(t *testing.T) {
			var rounds, txns, unknown, killed int
			for until := time.Now().Add(length); rounds == 0 || time.Now().Before(until); rounds++ {
				h, err := history.RunAppend(history.AppendConfig{Addr: addr, Seed: seed + uint64(rounds), Clients: 5, MaxWrites: 256, Limit: length})
				require.NoError(t, err)
				require.Empty(t, h.Errors)
				for _, op := range h.Operations {
					if !op.Output.(history.TxnResult).Known {
						unknown++
					}
				}
				txns, killed = txns+len(h.Operations), killed+h.Killed
				result := history.CheckAppend(h, time.Minute)
				require.Equal(t, porcupine.Ok, result, "%s: seed %d: the lists' history is not linearizable", name, seed+uint64(rounds))
			}
			t.Logf("%s: seeds %d to %d: %d rounds, %d transactions, %d of unknown outcome, %d clients killed: linearizable",
				name, seed, seed+uint64(rounds)-1, rounds, txns, unknown, killed)
		})
	}
}
