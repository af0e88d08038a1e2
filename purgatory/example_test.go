package purgatory_test

import (
	"fmt"
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
