package purgatory_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// useLog records, per use, how often it ended and how often it was recycled.
type useLog struct {
	mu       sync.Mutex
	ends     map[int64]int
	recycled map[int64]int
	outcomes map[int64]purgatory.Outcome
}

func newUseLog() *useLog {
	return &useLog{ends: map[int64]int{}, recycled: map[int64]int{}, outcomes: map[int64]purgatory.Outcome{}}
}

func (l *useLog) ended(use int64, o purgatory.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends[use]++
	l.outcomes[use] = o
}

func (l *useLog) recycle(use int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recycled[use]++
}

// reusable is an operation kept in a sync.Pool across uses: Recycle puts it
// back. Its TryComplete yields in the middle, so that a try of one use that
// overlapped a try of the next would be caught (overlaps).
type reusable struct {
	purgatory.Op
	ready    atomic.Bool
	use      int64 // this use's number, set before each TryCompleteElseWatch
	trying   atomic.Int32
	overlaps *atomic.Int32
	log      *useLog
	pool     *sync.Pool
}

func (r *reusable) TryComplete() bool {
	if r.trying.Add(1) > 1 {
		r.overlaps.Add(1)
	}
	defer r.trying.Add(-1)
	runtime.Gosched()
	return r.ready.Load()
}

func (r *reusable) OnComplete()   { r.log.ended(r.use, r.Outcome()) }
func (r *reusable) OnExpiration() {}

func (r *reusable) Recycle() {
	if r.Outcome() == purgatory.Cancelled { // no OnComplete: its end is counted here
		r.log.ended(r.use, purgatory.Cancelled)
	}
	r.log.recycle(r.use)
	r.pool.Put(r)
}

// Operations reused from a sync.Pool by 8 goroutines at once, on 1 or 2 of 3
// keys each use (most of them solo), with every path that ends a use racing:
// checks of the key, ForceComplete, CancelForKey, ForceCompleteForKey, a
// context cancelled, and timeouts of 0.1 to 2 ms firing while the walks of
// their keys may be trying them. Every use ends exactly once and is recycled
// exactly once, after it ended; no try of one use overlaps a try of the next
// (a walk trying a solo use without the try bit holds its recycling back
// until it leaves the key); the counts balance.
func TestReuseUnderFire(t *testing.T) {
	perGoroutine := 400
	if long() {
		perGoroutine = 4000
	}
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t, purgatory.WithShards(4))
		log := newUseLog()
		var overlaps atomic.Int32
		var pool sync.Pool
		var nextUse atomic.Int64
		keys := []string{"a", "b", "c"}
		var wg sync.WaitGroup
		var working sync.WaitGroup
		var done atomic.Bool
		wg.Go(func() { // walks the keys all along, so that uses end while their key is walked
			for i := 0; !done.Load(); i++ {
				p.CheckAndComplete(keys[i%len(keys)])
				time.Sleep(50 * time.Microsecond)
			}
		})
		working.Add(8)
		for g := range 8 {
			wg.Go(func() {
				defer working.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				for range perGoroutine {
					r, _ := pool.Get().(*reusable)
					if r == nil {
						r = &reusable{overlaps: &overlaps, log: log, pool: &pool}
					}
					r.use = nextUse.Add(1)
					r.ready.Store(false)
					r.Timeout = time.Duration(100+rng.IntN(1900)) * time.Microsecond
					r.Context = nil
					var cancel context.CancelFunc
					if rng.IntN(5) == 0 {
						r.Context, cancel = context.WithCancel(context.Background())
					}
					k := keys[rng.IntN(len(keys))]
					onKeys := []string{k}
					if rng.IntN(4) == 0 {
						onKeys = append(onKeys, keys[rng.IntN(len(keys))])
					}
					p.TryCompleteElseWatch(r, onKeys...)
					switch rng.IntN(6) {
					case 0:
						r.ready.Store(true)
						p.CheckAndComplete(k)
					case 1:
						purgatory.ForceComplete(r)
					case 2:
						p.CancelForKey(k)
					case 3:
						p.ForceCompleteForKey(k)
					case 4:
						if cancel != nil {
							cancel()
						}
					}
					if rng.IntN(3) == 0 {
						time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
					}
					if cancel != nil && rng.IntN(2) == 0 {
						defer cancel()
					}
				}
			})
		}
		working.Wait()
		done.Store(true)
		wg.Wait()
		p.Close()
		time.Sleep(time.Second) // contexts never cancelled leave nothing behind: Close ended their uses
		synctest.Wait()

		uses := nextUse.Load()
		log.mu.Lock()
		defer log.mu.Unlock()
		for use := int64(1); use <= uses; use++ {
			require.Equal(t, 1, log.ends[use], "use %d ended %d times (%v)", use, log.ends[use], log.outcomes[use])
			require.Equal(t, 1, log.recycled[use], "use %d recycled %d times", use, log.recycled[use])
		}
		require.Zero(t, overlaps.Load(), "a try overlapped another try of the same operation")
		s := p.Stats()
		require.EqualValues(t, uses, s.Added)
		require.Zero(t, s.Delayed)
		require.Equal(t, s.Added, s.Completed+s.Forced+s.Expired+s.ContextDone+s.Cancelled+s.Closed)
		t.Logf("%d uses: %+v", uses, s)
	})
}

