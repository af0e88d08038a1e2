package purgatory

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The layout claims of the comments: the state word every try reads first
// opens Op; added, which touch loads with it, closes Op, next to the
// embedding operation's first fields; and a shard fills one cache line, so
// that neighbouring shards' locks never share one.
func TestLayout(t *testing.T) {
	var o Op
	require.Zero(t, unsafe.Offsetof(o.state), "state opens Op")
	require.Greater(t, unsafe.Offsetof(o.added)+unsafe.Sizeof(o.added), unsafe.Sizeof(o)-unsafe.Alignof(o),
		"added is in Op's last word")
	require.EqualValues(t, 64, unsafe.Sizeof(shard[string]{}), "a shard is one cache line")
	require.EqualValues(t, 64, unsafe.Sizeof(shard[int]{}), "a shard is one cache line")
}
