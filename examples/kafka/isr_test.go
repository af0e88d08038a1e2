package main

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestISRInFakeTime: with min.insync.replicas 2 of 3, stalled followers
// leave the ISR once they have not caught up for replica.lag.time.max.ms
// (checked every half of it), and Metadata says so. A produce parked for
// them is then answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, its records held by
// the leader alone; a new acks=all produce is refused NOT_ENOUGH_REPLICAS with
// nothing appended, while acks=1 goes on. Resumed, the followers catch up,
// come back, and acks=all is acknowledged again.
func TestISRInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lag = 10 * time.Second
		b, err := NewBroker(Config{Replicas: 3, MinInsyncReplicas: 2, ReplicaLagMax: lag, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Error(err)
			}
		}()
		if _, err := b.CreateTopic("t", 1); err != nil {
			t.Fatal(err)
		}
		l := b.partition("t", 0)
		produce := func(acks int16, timeout time.Duration) answers {
			a := answers(make(chan kmsg.Response, 1))
			b.handleProduce(produceReq(t, "t", 0, acks, timeout, "x"), a.reply)
			return a
		}
		result := func(a answers, what string) kmsg.ProduceResponseTopicPartition {
			t.Helper()
			return a.next(t, what).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		}
		isr := func() []int32 { _, in := l.replicas(); return in }

		if p := result(produce(-1, time.Minute), "first produce"); p.ErrorCode != 0 || len(isr()) != 3 {
			t.Fatalf("with every follower in sync: error %d, ISR %v", p.ErrorCode, isr())
		}

		b.StallFollowers(true)
		time.Sleep(time.Second) // the followers' fetches under way end; none follows
		stalled := time.Now()
		parked := produce(-1, time.Minute)
		parked.none(t, "produce while the followers are stalled")
		// A follower last caught up at its fetch before the stall; it leaves
		// the ISR at the first check more than lag later: within lag +
		// lag/2 of the stall, never sooner than lag.
		time.Sleep(lag - time.Second)
		if len(isr()) != 3 {
			t.Fatalf("%v after the stall, under replica.lag.time.max.ms: ISR %v", time.Since(stalled), isr())
		}
		for len(isr()) != 1 {
			if time.Since(stalled) > lag+lag/2 {
				t.Fatalf("%v after the stall: ISR %v; want the leader alone", time.Since(stalled), isr())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if p := result(parked, "parked produce once the ISR shrank"); p.ErrorCode != kerr.NotEnoughReplicasAfterAppend.Code {
			t.Errorf("parked produce: error %d, want NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)", p.ErrorCode)
		}
		server, client := net.Pipe()
		defer client.Close()
		defer server.Close()
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.Version = 12
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("t")
		mreq.Topics = append(mreq.Topics, mt)
		m := b.metadata(newConn(b, server), mreq).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
		if len(m.Replicas) != 3 || len(m.ISR) != 1 {
			t.Errorf("Metadata: replicas %v, ISR %v; want 3 replicas, the leader alone in sync", m.Replicas, m.ISR)
		}
		_, _, leo := l.offsets()
		if p := result(produce(-1, time.Minute), "acks=all below min.insync.replicas"); p.ErrorCode != kerr.NotEnoughReplicas.Code || p.BaseOffset != -1 {
			t.Errorf("acks=all with the ISR below its minimum: error %d, base offset %d; want NOT_ENOUGH_REPLICAS (19), -1", p.ErrorCode, p.BaseOffset)
		}
		if _, _, now := l.offsets(); now != leo {
			t.Errorf("a refused produce was appended: log end %d, was %d", now, leo)
		}
		if p := result(produce(1, time.Minute), "acks=1"); p.ErrorCode != 0 {
			t.Errorf("acks=1 with the ISR below its minimum: error %d, want 0", p.ErrorCode)
		}

		b.StallFollowers(false)
		for len(isr()) != 3 {
			if time.Since(stalled) > time.Minute {
				t.Fatalf("the resumed followers did not come back: ISR %v", isr())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if p := result(produce(-1, time.Minute), "acks=all after the followers came back"); p.ErrorCode != 0 {
			t.Errorf("acks=all with the ISR whole again: error %d", p.ErrorCode)
		}
	})
}
