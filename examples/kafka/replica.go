package main

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/purgatory-go/purgatory/purgatory"
)

// replicate runs the followers, replicas 1 to R-1 of every partition, until
// Shutdown. Each copies the leader's logs by fetching them all in one request,
// through the same path and the same purgatory as a consumer's fetch (Kafka's
// replica fetcher, one per source broker), and its fetch offsets are how the
// leader learns how far it holds each. One goroutine runs them all: an append
// answers every follower's parked fetch at once, and one goroutine woken
// takes every answer, where a goroutine per follower cost a wake-up each.
func (b *Broker) replicate() {
	defer b.wg.Done()
	answers := make(chan followerAnswer, b.cfg.Replicas-1) // a follower has one fetch under way at most
	lists := make([][]*partitionLog, b.cfg.Replicas)       // what each follower's fetch under way lists
	var due []int                                          // the followers to fetch now
	for f := 1; f < b.cfg.Replicas; f++ {
		due = append(due, f)
	}
	var got []followerAnswer
	for b.followerMayFetch() {
		for _, f := range due {
			lists[f] = b.partitionsFor(f)
			b.handleFetch(followerFetch(f, lists[f], b.cfg.FollowerMaxWait), func(r kmsg.Response) {
				answers <- followerAnswer{f, r.(*kmsg.FetchResponse)}
			})
		}
		got = append(got[:0], <-answers)
		for more := true; more; { // and every answer there is already
			select {
			case a := <-answers:
				got = append(got, a)
			default:
				more = false
			}
		}
		due = due[:0]
		for _, a := range got {
			b.copyFetched(a.f, lists[a.f], a.resp)
			due = append(due, a.f)
		}
	}
}

// followerAnswer is the answer to follower f's fetch.
type followerAnswer struct {
	f    int
	resp *kmsg.FetchResponse
}

// followerFetch is follower f's fetch of logs, from the end of what it holds
// of each.
func followerFetch(f int, logs []*partitionLog, maxWait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = int32(f)
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, 64<<20
	for i, l := range logs {
		if i == 0 || logs[i-1].topic != l.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = l.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = l.index, l.copies[f-1].end(), 8<<20
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// copyFetched adds to follower f's copies of logs what its fetch of them
// brought.
func (b *Broker) copyFetched(f int, logs []*partitionLog, resp *kmsg.FetchResponse) {
	i := 0
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			l := logs[i]
			i++
			switch {
			case p.ErrorCode == kerr.OffsetOutOfRange.Code && p.LogStartOffset > l.copies[f-1].end():
				// Retention dropped what f had still to copy: f starts
				// again from the log start, as a Kafka follower does.
				l.copies[f-1].restartAt(p.LogStartOffset)
				continue
			case p.ErrorCode == kerr.UnknownTopicOrPartition.Code && l.gone.Load():
				continue // deleted: the next fetch leaves it out
			case p.ErrorCode != 0:
				b.cfg.Logf("kafka: follower %d of %v: fetch from %d: error %d", f, l, l.copies[f-1].end(), p.ErrorCode)
				continue
			}
			if batches, err := splitBatches(p.RecordBatches); err == nil {
				l.copies[f-1].add(batches)
			} // else nothing new
		}
	}
}

// followerMayFetch waits while followers are stalled, then for
// Config.FollowerDelay (once for the followers that fetch together), and
// reports whether the broker still runs.
func (b *Broker) followerMayFetch() bool {
	if s := b.stall(); s != nil {
		select {
		case <-s:
		case <-b.ctx.Done():
			return false
		}
	}
	if d := b.cfg.FollowerDelay; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.ctx.Done():
			return false
		}
	}
	return b.ctx.Err() == nil
}

// wakeFollowers answers the followers' parked fetches at once, so that they
// fetch again with the partitions of a new topic.
func (b *Broker) wakeFollowers() {
	b.mu.Lock()
	parked := b.followerFetches
	b.followerFetches = map[int]*delayedFetch{}
	b.mu.Unlock()
	for _, d := range parked {
		purgatory.ForceComplete(d)
	}
}

// replicaCopy is what one follower holds of a partition. Its follower
// goroutine adds to it, retention drops its oldest batches, tests read it:
// all under its mu.
type replicaCopy struct {
	mu      sync.Mutex
	batches batchStore
	leo     int64
}

func (c *replicaCopy) end() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leo
}

// restartAt drops the whole copy and makes it start at offset: retention
// dropped batches the follower had not copied yet.
func (c *replicaCopy) restartAt(offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches, c.leo = batchStore{}, offset
}

// dropBefore drops the batches before offset, as the leader's retention
// dropped them.
func (c *replicaCopy) dropBefore(offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches.dropFirst(c.batches.find(offset))
}

// add copies the batches the leader sent, skipping any it holds already.
func (c *replicaCopy) add(batches [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, data := range batches {
		base, last := batchBase(data), batchLast(data)
		if base < c.leo {
			continue
		}
		c.batches.add(data, base, last)
		c.leo = last + 1
	}
}
