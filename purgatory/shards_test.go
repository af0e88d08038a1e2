package purgatory_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
)

// The default number of watch-list shards follows GOMAXPROCS, as New reads
// it: 64 for each P, rounded up to a power of two, at most Kafka's 512.
// WithShards overrides it.
func TestDefaultShards(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, want int }{{1, 64}, {2, 128}, {3, 256}, {4, 256}, {5, 512}, {8, 512}, {64, 512}} {
		runtime.GOMAXPROCS(c.procs)
		require.Equal(t, c.want, purgatory.DefaultShards(), "GOMAXPROCS %d", c.procs)
		require.Equal(t, c.want, newPurgatory(t).Shards(), "New at GOMAXPROCS %d", c.procs)
	}
	require.Equal(t, 3, newPurgatory(t, purgatory.WithShards(3)).Shards())
}
