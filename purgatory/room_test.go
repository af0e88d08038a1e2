package purgatory

import (
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/require"
)

// roomHolds reports how many operations key's list's room holds, under the
// shard's mutex.
func roomHolds(p *Purgatory[string], key string) int {
	sh := p.watchers.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := 0
	for _, e := range sh.lists[key].room {
		if e.op != nil || e.impl != nil {
			n++
		}
	}
	return n
}

// A list's first two entries live in its room; once they move to an array of
// their own, the room lets go of them: at once if no walk reads the room,
// else at the compaction after the walk. A list taken out of the map by
// CancelForKey lets go of its room too.
func TestListRoomLetsGo(t *testing.T) {
	t.Run("in the room", func(t *testing.T) {
		p := newListPurgatory(t)
		newListOps(t, p, 2, "k")
		require.Equal(t, 2, roomHolds(p, "k"))
		l := listOf(p, "k")
		require.Same(t, &l.room[0], &l.entries[:1][0], "the entries are the room")
	})
	t.Run("moved out", func(t *testing.T) {
		p := newListPurgatory(t)
		newListOps(t, p, 3, "k")
		require.Zero(t, roomHolds(p, "k"), "the third entry moved the entries out: the room holds none")
		require.Len(t, listOf(p, "k").ops(), 3)
	})
	t.Run("moved out during a walk", func(t *testing.T) {
		p := newListPurgatory(t)
		ops := newListOps(t, p, 2, "k")
		ops[1].ready = true
		ops[0].onTry = func() { newListOps(t, p, 1, "k") } // the walk holds the list: the room stays
		require.Equal(t, 1, p.CheckAndComplete("k"))
		require.Zero(t, roomHolds(p, "k"), "the walk's compaction cleared the room")
		require.Len(t, listOf(p, "k").ops(), 2)
	})
	t.Run("CancelForKey", func(t *testing.T) {
		p := newListPurgatory(t)
		newListOps(t, p, 2, "k")
		l := listOf(p, "k")
		require.Len(t, p.CancelForKey("k"), 2)
		for _, e := range l.room {
			require.Nil(t, e.op, "the removed list's room")
		}
	})
}

// What the room let go of, the collector frees: an operation that ended is
// not kept alive by a list that outlives it.
func TestListRoomKeepsNoEndedOperation(t *testing.T) {
	p := newListPurgatory(t)
	first := func() []weak.Pointer[listOp] {
		ops := newListOps(t, p, 3, "k") // the third moves the entries out of the room
		ws := make([]weak.Pointer[listOp], len(ops))
		for i, o := range ops {
			ws[i] = weak.Make(o)
			o.ready = true
		}
		require.Equal(t, 3, p.CheckAndComplete("k"))
		return ws
	}()
	newListOps(t, p, 1, "k") // the list stays in the map, in use
	// A full cycle frees what nothing reaches.
	runtime.GC()
	for i, w := range first {
		require.Nil(t, w.Value(), "ended operation %d is still reachable", i)
	}
}
