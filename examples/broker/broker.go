package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// partition names a log, the key produce and fetch requests wait on.
type partition int

// broker holds each partition's log end offset and the offset each replica
// has acknowledged, and the two purgatories whose requests wait on them.
type broker struct {
	mu       sync.Mutex
	logEnd   []int64   // per partition, bytes
	acked    [][]int64 // per partition, per replica
	produces *purgatory.Purgatory[partition]
	fetches  *purgatory.Purgatory[partition]
	tw       *timingwheel.TimingWheel // also delivers the simulated replicas' acknowledgements

	// ended counts each request's callbacks, so the summary can prove that
	// every request ended exactly once.
	producesEnded, fetchesEnded, endedTwice atomic.Int64
}

func newBroker(partitions, replicas int, tw *timingwheel.TimingWheel, produces, fetches *purgatory.Purgatory[partition]) *broker {
	b := &broker{logEnd: make([]int64, partitions), acked: make([][]int64, partitions), produces: produces, fetches: fetches, tw: tw}
	for p := range b.acked {
		b.acked[p] = make([]int64, replicas)
	}
	return b
}

// append writes n bytes to p and wakes the long polls waiting on it.
func (b *broker) append(p partition, n int64) int64 {
	b.mu.Lock()
	b.logEnd[p] += n
	end := b.logEnd[p]
	b.mu.Unlock()
	b.fetches.CheckAndComplete(p)
	return end
}

// ack records that replica has everything up to offset on p, and tries the
// produce requests waiting on p.
func (b *broker) ack(p partition, replica int, offset int64) {
	b.mu.Lock()
	b.acked[p][replica] = max(b.acked[p][replica], offset)
	b.mu.Unlock()
	b.produces.CheckAndComplete(p)
}

// replicate schedules each replica's acknowledgement of offset on p after its
// latency, on the timing wheel: one timer per acknowledgement, no goroutine.
func (b *broker) replicate(p partition, offset int64, latency func(replica int) time.Duration) {
	for r := range b.acked[p] {
		b.tw.AfterFunc(latency(r), func() { b.ack(p, r, offset) })
	}
}

// ending makes sure each request ends once, whichever way.
type ending struct {
	ended atomic.Int32
	b     *broker
}

func (e *ending) end(count *atomic.Int64) {
	if e.ended.Add(1) > 1 {
		e.b.endedTwice.Add(1)
	}
	count.Add(1)
}

// produceRequest waits until `acks` replicas hold its writes on every
// partition it wrote to (Kafka's DelayedProduce).
type produceRequest struct {
	purgatory.Op
	ending
	acks  int
	until map[partition]int64
}

func (r *produceRequest) TryComplete() bool {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	for p, offset := range r.until {
		n := 0
		for _, a := range r.b.acked[p] {
			if a >= offset {
				n++
			}
		}
		if n < r.acks {
			return false
		}
	}
	return true
}

func (r *produceRequest) OnComplete()   { r.end(&r.b.producesEnded) }
func (r *produceRequest) OnExpiration() {} // a real broker answers REQUEST_TIMED_OUT here

// fetchRequest long-polls until minBytes are available past its offset or its
// max wait passes (Kafka's DelayedFetch); either way it answers with what is
// there.
type fetchRequest struct {
	purgatory.Op
	ending
	p        partition
	from     int64
	minBytes int64
}

func (r *fetchRequest) TryComplete() bool {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.b.logEnd[r.p]-r.from >= r.minBytes
}

func (r *fetchRequest) OnComplete()   { r.end(&r.b.fetchesEnded) }
func (r *fetchRequest) OnExpiration() {}
