package timingwheel

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/cacheline"
)

// TestShardLayout pins the padding that keeps what different cores write
// off shared cache lines: a shard is whole cache lines (the shards are an
// array), and so is a level (the levels of different shards are allocated
// one after another).
func TestShardLayout(t *testing.T) {
	require.Zero(t, unsafe.Sizeof(shard{})%cacheline.Size, "a shard is whole cache lines: %d bytes", unsafe.Sizeof(shard{}))
	require.Less(t, unsafe.Sizeof(shard{})-unsafe.Sizeof(shardState{}), uintptr(cacheline.Size), "no more padding than needed")
	require.Zero(t, unsafe.Sizeof(level{})%cacheline.Size, "a level is whole cache lines")
	require.Less(t, unsafe.Sizeof(level{})-unsafe.Sizeof(levelState{}), uintptr(cacheline.Size), "no more padding than needed")
	require.EqualValues(t, 40, unsafe.Sizeof(slot{}), "a bucket is 40 bytes (WithWheelSize's doc)")
}
