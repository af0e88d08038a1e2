package main

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/purgatory-go/purgatory/purgatory"
)

// delayedFetch is a fetch waiting for MinBytes to arrive on the partitions it
// reads, or for its MaxWait to pass (Kafka's DelayedFetch). Either way it is
// answered with what there is then. A consumer reads up to the high
// watermark; a follower (replica > 0) up to the log end. It is watched under
// each partition it reads.
type delayedFetch struct {
	purgatory.Op
	req      *kmsg.FetchRequest
	replica  int // 0: a consumer; 1 to R-1: the follower of that number
	parts    []fetchPart
	minBytes int64
	reply    func(kmsg.Response)
	b        *Broker
}

// fetchPart is one partition a fetch reads, where its answer goes.
type fetchPart struct {
	log      *partitionLog // nil: no such partition
	offset   int64
	maxBytes int32
	topic    int // index into the request's (and the response's) topics
	index    int32
}

// TryComplete reports whether MinBytes are there to be read, across every
// partition, or one of them is out of range or deleted (it is answered with
// the error at once). It takes each partition's lock in turn, never two at
// once.
func (d *delayedFetch) TryComplete() bool {
	var n int64
	for _, p := range d.parts {
		switch {
		case p.log == nil:
			continue
		case p.log.gone.Load():
			return true
		}
		if avail, ok := p.log.available(p.offset, d.replica > 0); ok {
			n += avail
		} else {
			return true // out of range now: answer with the error at once
		}
	}
	return n >= d.minBytes
}

// OnComplete answers the fetch with what there is, whichever way it ended.
func (d *delayedFetch) OnComplete() {
	if d.replica > 0 {
		d.b.unparkFollower(d)
	}
	d.reply(d.response())
}
func (d *delayedFetch) OnExpiration() {}

// handleFetch serves a consumer's fetch (ReplicaID -1) or a follower's. A
// follower's fetch offset also tells the leader how far that follower has
// copied, which may move the high watermark. The fetch is answered at once if
// it may not wait, if it asks for a partition that does not exist, or if its
// bytes are there already; otherwise it parks in the fetch purgatory.
func (b *Broker) handleFetch(req *kmsg.FetchRequest, reply func(kmsg.Response)) {
	d := &delayedFetch{b: b, req: req, replica: max(0, int(req.ReplicaID)), minBytes: int64(req.MinBytes), reply: reply}
	if d.replica >= b.cfg.Replicas {
		d.replica = 0 // not one of ours: served as a consumer
	}
	keys, missing := b.fetchParts(d)
	immediate := missing || req.MaxWaitMillis <= 0 || req.MinBytes <= 0
	switch {
	case len(keys) == 0 && d.replica > 0 && !immediate:
		// A follower with no partitions to copy yet waits for the first
		// topic, which wakes it.
		keys = append(keys, fetchKey{})
	case immediate || len(keys) == 0:
		reply(d.response())
		return
	}
	d.Timeout = time.Duration(req.MaxWaitMillis) * time.Millisecond
	if d.replica > 0 && !b.parkFollower(d) {
		reply(d.response()) // a topic was created since the follower asked: ask again
		return
	}
	if len(keys) == 1 && keys[0].log != nil {
		// One partition: MinBytes maps exactly to a byte position of its
		// log, a level that only grows (readableEnd), so an append or a
		// rise of the high watermark tries this fetch only once it is
		// reached. A fetch of several partitions waits for MinBytes summed
		// over them, which no one partition's level tells: a plain watch.
		level := keys[0].log.bytesBefore(d.parts[0].offset) + d.minBytes
		b.fetches.TryCompleteElseWatchAt(d, purgatory.At(keys[0], level))
		return
	}
	b.fetches.TryCompleteElseWatch(d, keys...)
}

