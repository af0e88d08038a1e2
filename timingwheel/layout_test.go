package timingwheel

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestShardLayout pins the padding that keeps what different cores write
// off shared cache lines: a shard is whole cache lines (the shards are an
// array), and so is a level (the levels of different shards are allocated
// one after another).
func TestShardLayout(t *testing.T) {
	require.Zero(t, unsafe.Sizeof(shard{})%cacheLine, "a shard is whole cache lines: %d bytes", unsafe.Sizeof(shard{}))
	require.Less(t, unsafe.Sizeof(shard{})-unsafe.Sizeof(shardState{}), uintptr(cacheLine), "no more padding than needed")
	require.Zero(t, unsafe.Sizeof(level{})%cacheLine, "a level is whole cache lines")
	require.EqualValues(t, 64, unsafe.Sizeof(slot{}), "a bucket is 64 bytes (WithWheelSize's doc)")
}
