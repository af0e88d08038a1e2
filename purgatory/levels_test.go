package purgatory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// levelled is an operation that completes once its key's level (kept by the
// test) reaches need, and records the order of its tries.
type levelled struct {
	*testkit.Op
	name  string
	need  int64
	level *atomic.Int64
	tried *[]string
}

func (l *levelled) TryComplete() bool {
	*l.tried = append(*l.tried, l.name)
	l.Op.TryComplete() // counts the try
	return l.Ready.Load() || l.level.Load() >= l.need
}

// Advance tries the operations whose level has been reached, in level order,
// after the plain watchers; not the others; one that says "not yet" at its
// level is tried again at every later Advance, even one below the highest;
// CheckAndComplete tries everything.
func TestAdvanceTriesOnlyWhatIsReady(t *testing.T) {
	p := newPurgatory(t)
	var level atomic.Int64
	var tried []string
	op := func(name string, need int64) *levelled {
		return &levelled{Op: testkit.NewOp(time.Hour), name: name, need: need, level: &level, tried: &tried}
	}
	plain := op("plain", 1<<62)
	at30, at10, at20 := op("30", 30), op("10", 10), op("20", 20)
	stubborn := op("stubborn", 1<<62) // watched at 15, never ready by level
	require.False(t, p.TryCompleteElseWatch(plain, "k"))
	require.False(t, p.TryCompleteElseWatchAt(at30, purgatory.At("k", 30)))
	require.False(t, p.TryCompleteElseWatchAt(at10, purgatory.At("k", 10)))
	require.False(t, p.TryCompleteElseWatchAt(at20, purgatory.At("k", 20)))
	require.False(t, p.TryCompleteElseWatchAt(stubborn, purgatory.At("k", 15)))
	require.Equal(t, 5, p.Watched())
	tried = nil

	level.Store(12)
	require.Equal(t, 1, p.Advance("k", 12))
	require.Equal(t, []string{"plain", "10"}, tried, "the plain watcher, then what level 12 reached")
	require.Equal(t, purgatory.Completed, at10.Outcome())

	tried = nil
	level.Store(25)
	require.Equal(t, 1, p.Advance("k", 25))
	require.Equal(t, []string{"plain", "stubborn", "20"}, tried, "lowest level first")

	tried = nil
	require.Zero(t, p.Advance("k", 5), "below the highest: plain watchers only, and those whose level came")
	require.Equal(t, []string{"plain", "stubborn"}, tried)

	tried = nil
	require.Zero(t, p.CheckAndComplete("k"))
	require.ElementsMatch(t, []string{"plain", "stubborn", "30"}, tried, "CheckAndComplete tries every one")

	level.Store(30)
	tried = nil
	require.Equal(t, 1, p.Advance("k", 30))
	require.Equal(t, []string{"plain", "stubborn", "30"}, tried)
	require.Equal(t, 2, p.Watched())
	require.NoError(t, p.ListsAtRest())
}

// An operation watched at a level the key has already reached is a plain
// watcher at once: the next Advance, at any level, tries it.
func TestWatchAtALevelAlreadyReached(t *testing.T) {
	p := newPurgatory(t)
	other := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatch(other, "k")) // keeps the key's list
	require.Zero(t, p.Advance("k", 100))
	op := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatchAt(op, purgatory.At("k", 50)))
	op.Ready.Store(true)
	require.Equal(t, 1, p.Advance("k", 1))
	require.Equal(t, purgatory.Completed, op.Outcome())
}

// A produce to several partitions waits at a level on each: each key's
// Advance tries it once its own level is reached there, and it is counted
// once per key in Watched; a key given twice is watched once, at the lower
// level.
func TestLevelsUnderSeveralKeys(t *testing.T) {
	p := newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatchAt(op, purgatory.At("a", 10), purgatory.At("b", 20), purgatory.At("a", 5)))
	require.Equal(t, 2, p.Watched())
	tries := op.Tries.Load()
	require.Zero(t, p.Advance("a", 4))
	require.Zero(t, p.Advance("b", 19))
	require.Equal(t, tries, op.Tries.Load(), "no level reached")
	require.Zero(t, p.Advance("a", 5))
	require.Equal(t, tries+1, op.Tries.Load(), "a at 5: the lower of its two levels")
	op.Ready.Store(true)
	require.Equal(t, 1, p.Advance("b", 20))
	require.Zero(t, p.Watched())
	require.NoError(t, p.ListsAtRest())
}

