package purgatory_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// produce waits until enough replicas have acknowledged its write.
type produce struct {
	purgatory.Op
	id   int
	need int32
	acks *atomic.Int32 // shared with the replicas' acknowledgement handler
}

func (p *produce) TryComplete() bool { return p.acks.Load() >= p.need }
func (p *produce) OnComplete()       { fmt.Printf("produce %d: %v\n", p.id, p.Outcome()) }
func (p *produce) OnExpiration()     { fmt.Printf("produce %d: timed out\n", p.id) }

func Example() {
	p, err := purgatory.New[string]("produce")
	if err != nil {
		panic(err)
	}
	defer p.Close()

	var acks atomic.Int32
	req := &produce{Op: purgatory.Op{Timeout: 30 * time.Second}, id: 1, need: 2, acks: &acks}
	if !p.TryCompleteElseWatch(req, "orders-0") {
		fmt.Println("produce 1: waiting for replicas")
	}

	acks.Add(1)
	fmt.Println("completed by first ack:", p.CheckAndComplete("orders-0"))
	acks.Add(1)
	fmt.Println("completed by second ack:", p.CheckAndComplete("orders-0"))
	fmt.Printf("delayed %d, watched %d\n", p.Delayed(), p.Watched())

	// Output:
	// produce 1: waiting for replicas
	// completed by first ack: 0
	// produce 1: completed
	// completed by second ack: 1
	// delayed 0, watched 0
}

func ExampleForceComplete() {
	p, err := purgatory.New[string]("produce")
	if err != nil {
		panic(err)
	}
	defer p.Close()

	var acks atomic.Int32
	req := &produce{Op: purgatory.Op{Timeout: 30 * time.Second}, id: 2, need: 3, acks: &acks}
	p.TryCompleteElseWatch(req, "orders-1")
	fmt.Println("won:", purgatory.ForceComplete(req)) // e.g. the leader stepped down
	fmt.Println("won again:", purgatory.ForceComplete(req))

	// Output:
	// produce 2: forced
	// won: true
	// won again: false
}

// acked waits until a partition's high watermark (a number that only grows)
// reaches the offset it wrote: Kafka's DelayedProduce with acks=all.
type acked struct {
	purgatory.Op
	offset    int64
	watermark *atomic.Int64
}

func (a *acked) TryComplete() bool { return a.watermark.Load() >= a.offset }
func (a *acked) OnComplete()       { fmt.Printf("offset %d: %v\n", a.offset, a.Outcome()) }
func (a *acked) OnExpiration()     {}

// A progress watch: each produce waits at its offset, and each advance of the
// high watermark tries only the produces it reached, lowest first, instead of
// every produce of the partition (CheckAndComplete's contract).
func ExamplePurgatory_Advance() {
	p, err := purgatory.New[string]("produce")
	if err != nil {
		panic(err)
	}
	defer p.Close()

	var watermark atomic.Int64
	for _, offset := range []int64{300, 100, 200} {
		op := &acked{Op: purgatory.Op{Timeout: 30 * time.Second}, offset: offset, watermark: &watermark}
		p.TryCompleteElseWatchAt(op, purgatory.At("orders-0", offset))
	}
	for _, hw := range []int64{150, 250, 400} {
		watermark.Store(hw)
		fmt.Printf("high watermark %d: %d completed\n", hw, p.Advance("orders-0", hw))
	}

	// Output:
	// offset 100: completed
	// high watermark 150: 1 completed
	// offset 200: completed
	// high watermark 250: 1 completed
	// offset 300: completed
	// high watermark 400: 1 completed
}

// fetch is a long poll kept in a sync.Pool across requests: the purgatory
// hands it back through Recycle once it is done with each use.
type fetch struct {
	purgatory.Op
	ready  *atomic.Bool
	answer chan purgatory.Outcome // room for one answer: OnComplete never waits
	pool   *sync.Pool
}

func (f *fetch) TryComplete() bool { return f.ready.Load() }
func (f *fetch) OnComplete()       { f.answer <- f.Outcome() }
func (f *fetch) OnExpiration()     {}
func (f *fetch) Recycle()          { f.pool.Put(f) } // nothing of the use runs any more

// Operations reused from a pool: each request takes one, sets what its use
// needs, and passes it; the purgatory puts it back (Recycle) once it is done
// with it, so a service allocates nothing per request.
func ExampleRecycler() {
	p, err := purgatory.New[string]("fetch")
	if err != nil {
		panic(err)
	}
	defer p.Close()

	var pool sync.Pool
	var ready atomic.Bool
	get := func() *fetch {
		if f, ok := pool.Get().(*fetch); ok {
			return f
		}
		return &fetch{ready: &ready, answer: make(chan purgatory.Outcome, 1), pool: &pool}
	}
	for request := range 3 {
		f := get()
		f.Timeout = time.Second
		ready.Store(false)
		p.TryCompleteElseWatch(f, "topic-0")
		ready.Store(true) // the bytes arrived
		p.CheckAndComplete("topic-0")
		fmt.Printf("request %d: %v\n", request, <-f.answer) // f may be in use again from here: read what you need first
	}
	fmt.Printf("added %d\n", p.Stats().Added)

	// Output:
	// request 0: completed
	// request 1: completed
	// request 2: completed
	// added 3
}
