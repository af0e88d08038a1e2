package purgatory

import (
	"reflect"
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
	require.Equal(t, unsafe.Offsetof(o.state)/64, unsafe.Sizeof(o)/64, "in an operation that starts on a cache line, state and the embedding type's first field share one")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(shard[string]{}), "a shard is one block")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(shard[int]{}), "a shard is one block")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(stripe{}), "a stripe is one block, so that two never share one")
	require.EqualValues(t, cacheline.Size, unsafe.Sizeof(slotBlock{}), "a P's slots are one block")
	var l watchList[string]
	require.LessOrEqual(t, unsafe.Offsetof(l.entries)+unsafe.Sizeof(l.entries), uintptr(64), "count, walk and entries, which every drop and walk touch, share the list's first cache line")
	require.EqualValues(t, 64, unsafe.Offsetof(watchList[int]{}.room), "a list of an int key fits its first 64 bytes, its room the next line")
	require.EqualValues(t, 128, unsafe.Sizeof(watchList[int]{}), "a list of an int key with its room fits the 128-byte size class, whose objects are line-aligned")
}

// What a parked operation costs the collector: Op's size and the words of
// it that the collector scans (issue 38). A change to either shows here.
func TestOpScanCost(t *testing.T) {
	require.EqualValues(t, 152, unsafe.Sizeof(Op{}), "Op's size: 200 until the fields few uses need moved to Op.more, 168 until its parking did, 160 until its timer's place in a bucket became an index")
	require.Equal(t, 13, pointerWords(reflect.TypeFor[Op]()), "Op's pointer words: 15 while its timer's place in a bucket was two links")
	require.EqualValues(t, 32, unsafe.Sizeof(entry{}), "a watch-list entry: impl, op, generation")
}

// pointerWords counts the words of t that hold pointers the collector scans:
// an interface's two, a slice's or a string's data, a pointer, map, chan or
// func.
func pointerWords(t reflect.Type) int {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Slice, reflect.String:
		return 1
	case reflect.Interface:
		return 2
	case reflect.Array:
		return t.Len() * pointerWords(t.Elem())
	case reflect.Struct:
		n := 0
		for i := range t.NumField() {
			n += pointerWords(t.Field(i).Type)
		}
		return n
	}
	return 0
}