// Operations that end while they wait for a level leave the heap soon: with
// 1,000 waiting under one key and all expiring, the list compacts as they
// go and the key is forgotten with its list; Stats count them as plain ones.
func TestLevelWaitersThatExpireLeaveTheHeap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		ops := make([]*testkit.Op, 1000)
		for i := range ops {
			ops[i] = testkit.NewOp(time.Duration(1+i) * time.Millisecond)
			require.False(t, p.TryCompleteElseWatchAt(ops[i], purgatory.At("k", int64(1e9+i))))
		}
		require.Equal(t, 1000, p.Delayed())
		for step := range 10 {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			require.NoError(t, p.ListsAtRest(), "after %d ms", 100*(step+1))
			live, held := p.LevelsHeld("k")
			require.LessOrEqual(t, held-live, max(live/7, 1), "ended operations held in the heap after %d ms", 100*(step+1))
		}
		require.Equal(t, int64(1000), p.Stats().Expired)
		live, held := p.LevelsHeld("k")
		require.Zero(t, live+held)
		require.Zero(t, p.Advance("k", 2e9), "nothing left to try")
	})
}

// Cancel, force and close reach operations that wait for a level.
func TestLevelWaitersEndOnEveryPath(t *testing.T) {
	p := newPurgatory(t)
	a, b, c, d := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
	for i, op := range []*testkit.Op{a, b, c, d} {
		require.False(t, p.TryCompleteElseWatchAt(op, purgatory.At(fmt.Sprint("k", i), 100)))
	}
	require.Len(t, p.CancelForKey("k0"), 1)
	require.Equal(t, 1, p.ForceCompleteForKey("k1"))
	require.True(t, purgatory.ForceComplete(c))
	p.Close()
	require.Equal(t, purgatory.Cancelled, a.Outcome())
	require.Equal(t, purgatory.Forced, b.Seen)
	require.Equal(t, purgatory.Forced, c.Seen)
	require.Equal(t, purgatory.Closed, d.Seen)
	require.Zero(t, p.Advance("k3", 200), "closed")
	late := testkit.NewOp(time.Hour)
	require.False(t, p.TryCompleteElseWatchAt(late, purgatory.At("k3", 1)))
	require.Equal(t, purgatory.Closed, late.Seen)
}

// Misuses say what to do.
func TestTryCompleteElseWatchAtMisuse(t *testing.T) {
	p := newPurgatory(t)
	testkit.Misuse(t, "purgatory: ", "no levels", func() { p.TryCompleteElseWatchAt(testkit.NewOp(time.Second)) })
	testkit.Misuse(t, "purgatory: ", "nil Operation", func() { p.TryCompleteElseWatchAt(nil, purgatory.At("k", 1)) })
	testkit.Misuse(t, "purgatory: ", "Op.Timeout is zero", func() { p.TryCompleteElseWatchAt(testkit.NewOp(0), purgatory.At("k", 1)) })
	q, err := purgatory.New[any]("any")
	require.NoError(t, err)
	defer q.Close()
	testkit.Misuse(t, "purgatory: ", "cannot be used", func() { q.TryCompleteElseWatchAt(testkit.NewOp(time.Second), purgatory.At[any]([]int{1}, 1)) })
	testkit.Misuse(t, "purgatory: ", "cannot be used", func() { q.Advance([]int{1}, 1) })
}

