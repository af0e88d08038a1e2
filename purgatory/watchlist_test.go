package purgatory

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listOp is an operation for the watch list's own tests (internal/testkit
// imports this package, so these cannot use it).
type listOp struct {
	Op
	ready bool
	onTry func()
}

func (o *listOp) TryComplete() bool {
	if f := o.onTry; f != nil {
		o.onTry = nil
		f()
	}
	return o.ready
}
func (o *listOp) OnComplete()   {}
func (o *listOp) OnExpiration() {}

func newListOps(t *testing.T, p *Purgatory[string], n int, keys ...string) []*listOp {
	ops := make([]*listOp, n)
	for i := range ops {
		ops[i] = &listOp{Op: Op{Timeout: time.Hour}}
		require.False(t, p.TryCompleteElseWatch(ops[i], keys...))
	}
	return ops
}

func listOf(p *Purgatory[string], key string) *watchList[string] {
	sh := p.watchers.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.lists[key]
}

func newListPurgatory(t *testing.T) *Purgatory[string] {
	p, err := New[string]("lists")
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// A list never holds more than twice the entries its live operations need,
// whichever of them end and in whatever order, and an emptied list is counted
// empty for the shard's sweep; its array shrinks as it empties.
func TestListCompactsWhenMostlyDead(t *testing.T) {
	p := newListPurgatory(t)
	ops := newListOps(t, p, 1000, "hot")
	newListOps(t, p, 1, "other")
	l := listOf(p, "hot")
	grown := cap(l.entries)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	for i, op := range ops {
		require.True(t, ForceComplete(op))
		require.NoError(t, p.ListsAtRest(), "after %d ended", i+1)
		live := len(ops) - i - 1
		require.LessOrEqual(t, len(l.ops()), 2*live, "after %d ended", i+1)
	}
	require.Empty(t, l.ops())
	require.Less(t, cap(l.entries), grown/4, "the array shrank")
	require.Equal(t, 1, p.Watched())
}

// While a walk holds a list, nobody moves its entries: operations that end
// meanwhile (here, all the others, from inside one's TryComplete) only count
// themselves dead, and the walk compacts the list as it leaves.
func TestWalkHoldsEntriesInPlace(t *testing.T) {
	p := newListPurgatory(t)
	ops := newListOps(t, p, 10, "hot")
	l, sh := listOf(p, "hot"), p.watchers.of("hot")
	before := append([]entry(nil), l.ops()...)
	var during []entry
	ops[0].onTry = func() {
		for _, op := range ops[1:] {
			require.True(t, ForceComplete(op))
		}
		sh.mu.Lock()
		during = append(during, l.ops()...)
		sh.mu.Unlock()
	}
	ops[0].ready = true
	require.Equal(t, 1, p.CheckAndComplete("hot"))
	require.Equal(t, before, during, "no entry moved during the walk")
	require.Empty(t, l.ops(), "the walk compacted the list as it left")
	require.NoError(t, p.ListsAtRest())
	require.Zero(t, p.Watched())
}

// An operation watched under several keys drops once from each; a list taken
// by CancelForKey is out of the map, and what its operations drop there
// counts nowhere else.
func TestDropsPerKey(t *testing.T) {
	p := newListPurgatory(t)
	ops := newListOps(t, p, 3, "a", "b", "c")
	require.Equal(t, 9, p.Watched())
	require.True(t, ForceComplete(ops[0]))
	require.Equal(t, 6, p.Watched())
	require.Len(t, p.CancelForKey("b"), 2)
	require.Zero(t, p.Watched())
	require.NoError(t, p.ListsAtRest())
	require.Nil(t, listOf(p, "b"))
	require.Empty(t, listOf(p, "a").ops())
}

// The count's dead half is signed and borrows from the entries' half as two's
// complement does, so an operation that compact removed before its end
// dropped is still counted right once it drops.
func TestCountSplit(t *testing.T) {
	for _, c := range []struct{ n, dead int64 }{{0, 0}, {3, 1}, {3, -1}, {0, -2}, {1 << 30, 1 << 29}} {
		n, dead := split(c.n*oneEntry + c.dead)
		require.Equal(t, c, struct{ n, dead int64 }{n, dead})
	}
	var l watchList[int]
	l.count.Add(2 * oneEntry)    // two linked
	l.count.Add(-(oneEntry + 1)) // compact removed one whose end has not dropped
	require.False(t, l.crowded(l.count.Load()))
	l.count.Add(1) // it drops
	n, dead := split(l.count.Load())
	require.Equal(t, [2]int64{1, 0}, [2]int64{n, dead})
}

// A list used as a queue, hand-offs taking from its front while the served
// operations are watched again at its end, keeps one array: what hand-offs
// pass is compacted away by moving head, and the rest moves down once head
// passes half the array, so appends find room instead of growing a new one.
func TestQueueKeepsItsArray(t *testing.T) {
	p := newListPurgatory(t)
	ops := newListOps(t, p, 100, "q")
	l, sh := listOf(p, "q"), p.watchers.of("q")
	array := func() (*entry, int) {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return &l.entries[:1][0], cap(l.entries)
	}
	first, _ := array()
	arrays := map[*entry]bool{first: true}
	for i := range 10_000 {
		op := ops[i%len(ops)]
		op.ready = true
		require.Equal(t, 1, p.HandOff("q"), "push %d", i)
		op.ready = false
		require.False(t, p.TryCompleteElseWatch(op, "q"))
		a, c := array()
		arrays[a] = true
		require.LessOrEqual(t, c, 256, "the array does not grow")
	}
	require.LessOrEqual(t, len(arrays), 2, "one array, and at most one regrowth as the queue first filled it")
	require.NoError(t, p.ListsAtRest())
}

// Keys spread evenly over the shards, whatever their number and their
// pattern: the shard is the hash scaled to it (shards.of). 512 keys a shard
// on average, each shard within a quarter of that (5.6 standard deviations
// of a binomial count). Words (int, uint64, a named int64) take of's
// multiply; other keys maphash.
func TestKeysSpreadOverShards(t *testing.T) {
	type partition int64
	for _, n := range []int{1, 3, 512} {
		spread(t, "consecutive ints", n, func(i int) int { return i })
		spread(t, "ints 512 apart", n, func(i int) int { return i * 512 })
		spread(t, "negative ints", n, func(i int) int { return -i })
		spread(t, "uint64s apart in their high word", n, func(i int) uint64 { return uint64(i) << 32 })
		spread(t, "named int64s", n, func(i int) partition { return partition(i) })
		spread(t, "int32s", n, func(i int) int32 { return int32(i) })
		spread(t, "strings", n, func(i int) string { return "topic-" + strconv.Itoa(i) })
	}
}

func spread[K comparable](t *testing.T, what string, n int, key func(int) K) {
	t.Helper()
	s := newShards[K](n, nil, false)
	index := map[*shard[K]]int{}
	for i := range s.all {
		index[&s.all[i]] = i
	}
	counts := make([]int, n)
	for i := range 512 * n {
		counts[index[s.of(key(i))]]++
	}
	for i, c := range counts {
		require.InDelta(t, 512, c, 128, "%s: shard %d of %d holds %d of %d keys", what, i, n, c, 512*n)
	}
}

// The keys of's multiply reads as a uint64 are exactly those of 8 bytes
// with an integer's kind.
func TestWordKeys(t *testing.T) {
	type partition int
	for _, c := range []struct {
		t    reflect.Type
		word bool
	}{
		{reflect.TypeFor[int](), true},
		{reflect.TypeFor[int64](), true},
		{reflect.TypeFor[uint64](), true},
		{reflect.TypeFor[uintptr](), true},
		{reflect.TypeFor[partition](), true},
		{reflect.TypeFor[int32](), false},
		{reflect.TypeFor[float64](), false},
		{reflect.TypeFor[string](), false},
		{reflect.TypeFor[[8]byte](), false},
		{reflect.TypeFor[struct{ a, b int32 }](), false},
		{reflect.TypeFor[any](), false},
	} {
		require.Equal(t, c.word, isWord(c.t), "%v", c.t)
	}
	require.NotZero(t, newShards[int](1, nil, false).mix)
	require.Zero(t, newShards[string](1, nil, false).mix)
}