// A use is recycled once the purgatory is done with it, not before: while
// its OnComplete runs, a TryCompleteElseWatch of it panics with a message
// that says to put it back from Recycle; after Recycle it starts a new use,
// with a new generation that a stale entry of the last use cannot end.
func TestReuseWaitsForTheCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		filler := testkit.NewOp(time.Hour) // keeps "j" from compacting away the last use's entry
		require.False(t, p.TryCompleteElseWatch(filler, "j"))
		op := testkit.NewOp(time.Second)
		inside := make(chan struct{})
		var recycledInside int32
		hook := &callsBack{Op: op, f: func() {
			recycledInside = op.Recycled.Load()
			testkit.Misuse(t, "purgatory: ", "before the purgatory was done with its last use", func() { p.TryCompleteElseWatch(op, "k") })
			close(inside)
		}}
		require.False(t, p.TryCompleteElseWatch(hook, "k", "j"))
		op.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k"))
		<-inside
		require.Zero(t, recycledInside, "not recycled while OnComplete ran")
		require.EqualValues(t, 1, op.Recycled.Load(), "recycled once it returned")

		// The next use: watched under "j" too; the last use's entry in "j"
		// is stale, and a walk of "j" must not end the new use through it.
		op.Ready.Store(false)
		hook.f = func() {}
		require.False(t, p.TryCompleteElseWatch(hook, "k"))
		require.Zero(t, p.CheckAndComplete("j"), "a stale entry ends nothing")
		op.Ready.Store(true)
		require.Zero(t, p.CheckAndComplete("j"))
		require.Equal(t, purgatory.Pending, op.Outcome())
		require.Equal(t, 1, p.CheckAndComplete("k"))
		require.EqualValues(t, 2, op.Recycled.Load())
		require.Equal(t, purgatory.Stats{Watched: 1, Delayed: 1, Added: 3, Completed: 2}, p.Stats())
	})
}

// A reused operation stays with its purgatory: passed to another it panics
// with a message that says why. An operation ended by ForceComplete before
// it was ever added is never added (as before reuse).
func TestReuseMisuse(t *testing.T) {
	p, q := newPurgatory(t), newPurgatory(t)
	op := testkit.NewOp(time.Hour)
	op.Ready.Store(true)
	require.True(t, p.TryCompleteElseWatch(op, "k"))
	testkit.Misuse(t, "purgatory: ", "reused in another purgatory", func() { q.TryCompleteElseWatch(op, "k") })
	require.True(t, p.TryCompleteElseWatch(op, "k"), "its own purgatory takes it again")

	forced := testkit.NewOp(time.Hour)
	require.True(t, purgatory.ForceComplete(forced))
	require.False(t, p.TryCompleteElseWatch(forced, "k"))
	require.False(t, p.TryCompleteElseWatch(forced, "k"), "still not added")
	require.Zero(t, forced.Recycled.Load(), "never the purgatory's: never recycled")
	require.Equal(t, purgatory.Stats{Added: 2, Completed: 2}, p.Stats())
}

// A solo use ended by another path while a walk of its key is under way
// (here ForceComplete from inside the TryComplete of the operation before it
// in the list) may still be tried by that walk without the try bit, so it is
// recycled only when the walk leaves the key, and then once.
func TestReuseWaitsForTheWalk(t *testing.T) {
	p := newPurgatory(t)
	solo := testkit.NewOp(time.Hour)
	first := testkit.NewOp(time.Hour)
	var recycledDuring int32 = -1
	first.OnTry = func() {
		if first.Tries.Load() == 3 { // in the walk: after TryCompleteElseWatch's two
			require.True(t, purgatory.ForceComplete(solo))
			recycledDuring = solo.Recycled.Load()
		}
	}
	require.False(t, p.TryCompleteElseWatch(first, "k"))
	require.False(t, p.TryCompleteElseWatch(solo, "k"))
	require.Zero(t, p.CheckAndComplete("k"))
	require.Zero(t, recycledDuring, "not recycled while the walk of its key was under way")
	require.EqualValues(t, 1, solo.Recycled.Load(), "recycled as the walk left")
	require.EqualValues(t, 1, solo.Completed.Load())
	require.Equal(t, 2, int(solo.Tries.Load()), "the walk did not try it once it had ended")
	require.False(t, p.TryCompleteElseWatch(solo, "k"), "and it may be used again")
}
