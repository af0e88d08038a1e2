package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceConsumeAcksAll produces 10,000 records with acks=all (franz-go's
// default, idempotent producer) to 8 partitions of a 3-replica topic created
// with CreateTopics, and reads them all back: in order per partition, none
// lost or repeated.
func TestProduceConsumeAcksAll(t *testing.T) {
	const records, partitions = 10_000, 8
	b, addr, _ := startBroker(t, Config{Replicas: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "orders", partitions, 3
	create.Topics = append(create.Topics, ct)
	resp, err := create.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v, %+v", err, resp)
	}

	for i := range records {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i%97)), Value: []byte(strconv.Itoa(i))}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s: %v", r.Value, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Acknowledged means replicated: every follower holds every record.
	for _, l := range b.topic("orders").partitions {
		_, hw, leo := l.offsets()
		if hw != leo {
			t.Errorf("%v: high watermark %d, log end %d after every produce was acknowledged", l, hw, leo)
		}
		for f, c := range l.copies {
			if c.end() < hw {
				t.Errorf("%v: follower %d holds %d of %d acknowledged offsets", l, f+1, c.end(), hw)
			}
		}
	}

	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := make(map[string]bool, records)
	last := map[string]int{} // per key: values come in the order produced
	next := map[int32]int64{}
	for len(seen) < records {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			v := string(r.Value)
			if seen[v] {
				t.Errorf("record %s read twice", v)
			}
			seen[v] = true
			n, _ := strconv.Atoi(v)
			if prev, ok := last[string(r.Key)]; ok && n <= prev {
				t.Errorf("key %s: record %d after %d", r.Key, n, prev)
			}
			last[string(r.Key)] = n
		})
	}
	var total int64
	for _, n := range next {
		total += n
	}
	if total != records {
		t.Errorf("partitions hold %d records, want %d", total, records)
	}
}

