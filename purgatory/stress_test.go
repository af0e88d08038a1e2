package purgatory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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

// long reports whether the long suite was asked for with PURGATORY_LONG=1
// (docs/design.md, "Tests"): the default test command stays fast, and CI runs both.
func long() bool { return os.Getenv("PURGATORY_LONG") == "1" }

// TestStress mixes every path that can end an operation, from 8 goroutines at
// once, with panics injected at random into TryComplete, OnComplete and
// OnExpiration, and then accounts for each operation: exactly one outcome,
// OnComplete at most once (never for a cancelled one), OnExpiration only
// after a timeout, the purgatory's counters agree with the operations' own,
// and no key is left locked. The only operations without an outcome are those
// whose TryCompleteElseWatch was undone by a panic in TryComplete; they are
// not counted as added. With 2 keys, most operations share one key (and most
// of those watch it alone: the walk tries them without the try bit), so the
// walks, unlinks and adds of 8 goroutines meet on the same lists. With 8 Ps,
// the timeouts spread over 8 wheel shards and the counts over 8 stripes, and
// operations added on one P end on another.
func TestStress(t *testing.T) {
	for _, nKeys := range []int{64, 2} {
		t.Run(fmt.Sprint(nKeys, " keys"), func(t *testing.T) { stress(t, nKeys) })
	}
	t.Run("64 keys, 8 Ps", func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
		stress(t, 64)
	})
}

func stress(t *testing.T, nKeys int) {
	perGoroutine := 300
	if long() {
		perGoroutine = 3000
	}
	synctest.Test(t, func(t *testing.T) {
		var reported atomic.Int64
		p := newPurgatory(t, purgatory.WithShards(8), purgatory.WithPanicHandler(func(r any) {
			assert.Equal(t, testkit.Injected, r)
			reported.Add(1)
		}))
		const goroutines = 8
		keys := make([]string, nKeys)
		for i := range keys {
			keys[i] = fmt.Sprint("key", i)
		}
		var mu sync.Mutex
		var all []*testkit.Op
		withdrawn := map[*testkit.Op]bool{}
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				var mine []*testkit.Op
				var undone []*testkit.Op
				var cancels []context.CancelFunc
				// call runs f, which may panic only with an injected panic.
				call := func(f func()) bool { return testkit.PanickedInjected(t, f) }
				for range perGoroutine {
					op := testkit.NewOp(time.Duration(1+rng.IntN(3000)) * time.Microsecond)
					if rng.IntN(4) == 0 {
						ctx, cancel := context.WithCancel(context.Background())
						op.Context = ctx
						cancels = append(cancels, cancel)
					}
					if rng.IntN(10) == 0 {
						op.Ready.Store(true) // completes at once
					}
					if rng.IntN(8) == 0 {
						op.PanicIn.Store(int32(1 + rng.IntN(3)))
					}
					op.OnTry = runtime.Gosched // a try long enough for others to meet it
					opKeys := make([]string, 1+rng.IntN(3))
					for i := range opKeys {
						opKeys[i] = keys[rng.IntN(nKeys)]
					}
					if call(func() { p.TryCompleteElseWatch(op, opKeys...) }) && op.Outcome() == purgatory.Pending {
						undone = append(undone, op)
					}
					mine = append(mine, op)

					switch r := rng.IntN(100); {
					case r < 30: // a completion event on a key
						mine[rng.IntN(len(mine))].Ready.Store(true)
						call(func() { p.CheckAndComplete(keys[rng.IntN(nKeys)]) })
					case r < 45:
						call(func() { purgatory.ForceComplete(mine[rng.IntN(len(mine))]) })
					case r < 46:
						p.CancelForKey(keys[rng.IntN(nKeys)])
					case r < 56 && len(cancels) > 0:
						cancels[rng.IntN(len(cancels))]()
					case r < 76:
						time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					}
				}
				for _, c := range cancels {
					c()
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
		time.Sleep(10 * time.Millisecond) // every remaining timeout passes
		synctest.Wait()
		var probes []*testkit.Op
		for _, key := range keys {
			// Every key is free: a key whose try bits or walk were left
			// held would deadlock the bubble or complete nothing here.
			probe := testkit.NewOp(time.Hour)
			probes = append(probes, probe)
			require.False(t, p.TryCompleteElseWatch(probe, key))
			probe.Ready.Store(true)
			require.Equal(t, 1, p.CheckAndComplete(key), "key %s is free", key)
		}

		require.Len(t, all, goroutines*perGoroutine)
		all = append(all, probes...)
		var counted []*testkit.Op
		for i, op := range all {
			if withdrawn[op] {
				require.Equal(t, purgatory.Pending, op.Outcome(), "operation %d was withdrawn", i)
				require.Zero(t, op.Completed.Load(), "operation %d was withdrawn", i)
				continue
			}
			counted = append(counted, op)
		}
		want := testkit.Tally(t, counted)
		require.Zero(t, want.Closed, "nothing closed the purgatory")
		want.Added, want.Panics = int64(len(counted)), reported.Load()
		require.Equal(t, want, p.Stats())
		require.Zero(t, p.Watched())
		require.NoError(t, p.ListsAtRest())
		require.NotZero(t, len(withdrawn), "some TryCompleteElseWatch calls were undone")
		require.NotZero(t, want.Panics, "some panics were recovered on the library's goroutines")
		t.Logf("outcomes: %+v; withdrawn: %d", want, len(withdrawn))
	})
}
