package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hugeTagCount is a LeaveGroup v5 of 23 bytes whose first tagged-field
// section claims 2^32-1 fields with no bytes left for them. kmsg before
// v1.15.1 read on past the end, one field at a time, for about 3 s of CPU (over
// 10 s with fuzzing's coverage, where FuzzRequest found it).
var hugeTagCount = func() []byte {
	body := []byte("\x00\x0d\x00\x05\x00\x00\x00\x01\x00\x04test\x00\x01\x01\xe1\x96\xf9lf\x00")
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}()

// TestKmsgStopsAtTheEndOfInput: the kmsg this module builds with is one that
// stops reading tagged fields at the end of the input (v1.15.1 and later), so
// hugeTagCount is refused at once rather than after seconds of a core.
func TestKmsgStopsAtTheEndOfInput(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	for _, m := range info.Deps {
		if m.Path != "github.com/twmb/franz-go/pkg/kmsg" {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		var major, minor, patch int
		if _, err := fmt.Sscanf(m.Version, "v%d.%d.%d", &major, &minor, &patch); err != nil {
			t.Fatalf("kmsg version %q: %v", m.Version, err)
		}
		if slices.Compare([]int{major, minor, patch}, []int{1, 15, 1}) < 0 {
			t.Fatalf("kmsg %s spins on a tag count past the end of a request; keep it at v1.15.1 or later in go.mod", m.Version)
		}
		return
	}
	t.Fatal("kmsg is not among the test binary's dependencies")
}

// TestBadFramesCloseTheConnectionWithALogLine: input that cannot be answered
// closes its connection with a line in the log; the broker goes on serving
// others, and its goroutines end (TestMain checks for leaks).
func TestBadFramesCloseTheConnectionWithALogLine(t *testing.T) {
	_, addr, logs := startBroker(t, Config{Replicas: 1, MaxFrameBytes: 1 << 20}, "t:1")
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 1
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 99 // beyond any version kmsg knows
	for _, tc := range []struct {
		name  string
		bytes []byte
		log   string
	}{
		{"truncated frame", append(binary.BigEndian.AppendUint32(nil, 100), make([]byte, 10)...), "truncated request"},
		{"oversized frame", binary.BigEndian.AppendUint32(nil, 2<<20), "request of 2097152 bytes"},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xffffff00), "request of -256 bytes"},
		{"unknown API key", rekey(frame(metadata, 1), 999), "unknown API key 999"},
		{"unknown version", frame(produce, 1), "version 99"},
		{"truncated body", truncateBody(frame(metadata, 1)), "MetadataRequest"},
		{"tag count of 2^32-1", hugeTagCount, "LeaveGroupRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if tc.name == "truncated frame" {
				nc.(*net.TCPConn).CloseWrite()
			}
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Errorf("read %d bytes, %v; want the connection closed", n, err)
			}
			if !logs.has(tc.log) {
				t.Errorf("no log line containing %q; log: %q", tc.log, logs.lines)
			}
		})
	}
	// And it still serves.
	c := dialRaw(t, addr)
	if _, err := c.do(metadata); err != nil {
		t.Fatalf("after bad input: %v", err)
	}
}

func rekey(f []byte, key int16) []byte {
	binary.BigEndian.PutUint16(f[4:], uint16(key))
	return f
}

