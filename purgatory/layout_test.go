package purgatory

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/cacheline"
)

// The layout claims of the comments: the state word, the one field of Op a
// try reads, is in Op's last word, next to the embedding operation's first
// fields; and what different cores write follows internal/cacheline's rule:
// a shard, a counter stripe and a P's slots of running callbacks are each
// one block.
func TestLayout(t *testing.T) {
	var o Op
	require.GreaterOrEqual(t, unsafe.Offsetof(o.state), unsafe.Sizeof(o)-unsafe.Alignof(o), "state is in Op's last word")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(shard[string]{}), "a shard is one block")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(shard[int]{}), "a shard is one block")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(stripe{}), "a stripe is one block, so that two never share one")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(running{}), "a P's slots are one block")
	var l watchList[string]
	require.LessOrEqual(t, unsafe.Offsetof(l.entries)+unsafe.Sizeof(l.entries), uintptr(64), "count, walk and entries, which every drop and walk touch, share the list's first cache line")
	require.EqualValues(t, 64, unsafe.Sizeof(watchList[int]{}), "a list of an int key fits the 64-byte size class, as it did before levels")
}
