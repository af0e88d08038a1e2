package purgatory_test

import (
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

// queues are the items of a few keys, each a FIFO under one mutex.
type queues struct {
	mu    sync.Mutex
	items [][]int
}

// take pops the first item of the first of keys that has one.
func (q *queues) take(keys []int) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range keys {
		if len(q.items[k]) > 0 {
			item := q.items[k][0]
			q.items[k] = q.items[k][1:]
			return item, true
		}
	}
	return 0, false
}

func (q *queues) push(k, item int) {
	q.mu.Lock()
	q.items[k] = append(q.items[k], item)
	q.mu.Unlock()
}

// receiver is a receive with a timeout, reused for each wait: its TryComplete
// takes an item, and Recycle tells its goroutine that the use is over.
type receiver struct {
	purgatory.Op
	q    *queues
	keys []int
	got  int
	took bool
	over chan struct{}
}

func (r *receiver) TryComplete() bool {
	r.got, r.took = r.q.take(r.keys)
	if r.took {
		runtime.Gosched() // a try that takes a while after it took: the window a racing path needs
	}
	return r.took
}
func (r *receiver) OnComplete()   {}
func (r *receiver) OnExpiration() {}
func (r *receiver) Recycle()      { r.over <- struct{}{} }

// handOffFire is one run of receivers racing their timeouts against pushes.
type handOffFire struct {
	pushes, receivers, keys int
	walk                    func(p *purgatory.Purgatory[int], key int) // after each push
	chaos                   bool                                       // ForceComplete and CancelForKey meanwhile
	closeAt                 int                                        // Close after this many pushes; 0: never
}

// run returns what went wrong: items taken by a try whose use did not end
// Completed (lost), items delivered twice, items neither delivered nor
// queued, and uses that ended Completed with no item.
func (f handOffFire) run(t *testing.T, seed uint64) (lost, twice, missing, empty int, s purgatory.Stats) {
	tw := testkit.Wheel(t) // shared, so that Close does not stop it: every use is recycled
	p, err := purgatory.New[int]("handoff", purgatory.WithTimingWheel(tw))
	require.NoError(t, err)
	defer p.Close()
	q := &queues{items: make([][]int, f.keys)}
	delivered := make([]atomic.Int32, f.pushes)
	var lostTaken, emptyDone atomic.Int32
	var stop atomic.Bool
	rs := make([]*receiver, f.receivers)
	var wg sync.WaitGroup
	for i := range rs {
		r := &receiver{q: q, over: make(chan struct{}, 1)}
		r.keys = []int{i % f.keys}
		if f.keys > 1 && i%2 == 0 {
			r.keys = append(r.keys, (i+1)%f.keys) // on two keys: BLPOP k1 k2
		}
		rs[i] = r
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			for !stop.Load() {
				r.Timeout = time.Duration(50+rng.IntN(201)) * time.Microsecond
				r.took = false
				p.TryCompleteElseWatch(r, r.keys...)
				<-r.over // the use is over: nothing of it runs any more
				switch out := r.Outcome(); {
				case r.took && out == purgatory.Completed:
					delivered[r.got].Add(1)
				case r.took:
					lostTaken.Add(1) // its try took r.got, and another path won
				case out == purgatory.Completed:
					emptyDone.Add(1)
				case out == purgatory.Closed:
					return
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := range f.pushes {
		k := rng.IntN(f.keys)
		q.push(k, i)
		f.walk(p, k)
		if f.chaos && i%500 == 250 {
			purgatory.ForceComplete(rs[rng.IntN(len(rs))])
			p.CancelForKey(rng.IntN(f.keys))
		}
		if i+1 == f.closeAt {
			p.Close()
		}
		if i%32 == 31 {
			// Fake time moves only while every goroutine waits: the
			// timeouts fire during these pauses, and race the pushes
			// that follow. (On the parent of issue 44's change this lost
			// an item in 6 runs of 6.)
			time.Sleep(time.Duration(1+rng.IntN(40)) * time.Microsecond)
		}
	}
	// Let the receivers drain what they can, then end every wait.
	time.Sleep(time.Millisecond)
	stop.Store(true)
	p.Close()
	wg.Wait()
	s = p.Stats()
	queued := make([]int, f.pushes)
	for _, items := range q.items {
		for _, item := range items {
			queued[item]++
		}
	}
	for i := range delivered {
		switch n := int(delivered[i].Load()); {
		case n > 1:
			twice++
		case n+queued[i] == 0:
			missing++
		}
	}
	return int(lostTaken.Load()), twice, missing, int(emptyDone.Load()), s
}

// Issue 44's first case: receivers take their item in TryComplete, and their
// timeouts of 50 to 250 µs race the pushes, on one key and on three (some
// receivers on two keys at once), with ForceComplete and CancelForKey, and
// with Close, in the middle. Whatever a try took is delivered to a receiver
// that ends Completed: nothing is lost, nothing delivered twice, and every
// item is delivered or still queued. It runs under synctest, in fake time,
// with the goroutines running in parallel between the fake ticks; the long
// suite pushes 200,000 items (PURGATORY_LONG=1).
func TestHandOffUnderFire(t *testing.T) {
	pushes := 20_000
	if long() {
		pushes = 200_000
	}
	walks := map[string]func(p *purgatory.Purgatory[int], key int){
		"HandOff":          func(p *purgatory.Purgatory[int], key int) { p.HandOff(key) },
		"CheckAndComplete": func(p *purgatory.Purgatory[int], key int) { p.CheckAndComplete(key) },
	}
	for _, name := range []string{"HandOff", "CheckAndComplete"} {
		for _, c := range []struct {
			name  string
			keys  int
			chaos bool
			close bool
		}{
			{"one key", 1, false, false},
			{"three keys", 3, false, false},
			{"three keys, ForceComplete and CancelForKey", 3, true, false},
			{"three keys, Close in the middle", 3, false, true},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				f := handOffFire{pushes: pushes, receivers: 64, keys: c.keys, walk: walks[name], chaos: c.chaos}
				if name == "CheckAndComplete" {
					f.pushes /= 4 // every push tries every receiver
				}
				if c.close {
					f.closeAt = f.pushes / 2
				}
				synctest.Test(t, func(t *testing.T) {
					lost, twice, missing, empty, s := f.run(t, uint64(len(c.name)))
					require.Zero(t, lost, "items taken by a try whose receiver did not end Completed")
					require.Zero(t, twice, "items delivered twice")
					require.Zero(t, missing, "items neither delivered nor queued")
					require.Zero(t, empty, "receivers ended Completed with no item")
					t.Logf("%d pushes, 64 receivers: none lost or doubled; %+v", f.pushes, s)
				})
			})
		}
	}
}