// Both kinds of watch mixed, from 8 goroutines: adds at levels and plain,
// Advance with growing levels and CheckAndComplete, forces, cancels,
// flushes, contexts, timeouts and injected panics, and Close in the middle
// of it all. Every operation ends exactly once, the counters agree with the
// operations' own, and the lists are at rest.
func TestStressLevels(t *testing.T) {
	perGoroutine := 300
	if long() {
		perGoroutine = 3000
	}
	synctest.Test(t, func(t *testing.T) {
		var reported atomic.Int64
		p := newPurgatory(t, purgatory.WithShards(4), purgatory.WithPanicHandler(func(r any) {
			assert.Equal(t, testkit.Injected, r)
			reported.Add(1)
		}))
		const goroutines, nKeys = 8, 6
		levels := make([]atomic.Int64, nKeys)
		key := func(i int) string { return fmt.Sprint("p", i) }
		var mu sync.Mutex
		var all []*testkit.Op
		withdrawn := map[*testkit.Op]bool{}
		var wg sync.WaitGroup
		closeAt := goroutines * perGoroutine / 2
		var added atomic.Int64
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 11))
				var mine, undone []*testkit.Op
				call := func(f func()) bool { return testkit.PanickedInjected(t, f) }
				for range perGoroutine {
					op := testkit.NewOp(time.Duration(1+rng.IntN(3000)) * time.Microsecond)
					if rng.IntN(4) == 0 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(2000))*time.Microsecond)
						defer cancel()
						op.Context = ctx
					}
					if rng.IntN(8) == 0 {
						op.PanicIn.Store(int32(1 + rng.IntN(3)))
					}
					op.OnTry = runtime.Gosched
					var add func()
					if rng.IntN(2) == 0 {
						var at []purgatory.Level[string]
						for range 1 + rng.IntN(3) {
							k := rng.IntN(nKeys)
							at = append(at, purgatory.At(key(k), levels[k].Load()+int64(rng.IntN(50))))
						}
						add = func() { p.TryCompleteElseWatchAt(op, at...) }
					} else {
						add = func() { p.TryCompleteElseWatch(op, key(rng.IntN(nKeys))) }
					}
					if call(add) && op.Outcome() == purgatory.Pending {
						undone = append(undone, op)
					}
					mine = append(mine, op)
					if added.Add(1) == int64(closeAt) {
						go p.Close()
					}
					k := rng.IntN(nKeys)
					switch r := rng.IntN(100); {
					case r < 40: // the key's level grows; some operations are ready by then
						mine[rng.IntN(len(mine))].Ready.Store(true)
						call(func() { p.Advance(key(k), levels[k].Add(int64(rng.IntN(20)))) })
					case r < 45:
						call(func() { p.Advance(key(k), levels[k].Load()-int64(rng.IntN(5))) })
					case r < 55:
						mine[rng.IntN(len(mine))].Ready.Store(true)
						call(func() { p.CheckAndComplete(key(k)) })
					case r < 62:
						call(func() { purgatory.ForceComplete(mine[rng.IntN(len(mine))]) })
					case r < 63:
						p.CancelForKey(key(k))
					case r < 64:
						call(func() { p.ForceCompleteForKey(key(k)) })
					case r < 80:
						time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					}
				}
				mu.Lock()
				all = append(all, mine...)
				for _, op := range undone {
					withdrawn[op] = true
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		var counted []*testkit.Op
		for _, op := range all {
			if !withdrawn[op] {
				counted = append(counted, op)
			}
		}
		want := testkit.Tally(t, counted)
		require.NotZero(t, want.Closed, "Close ended some mid-run")
		want.Added, want.Panics = int64(len(counted)), reported.Load()
		require.Equal(t, want, p.Stats())
		require.Zero(t, p.Watched())
		require.NoError(t, p.ListsAtRest())
		t.Logf("outcomes: %+v; withdrawn: %d", want, len(withdrawn))
	})
}

// A key space without bound does not leak: keys whose waiters at a level all
// ended are forgotten, as plain keys are (each shard sweeps its empty lists
// once they outnumber its lists in use), and their levels with them.
func TestLevelKeysAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithShards(4))
		for round := range 20 {
			for i := range 1000 {
				key := fmt.Sprint("partition-", round, "-", i)
				p.TryCompleteElseWatchAt(testkit.NewOp(time.Millisecond), purgatory.At(key, 100))
				p.Advance(key, 50)
			}
			time.Sleep(2 * time.Millisecond) // they expire
			synctest.Wait()
			require.NoError(t, p.ListsAtRest())
			require.LessOrEqual(t, p.Lists(), 4*(64+1)*2, "round %d: lists kept for keys nobody watches", round)
		}
		require.Zero(t, p.Watched())
	})
}
