package main

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/purgatory-go/purgatory/purgatory"
)

// delayedProduce is an acks=all produce waiting until every in-sync replica
// holds what it wrote, on every partition it wrote to, or until its timeout
// (Kafka's DelayedProduce). It is watched under each of those partitions at
// the high watermark that replicates it (a progress watch), and tried when an
// advance of that partition's high watermark reaches it.
type delayedProduce struct {
	purgatory.Op
	resp  *kmsg.ProduceResponse
	waits []produceWait
	reply func(kmsg.Response)
}

// produceWait is one partition a produce waits on: replicated once the high
// watermark passes last.
type produceWait struct {
	log    *partitionLog
	last   int64
	into   *kmsg.ProduceResponseTopicPartition // its answer, to fail if it never is
	minISR int                                 // its topic's min.insync.replicas when it was written
}

func (w produceWait) replicated() bool {
	_, hw, _ := w.log.offsets()
	return hw > w.last
}

// TryComplete reports whether every partition has replicated the produce,
// or had its topic deleted (OnComplete answers that partition so).
func (d *delayedProduce) TryComplete() bool {
	for _, w := range d.waits {
		if !w.replicated() && !w.log.gone.Load() {
			return false
		}
	}
	return true
}

// OnComplete answers the produce. A partition not replicated by then is
// answered REQUEST_TIMED_OUT if the timeout ended the wait, or
// NOT_LEADER_FOR_PARTITION if shutdown, or the deletion of another topic it
// wrote to, did (the client retries); a partition whose topic was deleted is
// answered UNKNOWN_TOPIC_OR_PARTITION. Nothing is acknowledged that the
// in-sync replicas do not hold. One replicated by fewer in-sync replicas than
// min.insync.replicas (the ISR shrank meanwhile) is answered
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, as Kafka does: its records are in the
// log, but not as safely as asked.
func (d *delayedProduce) OnComplete() {
	fail := kerr.RequestTimedOut.Code
	if out := d.Outcome(); out == purgatory.Closed || out == purgatory.Forced {
		fail = kerr.NotLeaderForPartition.Code
	}
	for _, w := range d.waits {
		switch {
		case w.log.gone.Load():
			w.into.ErrorCode, w.into.BaseOffset = kerr.UnknownTopicOrPartition.Code, -1
		case !w.replicated():
			w.into.ErrorCode, w.into.BaseOffset = fail, -1
		case w.log.inSyncReplicas() < w.minISR:
			w.into.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
		}
	}
	d.reply(d.resp)
}

func (d *delayedProduce) OnExpiration() {}

// handleProduce appends each partition's batches to its log, then wakes the
// fetches waiting on them, and answers as Acks asks: not at all (0), once the
// leader has written (1), or once every replica has (-1: a delayedProduce).
func (b *Broker) handleProduce(req *kmsg.ProduceRequest, reply func(kmsg.Response)) {
	resp := produceResponse(req)
	d := &delayedProduce{resp: resp, reply: reply}
	var at []purgatory.Level[*partitionLog]
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			if w, ok := b.produceTo(t.Topic, p, req.Acks, &resp.Topics[ti].Partitions[pi]); ok {
				d.waits = append(d.waits, w)
				at = append(at, purgatory.At(w.log, w.last+1)) // replicated once the high watermark passes last
			}
		}
	}
	// Only now, every partition written, wake what waits on them (Kafka's
	// ActionQueue, run once the request is handled): a fetch of several
	// partitions is then answered with all the request wrote to them, not
	// with its first partition's records alone and the rest one fetch later.
	for _, w := range d.waits {
		b.appended(w.log)
	}
	switch {
	case req.Acks == 0:
		reply(nil)
	case req.Acks == 1 || len(at) == 0:
		reply(resp)
	default:
		d.Timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
		if d.Timeout <= 0 {
			d.Timeout = -1 // already due: answered at once unless replicated
		}
		// A progress watch: each partition's high watermark only grows, so
		// an advance tries only the produces it replicated.
		b.produces.TryCompleteElseWatchAt(d, at...)
	}
}

// produceResponse returns req's answer, a partition for each it wrote to, to
// be filled in.
func produceResponse(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// produceTo appends one partition's records and returns what an acks=all
// produce waits for there. ok is false if nothing was appended: into says
// why (no such partition, too few replicas in sync for acks=all, a batch
// refused).
func (b *Broker) produceTo(topic string, p kmsg.ProduceRequestTopicPartition, acks int16, into *kmsg.ProduceResponseTopicPartition) (w produceWait, ok bool) {
	l := b.partition(topic, p.Partition)
	switch {
	case l == nil:
		into.ErrorCode, into.BaseOffset = kerr.UnknownTopicOrPartition.Code, -1
		return w, false
	case l.owner.internal:
		into.ErrorCode, into.BaseOffset = kerr.InvalidTopicException.Code, -1
		into.ErrorMessage = kmsg.StringPtr(offsetsTopic + " is internal: this broker keeps offsets in memory, and clients may not write it")
		return w, false
	}
	tc := l.owner.cfg.Load()
	minISR := int(tc.int("min.insync.replicas", b.cfg))
	if acks == -1 {
		if n := l.inSyncReplicas(); n < minISR {
			msg := fmt.Sprintf("%d replicas in sync, %d needed (min.insync.replicas)", n, minISR)
			into.ErrorCode, into.ErrorMessage, into.BaseOffset = kerr.NotEnoughReplicas.Code, &msg, -1
			return w, false // nothing appended
		}
	}
	last, err := b.append(l, p.Records, int(tc.int("max.message.bytes", b.cfg)), into)
	if err != nil {
		return w, false
	}
	return produceWait{l, last, into, minISR}, true
}

// append validates records (validate.go) and writes them to l, records the
// outcome in into, and returns the last offset written (or, for a retried
// batch, the offset it was written at the first time). A batch refused
// leaves l as it was.
func (b *Broker) append(l *partitionLog, records []byte, maxBytes int, into *kmsg.ProduceResponseTopicPartition) (last int64, err error) {
	into.LogAppendTime = -1
	data, err := validateProduce(records, maxBytes)
	if err == nil {
		into.BaseOffset, last, err = l.appendBatch(data)
	}
	into.LogStartOffset, _, _ = l.offsets()
	if err != nil {
		msg := err.Error()
		into.ErrorCode, into.ErrorMessage, into.BaseOffset = errorCode(err), &msg, -1
		return 0, err
	}
	if r := l.owner.retention(b.cfg); r.bytes >= 0 {
		l.retain(r, time.Now())
	}
	return last, nil
}

// appended wakes what waits on l's log end, once a produce has appended to
// it: the followers' fetches and, if the leader alone is in sync (the append
// moved the high watermark), what waits on the high watermark.
func (b *Broker) appended(l *partitionLog) {
	b.fetches.Advance(fetchKey{l, true}, l.readableEnd(true))
	if l.inSyncReplicas() == 1 {
		b.highWatermarkMoved(l)
	}
}