// TestLongPoll: a fetch parked on an empty partition is answered by the
// produce that gives it a record, not by its MaxWait; a fetch nothing
// answers is answered at its MaxWait and not before.
func TestLongPoll(t *testing.T) {
	_, addr, _ := startBroker(t, Config{Replicas: 3}, "idle:2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	empty := dialRaw(t, addr)
	const maxWait = 300 * time.Millisecond
	start := time.Now()
	resp, err := empty.do(fetchReq("idle", 1, 0, maxWait, 1))
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < maxWait {
		t.Errorf("an empty fetch was answered after %v, before its MaxWait of %v", waited, maxWait)
	}
	if p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Errorf("empty fetch: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}

	parked := dialRaw(t, addr)
	const longWait = 20 * time.Second
	if err := parked.send(fetchReq("idle", 0, 0, longWait, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let it park; it is answered either way
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: 0, Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got, err := parked.recv()
	if err != nil {
		t.Fatal(err)
	}
	latency := time.Since(produced)
	p := got.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
		t.Fatalf("parked fetch: error %d, %d bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	if latency >= longWait {
		t.Errorf("the parked fetch was answered by its MaxWait (%v), not by the produce", latency)
	}
	t.Logf("produce (acks=all, 3 replicas) to the parked fetch's answer: %v", latency)
}

// TestStalledFollower: with a follower stalled, an acks=all produce is
// answered REQUEST_TIMED_OUT at its timeout, and nothing it wrote is
// acknowledged or readable; once the follower catches up, it is.
func TestStalledFollower(t *testing.T) {
	b, addr, _ := startBroker(t, Config{Replicas: 3}, "slow:1")
	b.StallFollowers(true)
	c := dialRaw(t, addr)
	produce := func(acks int16, timeout time.Duration) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		resp, err := c.do(produceReq(t, "slow", 0, acks, timeout, "not yet replicated"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	const timeout = 200 * time.Millisecond
	start := time.Now()
	p := produce(-1, timeout)
	if waited := time.Since(start); waited < timeout {
		t.Errorf("answered after %v, before the produce's timeout of %v", waited, timeout)
	}
	if p.ErrorCode != kerr.RequestTimedOut.Code || p.BaseOffset != -1 {
		t.Errorf("produce with a stalled follower: error %d, base offset %d; want REQUEST_TIMED_OUT (7), -1", p.ErrorCode, p.BaseOffset)
	}
	l := b.partition("slow", 0)
	if _, hw, leo := l.offsets(); hw != 0 || leo != 1 {
		t.Errorf("high watermark %d, log end %d; want 0 and 1: written, not replicated", hw, leo)
	}
	resp, err := c.do(fetchReq("slow", 0, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); n != 0 {
		t.Errorf("a consumer read %d bytes nobody acknowledged", n)
	}
	if p := produce(1, timeout); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Errorf("acks=1 with a stalled follower: error %d, base offset %d; want 0, 1 (the leader alone acknowledges)", p.ErrorCode, p.BaseOffset)
	}

	b.StallFollowers(false)
	if p := produce(-1, 10*time.Second); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Errorf("after the follower resumed: error %d, base offset %d; want 0, 2", p.ErrorCode, p.BaseOffset)
	}
	if _, hw, _ := l.offsets(); hw != 3 {
		t.Errorf("high watermark %d after the follower caught up, want 3", hw)
	}
}

// recordBatch encodes one record, with no key, as a v2 batch from a
// producer that is not idempotent.
func recordBatch(t *testing.T, value string) []byte {
	t.Helper()
	var rec []byte
	rec = append(rec, 0)               // attributes
	rec = binary.AppendVarint(rec, 0)  // timestamp delta
	rec = binary.AppendVarint(rec, 0)  // offset delta
	rec = binary.AppendVarint(rec, -1) // no key
	rec = binary.AppendVarint(rec, int64(len(value)))
	rec = append(rec, value...)
	rec = binary.AppendVarint(rec, 0) // no headers
	rec = append(binary.AppendVarint(nil, int64(len(rec))), rec...)

	now := time.Now().UnixMilli()
	b := make([]byte, batchHeaderLen, batchHeaderLen+len(rec))
	binary.BigEndian.PutUint32(b[offLength:], uint32(batchHeaderLen-12+len(rec)))
	b[offMagic] = 2
	binary.BigEndian.PutUint64(b[27:], uint64(now))
	binary.BigEndian.PutUint64(b[35:], uint64(now))
	binary.BigEndian.PutUint64(b[offProducerID:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[offFirstSequence:], ^uint32(0))
	binary.BigEndian.PutUint32(b[57:], 1)
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := validateProduce(b, DefaultMaxMessageBytes); err != nil {
		t.Fatal(fmt.Errorf("test batch: %w", err))
	}
	return b
}

// TestFetchWaitsForMinBytes: a fetch of one partition waits at the byte
// position that gives it MinBytes (a progress watch), so a produce that
// leaves it short does not answer it and the one that reaches it does; a
// fetch of two partitions waits for MinBytes summed over both.
func TestFetchWaitsForMinBytes(t *testing.T) {
	b, addr, _ := startBroker(t, Config{Replicas: 1}, "mb:2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // so that a record's size is its bytes
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(partition int32, size int) {
		t.Helper()
		r := &kgo.Record{Topic: "mb", Partition: partition, Value: make([]byte, size)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	parked := func(n int) {
		t.Helper()
		for b.fetches.Delayed() != n {
			if ctx.Err() != nil {
				t.Fatalf("%d fetches parked, want %d", b.fetches.Delayed(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	one := dialRaw(t, addr)
	if err := one.send(fetchReq("mb", 0, 0, time.Minute, 1000)); err != nil {
		t.Fatal(err)
	}
	parked(1)
	produce(0, 10) // acks=all with one replica: the high watermark has moved when it returns
	produce(0, 10)
	if n := b.fetches.Delayed(); n != 1 {
		t.Fatalf("after 2 small records, %d fetches wait; want the one still short of MinBytes", n)
	}
	produce(0, 2000)
	got, err := one.recv()
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) < 1000 || p.HighWatermark != 3 {
		t.Fatalf("one-partition fetch: error %d, %d bytes, high watermark %d; want the 3 records", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}

	req := fetchReq("mb", 0, 3, time.Minute, 1000)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 1, 0, 1<<20
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	two := dialRaw(t, addr)
	if err := two.send(req); err != nil {
		t.Fatal(err)
	}
	parked(1)
	produce(0, 600)
	if n := b.fetches.Delayed(); n != 1 {
		t.Fatalf("after 600 bytes on one partition, %d fetches wait; want the one still short", n)
	}
	produce(1, 600)
	got, err = two.recv()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range got.(*kmsg.FetchResponse).Topics[0].Partitions {
		total += len(p.RecordBatches)
	}
	if total < 1000 {
		t.Fatalf("two-partition fetch answered with %d bytes, under its MinBytes", total)
	}
	if s := b.fetches.Stats(); s.Completed != 2 || s.Expired != 0 {
		t.Fatalf("fetch purgatory: %d completed, %d expired; want both fetches completed by the produce that reached MinBytes, not by MaxWait", s.Completed, s.Expired)
	}
}
