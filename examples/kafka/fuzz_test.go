package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequest feeds arbitrary frames to the parser and, where one parses, to
// its handler, on a broker with a topic; no input may panic, every served
// request is answered exactly once, at once or by its MaxWait or timeout
// (both 0 here, so at once), and every batch stored is well formed
// (wellFormed, franz-go's reading of it). Topics are only validated, not created, so that
// the broker stays the same size from input to input.
func FuzzRequest(f *testing.F) {
	for _, req := range []kmsg.Request{
		fetchReq("t", 0, 0, 0, 1),
		fetchReq("t", 1, -5, 0, 1<<30),
		func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Version, r.Acks = 7, -1
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = recordBatch(&testing.T{}, "seed")
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}(),
		kmsg.NewPtrMetadataRequest(),
		kmsg.NewPtrApiVersionsRequest(),
		kmsg.NewPtrListOffsetsRequest(),
		kmsg.NewPtrInitProducerIDRequest(),
		kmsg.NewPtrCreateTopicsRequest(),
		func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Version, r.Group, r.SessionTimeoutMillis, r.ProtocolType = 3, "g", 10_000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
			return r
		}(),
		kmsg.NewPtrSyncGroupRequest(),
		kmsg.NewPtrHeartbeatRequest(),
		kmsg.NewPtrLeaveGroupRequest(),
		kmsg.NewPtrOffsetCommitRequest(),
		kmsg.NewPtrOffsetFetchRequest(),
		kmsg.NewPtrFindCoordinatorRequest(),
		kmsg.NewPtrListGroupsRequest(),
		kmsg.NewPtrDescribeGroupsRequest(),
	} {
		if req.GetVersion() == 0 {
			req.SetVersion(min(req.MaxVersion(), served[kmsg.Key(req.Key())].max))
		}
		f.Add(frame(req, 1)[4:])
	}
	b, err := NewBroker(Config{Replicas: 2, InitialRebalanceDelay: -1, Logf: func(string, ...any) {}})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := b.CreateTopic("t", 2); err != nil {
		f.Fatal(err)
	}
	defer b.Shutdown(f.Context())
	server, client := net.Pipe()
	defer client.Close()
	c := newConn(b, server)
	checked := map[*partitionLog]int{} // batches found well formed so far
	f.Fuzz(func(t *testing.T, body []byte) {
		defer storedAreWellFormed(t, b, checked)
		if len(body) < 8 {
			return
		}
		h, req, err := parse(body)
		if err != nil {
			return
		}
		s, ok := served[h.key]
		if !ok || h.version < s.min || h.version > s.max {
			unsupported(h, req)
			return
		}
		// Answers must be prompt: no input may park for long.
		switch r := req.(type) {
		case *kmsg.FetchRequest:
			r.MaxWaitMillis = min(r.MaxWaitMillis, 0)
		case *kmsg.ProduceRequest:
			r.TimeoutMillis = min(r.TimeoutMillis, 0)
		case *kmsg.CreateTopicsRequest:
			r.ValidateOnly = true // the broker would grow with every input
		case *kmsg.JoinGroupRequest:
			r.RebalanceTimeoutMillis = min(r.RebalanceTimeoutMillis, 0) // a join waits at most this long
			if r.Version == 0 {
				r.SessionTimeoutMillis = min(r.SessionTimeoutMillis, 6000) // and at v0, this
			}
		}
		answers := make(chan kmsg.Response, 2)
		s.handle(b, c, req, func(r kmsg.Response) { answers <- r })
		select {
		case r := <-answers:
			if r != nil {
				r.SetVersion(h.version)
				r.AppendTo(binary.BigEndian.AppendUint32(nil, 0)) // encodable
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%T v%d was not answered", req, h.version)
		}
		select {
		case <-answers:
			t.Fatalf("%T v%d was answered twice", req, h.version)
		default:
		}
	})
}

// storedAreWellFormed checks the batches stored in topic t since the last
// call: each, with its base offset as the client sent it (0), is well formed.
func storedAreWellFormed(t *testing.T, b *Broker, checked map[*partitionLog]int) {
	for i := int32(0); ; i++ {
		l := b.partition("t", i)
		if l == nil {
			return
		}
		l.mu.Lock()
		var batches [][]byte
		for i := checked[l]; i < l.batches.len(); i++ {
			batches = append(batches, bytes.Clone(l.batches.bytes(i)))
		}
		checked[l] = l.batches.len()
		l.mu.Unlock()
		for _, sent := range batches {
			offset := batchBase(sent)
			binary.BigEndian.PutUint64(sent[offBaseOffset:], 0)
			if err := wellFormed(sent); err != nil {
				t.Fatalf("stored at %v offset %d: %v", l, offset, err)
			}
		}
	}
}