// fetchParts lists the partitions d's request reads, and returns the keys d
// waits on: one per partition that exists (missing tells whether one does
// not). A follower's fetch offsets record how far it has copied each.
func (b *Broker) fetchParts(d *delayedFetch) (keys []fetchKey, missing bool) {
	now := time.Now()
	var moved []*partitionLog
	n := 0
	for _, t := range d.req.Topics {
		n += len(t.Partitions)
	}
	d.parts = make([]fetchPart, 0, n)
	keys = make([]fetchKey, 0, n)
	for ti, t := range d.req.Topics {
		for _, p := range t.Partitions {
			l := b.partition(t.Topic, p.Partition)
			d.parts = append(d.parts, fetchPart{log: l, offset: p.FetchOffset, maxBytes: p.PartitionMaxBytes, topic: ti, index: p.Partition})
			if l == nil {
				missing = true
				continue
			}
			if d.replica > 0 && b.followerAt(l, d.replica, p.FetchOffset, now) {
				moved = append(moved, l)
			}
			keys = append(keys, fetchKey{l, d.replica > 0})
		}
	}
	// As a produce wakes its fetches once it has written every partition,
	// a follower's fetch wakes what waits on the high watermarks it moved
	// once it has told every position, so that a consumer's fetch of
	// several partitions gets all that became readable.
	for _, l := range moved {
		b.highWatermarkMoved(l)
	}
	return keys, missing
}

// followerAt records that follower f holds l up to offset at now, which may
// bring it back into the ISR; it reports whether the high watermark moved.
func (b *Broker) followerAt(l *partitionLog, f int, offset int64, now time.Time) (advanced bool) {
	advanced, rejoined := l.followerAt(f, offset, now)
	if rejoined {
		b.cfg.Logf("kafka: %v: follower %d is back in the ISR", l, f)
	}
	return advanced
}

// response reads every partition now, in the order asked, within the fetch's
// MaxBytes (though the first batch found is sent whole, as Kafka does).
func (d *delayedFetch) response() kmsg.Response {
	resp := d.req.ResponseKind().(*kmsg.FetchResponse)
	budget := int64(d.req.MaxBytes)
	if d.req.Version < 3 || budget <= 0 {
		budget = 1 << 62
	}
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(d.req.Topics))
	for _, t := range d.req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(t.Partitions)) // a part for each
		resp.Topics = append(resp.Topics, rt)
	}
	var sent int64
	for _, p := range d.parts {
		rt := &resp.Topics[p.topic]
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = p.index
		rp.RecordBatches = []byte{} // empty, not null: librdkafka refuses a null set
		switch {
		case p.log == nil || p.log.gone.Load():
			rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		case sent > 0 && sent >= budget:
			start, hw, _ := p.log.offsets()
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, hw, start
		default:
			records, start, hw, ok := p.log.read(p.offset, int32(min(int64(p.maxBytes), budget-sent)), d.replica > 0)
			if !ok {
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
			}
			if records != nil {
				rp.RecordBatches = records
			}
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, hw, start
			sent += int64(len(records))
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}

// highWatermarkMoved wakes what waits for l's high watermark: the acks=all
// produces it replicated and the one-partition consumer fetches whose bytes
// it made readable (an advance tries only those), and the consumers' fetches
// of several partitions (every one, as Kafka does).
func (b *Broker) highWatermarkMoved(l *partitionLog) {
	_, hw, _ := l.offsets()
	b.produces.Advance(l, hw)
	b.fetches.Advance(fetchKey{l, false}, l.readableEnd(false))
}

// parkFollower records a follower's fetch for wakeFollowers before it is
// watched, so that a topic created from then on wakes it. It returns false
// if a topic was created since the follower listed the partitions.
func (b *Broker) parkFollower(d *delayedFetch) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.known[d.replica] != b.generation {
		return false
	}
	b.followerFetches[d.replica] = d
	return true
}

func (b *Broker) unparkFollower(d *delayedFetch) {
	b.mu.Lock()
	if b.followerFetches[d.replica] == d {
		delete(b.followerFetches, d.replica)
	}
	b.mu.Unlock()
}