// truncateBody cuts a frame's body short but keeps its size field honest.
func truncateBody(f []byte) []byte {
	f = f[:len(f)-2]
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// TestUnservedRequestsGetErrorCodes: requests the broker does not serve are
// answered with the protocol's error codes, and a fetch or produce for a
// partition that does not exist with UNKNOWN_TOPIC_OR_PARTITION, at once.
func TestUnservedRequestsGetErrorCodes(t *testing.T) {
	_, addr, logs := startBroker(t, Config{Replicas: 1}, "t:1")
	c := dialRaw(t, addr)

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	resp, err := c.do(av)
	if err != nil {
		t.Fatal(err)
	}
	if keys := resp.(*kmsg.ApiVersionsResponse).ApiKeys; len(keys) != len(served) {
		t.Errorf("ApiVersions lists %d APIs, the broker serves %d", len(keys), len(served))
	}

	// An ApiVersions newer than served is answered at v0 with
	// UNSUPPORTED_VERSION and the versions served, as Kafka does.
	av = kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	f := frame(av, 7)
	binary.BigEndian.PutUint16(f[6:], 9)
	if _, err := c.Write(f); err != nil {
		t.Fatal(err)
	}
	c.sent[7] = kmsg.NewPtrApiVersionsRequest() // v0, as the answer is
	resp, err = c.recv()
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.ApiKeys) == 0 {
		t.Errorf("ApiVersions v9: error %d with %d keys; want UNSUPPORTED_VERSION and the keys", r.ErrorCode, len(r.ApiKeys))
	}

	end := kmsg.NewPtrEndTxnRequest() // transactions are not served
	end.Version, end.TransactionalID = 1, "tx"
	resp, err = c.do(end)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.EndTxnResponse).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Errorf("EndTxn: error %d, want UNSUPPORTED_VERSION (35)", code)
	}
	if !logs.has("API key 26 version 1 is not served") {
		t.Errorf("no log line for the EndTxn; log: %q", logs.lines)
	}

	for _, name := range []string{"t", "nope"} { // partition 3 of t; topic nope
		start := time.Now()
		resp, err := c.do(fetchReq(name, 3, 0, 10*time.Second, 1))
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("fetch %s-3: error %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", name, code)
		}
		if waited := time.Since(start); waited >= 10*time.Second {
			t.Errorf("fetch %s-3 waited its MaxWait (%v) for a partition that does not exist", name, waited)
		}
	}

	resp, err = c.do(fetchReq("t", 0, 5, 10*time.Second, 1))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch past the log end: error %d, want OFFSET_OUT_OF_RANGE (1)", code)
	}

	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 7, -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "nope"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordBatch(t, "x")
	rt.Partitions = append(rt.Partitions, rp)
	bad := kmsg.NewProduceRequestTopicPartition()
	bad.Records = []byte("not a record batch")
	good := kmsg.NewProduceRequestTopic()
	good.Topic, good.Partitions = "t", []kmsg.ProduceRequestTopicPartition{bad}
	produce.Topics = append(produce.Topics, rt, good)
	resp, err = c.do(produce)
	if err != nil {
		t.Fatal(err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to nope-0: error %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", code)
	}
	if code := pr.Topics[1].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
		t.Errorf("produce of garbage: error %d, want CORRUPT_MESSAGE (2)", code)
	}

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 4
	for _, tc := range []struct {
		name string
		n    int32
	}{{"huge", 1_000_000}, {"bad name!", 1}, {"ok", 2}, {"t", 1}} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = tc.name, tc.n, -1
		create.Topics = append(create.Topics, ct)
	}
	resp, err = c.do(create)
	if err != nil {
		t.Fatal(err)
	}
	want := []int16{kerr.InvalidPartitions.Code, kerr.InvalidTopicException.Code, 0, kerr.TopicAlreadyExists.Code}
	for i, ct := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if ct.ErrorCode != want[i] {
			t.Errorf("CreateTopics %q: error %d, want %d", ct.Topic, ct.ErrorCode, want[i])
		}
	}
}

// TestAnswersInRequestOrder pipelines requests answered later (fetches parked
// until their MaxWait) between requests answered at once, on one connection:
// every answer comes back in the order its request was sent, as the protocol
// requires, whichever goroutine gave it.
func TestAnswersInRequestOrder(t *testing.T) {
	_, addr, _ := startBroker(t, Config{Replicas: 1}, "o:2")
	c := dialRaw(t, addr)
	recvInOrder(t, c, pipelineMixed(t, c, "o"))
}

// pipelineMixed sends 30 requests on c without reading an answer: fetches of
// topic's partitions 0 and 1 that park until their MaxWait (50 ms and more),
// and Metadata and acks=1 produces, answered at once, in turn. It returns the
// requests' API keys in the order sent.
func pipelineMixed(t *testing.T, c *rawConn, topic string) []int16 {
	t.Helper()
	var want []int16
	for i := range 30 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = fetchReq(topic, int32(i%2), 0, time.Duration(50+i)*time.Millisecond, 1) // parks, then its MaxWait
		case 1:
			m := kmsg.NewPtrMetadataRequest() // at once
			m.Version = 4
			req = m
		default:
			req = produceReq(t, topic, 1, 1, time.Second, "x") // acks=1: at once
		}
		want = append(want, req.Key())
		if err := c.send(req); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// recvInOrder reads an answer for each key in want, and fails unless each
// answers the request of that key sent in that place.
func recvInOrder(t *testing.T, c *rawConn, want []int16) []kmsg.Response {
	t.Helper()
	var got []kmsg.Response
	for i, key := range want {
		resp, err := c.recv()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if resp.Key() != key {
			t.Fatalf("answer %d is to API key %d; the request sent %d-th was key %d", i, resp.Key(), i, key)
		}
		got = append(got, resp)
	}
	return got
}
