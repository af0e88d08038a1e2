// End-to-end tests across the module's packages: a simulated broker whose
// produce and fetch requests wait in two purgatories sharing one timing wheel.
package purgatory_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/crashout"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

func TestMain(m *testing.M) {
	crashout.Keep() // a FuzzClock worker's crash, kept where .ci/run can print it
	goleak.VerifyTestMain(m)
}

type partition struct {
	topic string
	index int
}

// broker holds each partition's log end offset and the offset each replica has
// acknowledged.
type broker struct {
	mu       sync.Mutex
	logEnd   map[partition]int64
	acked    map[partition][]int64 // per replica
	produces *purgatory.Purgatory[partition]
	fetches  *purgatory.Purgatory[partition]
}

func (b *broker) append(p partition, n int64) int64 {
	b.mu.Lock()
	b.logEnd[p] += n
	end := b.logEnd[p]
	b.mu.Unlock()
	b.fetches.CheckAndComplete(p) // new bytes may satisfy long polls
	return end
}

func (b *broker) ack(p partition, replica int, offset int64) {
	b.mu.Lock()
	b.acked[p][replica] = max(b.acked[p][replica], offset)
	b.mu.Unlock()
	b.produces.CheckAndComplete(p)
}

// ends counts each operation's callbacks, to prove exactly-once.
type ends struct {
	completed, expired atomic.Int32
}

// produceOp waits until `need` replicas have acknowledged its writes on every
// partition it wrote to (Kafka's DelayedProduce with acks=all).
type produceOp struct {
	purgatory.Op
	ends
	b     *broker
	need  int
	until map[partition]int64
}

func (o *produceOp) TryComplete() bool {
	o.b.mu.Lock()
	defer o.b.mu.Unlock()
	for p, offset := range o.until {
		n := 0
		for _, a := range o.b.acked[p] {
			if a >= offset {
				n++
			}
		}
		if n < o.need {
			return false
		}
	}
	return true
}
func (o *produceOp) OnComplete()   { o.completed.Add(1) }
func (o *produceOp) OnExpiration() { o.expired.Add(1) }

// fetchOp long-polls until minBytes are available past its offset (Kafka's
// DelayedFetch).
type fetchOp struct {
	purgatory.Op
	ends
	b        *broker
	p        partition
	from     int64
	minBytes int64
}

func (o *fetchOp) TryComplete() bool {
	o.b.mu.Lock()
	defer o.b.mu.Unlock()
	return o.b.logEnd[o.p]-o.from >= o.minBytes
}
func (o *fetchOp) OnComplete()   { o.completed.Add(1) }
func (o *fetchOp) OnExpiration() { o.expired.Add(1) }

func TestBroker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New()
		require.NoError(t, err)
		defer tw.Stop()
		produces, err := purgatory.New[partition]("produce", purgatory.WithTimingWheel(tw))
		require.NoError(t, err)
		defer produces.Close()
		fetches, err := purgatory.New[partition]("fetch", purgatory.WithTimingWheel(tw))
		require.NoError(t, err)
		defer fetches.Close()

		const replicas, nPartitions = 3, 8
		b := &broker{logEnd: map[partition]int64{}, acked: map[partition][]int64{}, produces: produces, fetches: fetches}
		var parts []partition
		for i := range nPartitions {
			p := partition{"orders", i}
			parts = append(parts, p)
			b.acked[p] = make([]int64, replicas)
		}

		var mu sync.Mutex
		var allProduces []*produceOp
		var allFetches []*fetchOp
		var clients sync.WaitGroup
		for c := range 4 { // producer clients
			clients.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), 1))
				for range 300 {
					op := &produceOp{Op: purgatory.Op{Timeout: 100 * time.Millisecond}, b: b, need: replicas, until: map[partition]int64{}}
					var keys []partition
					for range 1 + rng.IntN(3) {
						p := parts[rng.IntN(nPartitions)]
						op.until[p] = b.append(p, 1+rng.Int64N(100))
						keys = append(keys, p)
					}
					for p, offset := range op.until {
						for r := range replicas {
							// Replica 2 is slow: some requests time out on it.
							lag := time.Duration(1+rng.IntN(20)) * time.Millisecond
							if r == 2 && rng.IntN(5) == 0 {
								lag += 150 * time.Millisecond
							}
							time.AfterFunc(lag, func() { b.ack(p, r, offset) })
						}
					}
					produces.TryCompleteElseWatch(op, keys...)
					mu.Lock()
					allProduces = append(allProduces, op)
					mu.Unlock()
					time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				}
			})
		}
		for c := range 2 { // consumers long-polling
			clients.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), 2))
				for range 300 {
					p := parts[rng.IntN(nPartitions)]
					b.mu.Lock()
					from := b.logEnd[p]
					b.mu.Unlock()
					op := &fetchOp{Op: purgatory.Op{Timeout: 50 * time.Millisecond}, b: b, p: p, from: from, minBytes: 1 + rng.Int64N(400)}
					fetches.TryCompleteElseWatch(op, p)
					mu.Lock()
					allFetches = append(allFetches, op)
					mu.Unlock()
					time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
				}
			})
		}
		clients.Wait()
		time.Sleep(time.Second) // every ack lands, every timeout passes
		synctest.Wait()

		check := func(name string, p *purgatory.Purgatory[partition], ops []*ends, outcomes []purgatory.Outcome) {
			var completed, expired int64
			for i, e := range ops {
				require.EqualValues(t, 1, e.completed.Load(), "%s %d: OnComplete exactly once", name, i)
				switch outcomes[i] {
				case purgatory.Completed:
					completed++
					require.Zero(t, e.expired.Load(), "%s %d", name, i)
				case purgatory.Expired:
					expired++
					require.EqualValues(t, 1, e.expired.Load(), "%s %d", name, i)
				default:
					t.Fatalf("%s %d ended %v", name, i, outcomes[i])
				}
			}
			require.Equal(t, purgatory.Stats{Added: int64(len(ops)), Completed: completed, Expired: expired}, p.Stats(), name)
			require.NotZero(t, completed, "%s: some complete", name)
			require.NotZero(t, expired, "%s: some expire", name)
			t.Logf("%s: %d completed, %d expired", name, completed, expired)
		}
		var pe, fe []*ends
		var po, fo []purgatory.Outcome
		for _, o := range allProduces {
			pe, po = append(pe, &o.ends), append(po, o.Outcome())
		}
		for _, o := range allFetches {
			fe, fo = append(fe, &o.ends), append(fo, o.Outcome())
		}
		check("produce", produces, pe, po)
		check("fetch", fetches, fe, fo)
		require.Zero(t, tw.Len(), "no timeout left on the shared wheel")
	})
}
