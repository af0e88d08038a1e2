package purgatory

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The layout claims of the comments: the state word, the one field of Op a
// try reads, is in Op's last word, next to the embedding operation's first
// fields; and a shard fills one cache line, so that neighbouring shards'
// locks never share one; and the counters that adding an operation writes,
// ending one writes, and both write share no cache line.
func TestLayout(t *testing.T) {
	var o Op
	require.GreaterOrEqual(t, unsafe.Offsetof(o.state), unsafe.Sizeof(o)-unsafe.Alignof(o), "state is in Op's last word")
	require.EqualValues(t, 64, unsafe.Sizeof(shard[string]{}), "a shard is one cache line")
	require.EqualValues(t, 64, unsafe.Sizeof(shard[int]{}), "a shard is one cache line")

	var c counters
	apart := func(a, b uintptr, what string) {
		require.GreaterOrEqual(t, b-a, uintptr(cacheLine), what)
	}
	apart(unsafe.Offsetof(c.added)+unsafe.Sizeof(c.added), unsafe.Offsetof(c.ended), "added and ended")
	apart(unsafe.Offsetof(c.ended)+unsafe.Sizeof(c.ended), unsafe.Offsetof(c.extra), "ended and extra")
	apart(unsafe.Offsetof(c.extra)+unsafe.Sizeof(c.extra), unsafe.Offsetof(c.panics), "extra and the rest")
}
