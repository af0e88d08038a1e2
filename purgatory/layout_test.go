package purgatory

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The layout claims of the comments: the state word, the one field of Op a
// try reads, is in Op's last word, next to the embedding operation's first
// fields; and a shard fills one cache line, so that neighbouring shards'
// locks never share one; and the counters' stripes, each written by the
// goroutines of one P, share no cache line.
func TestLayout(t *testing.T) {
	var o Op
	require.GreaterOrEqual(t, unsafe.Offsetof(o.state), unsafe.Sizeof(o)-unsafe.Alignof(o), "state is in Op's last word")
	require.EqualValues(t, 64, unsafe.Sizeof(shard[string]{}), "a shard is one cache line")
	require.EqualValues(t, 64, unsafe.Sizeof(shard[int]{}), "a shard is one cache line")

	require.EqualValues(t, stripeSize, unsafe.Sizeof(stripe{}), "a stripe is whole cache lines, so that two never share one")
	var l watchList[string]
	require.LessOrEqual(t, unsafe.Offsetof(l.entries)+unsafe.Sizeof(l.entries), uintptr(64), "count, walk and entries, which every drop and walk touch, share the list's first cache line")
	require.EqualValues(t, 64, unsafe.Sizeof(watchList[int]{}), "a list of an int key fits the 64-byte size class, as it did before levels")
}
