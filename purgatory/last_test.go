package purgatory

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A shard's last list (shard.list's one-entry cache) is always the map's list
// of its key: when the list leaves the map, by the sweep of empty lists or by
// CancelForKey, the shard forgets it, so the key's next watch makes a list in
// the map, where Close and the walks find its operations.
func TestShardForgetsTheListThatLeaves(t *testing.T) {
	t.Run("swept", func(t *testing.T) {
		p, err := New[string]("last", WithShards(1))
		require.NoError(t, err)
		t.Cleanup(p.Close)
		sh := &p.watchers.all[0]
		swept := ""
		for i := 0; swept == ""; i++ {
			require.Less(t, i, 10*minEmpty, "no sweep")
			key := strconv.Itoa(i)
			ops := newListOps(t, p, 1, key)
			ops[0].ready = true
			require.Equal(t, 1, p.CheckAndComplete(key)) // the list is empty now, and maybe swept
			if listOf(p, key) == nil {
				swept = key
			}
		}
		require.Nil(t, sh.last, "the swept list is forgotten")
		require.NoError(t, p.ListsAtRest())
		ops := newListOps(t, p, 1, swept)
		require.NotNil(t, listOf(p, swept), "the next watch makes a list in the map")
		p.Close()
		require.Equal(t, Closed, ops[0].Outcome(), "Close found the operation")
	})
	t.Run("CancelForKey", func(t *testing.T) {
		p := newListPurgatory(t)
		newListOps(t, p, 1, "k")
		require.Len(t, p.CancelForKey("k"), 1)
		require.NoError(t, p.ListsAtRest())
		ops := newListOps(t, p, 1, "k")
		require.NotNil(t, listOf(p, "k"), "the next watch makes a list in the map")
		ops[0].ready = true
		require.Equal(t, 1, p.CheckAndComplete("k"))
		require.NoError(t, p.ListsAtRest())
	})
}

// With keys that are words, the shard compares the key to the copy of last's
// it keeps on its own line (lastWord): in one shard, each key still finds its
// own list, whichever key came last, and a lookup records its key with it.
func TestShardLastWordKey(t *testing.T) {
	p, err := New[int64]("last", WithShards(1))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	sh := &p.watchers.all[0]
	ops := make([]*listOp, 3)
	for i := range ops {
		ops[i] = &listOp{Op: Op{Timeout: time.Hour}}
		require.False(t, p.TryCompleteElseWatch(ops[i], int64(i)))
		require.Equal(t, uint64(i), sh.lastWord, "the watch recorded its key")
	}
	for _, i := range []int{0, 2, 1} { // none the last one watched, then not last's neighbour
		ops[i].ready = true
		require.Equal(t, 1, p.CheckAndComplete(int64(i)), "key %d found its own list", i)
		require.Equal(t, uint64(i), sh.lastWord, "the check recorded its key")
		for j, o := range ops {
			require.Equal(t, j == i || o.ready, o.Outcome() == Completed, "op %d after key %d's check", j, i)
		}
		require.NoError(t, p.ListsAtRest())
	}
}
