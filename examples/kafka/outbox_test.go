package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestASlowReaderGetsEveryAnswerInOrder: a client that sends many fetches
// whose answers outgrow the socket's buffers, and reads none until it has
// sent them all, gets every answer whole and in request order. The writes
// the socket could not take at once went to the connection's writer
// goroutine, and the reader waited at maxInFlight answers owed instead of
// reading on.
func TestASlowReaderGetsEveryAnswerInOrder(t *testing.T) {
	b, addr, _ := startBroker(t, Config{Replicas: 1}, "big:1")
	value := strings.Repeat("v", 256<<10)
	c := dialRaw(t, addr)
	if resp, err := c.do(produceReq(t, "big", 0, 1, time.Second, value)); err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %v %+v", err, resp)
	}
	const n = 2 * maxInFlight // 32 MiB of answers
	var want []int16
	for i := range n {
		var req kmsg.Request = fetchReq("big", 0, 0, 0, 1)
		if i%5 == 4 {
			m := kmsg.NewPtrMetadataRequest()
			m.Version = 4
			req = m
		}
		want = append(want, req.Key())
		if err := c.send(req); err != nil {
			t.Fatal(err)
		}
	}
	// Reading nothing yet, the client fills the socket: a write goes to the
	// writer, and the broker's reader stops at maxInFlight answers owed.
	waitFor(t, func() bool { h, owed := outboxes(b); return h > 0 && owed == maxInFlight })
	for i, resp := range recvInOrder(t, c, want) {
		if f, ok := resp.(*kmsg.FetchResponse); ok {
			if got := len(f.Topics[0].Partitions[0].RecordBatches); got < len(value) {
				t.Fatalf("answer %d: a fetch of %d bytes; the record alone has %d", i, got, len(value))
			}
		}
	}
}

// outboxes sums, over b's connections, the writes handed to the writer and
// the answers owed (slots taken).
func outboxes(b *Broker) (handoffs, owed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		c.mu.Lock()
		handoffs += c.handoffs
		c.mu.Unlock()
		owed += len(c.slots)
	}
	return handoffs, owed
}

// TestAClientThatLeavesWithAnswersOwed: a client that sends more fetches
// than maxInFlight, each answered with more than the socket holds, and
// leaves without reading while the broker's writer waits for it to read and
// its reader for a slot, costs the broker nothing once it is gone: the
// failed write frees the reader, and both end on their own, before any
// Shutdown (goleak, in TestMain, finds no goroutine left).
func TestAClientThatLeavesWithAnswersOwed(t *testing.T) {
	b, err := NewBroker(Config{Replicas: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := createTopics(b, "big:1"); err != nil {
		t.Fatal(err)
	}
	addr, served := serveLoopback(t, b)
	c := dialRaw(t, addr)
	if _, err := c.do(produceReq(t, "big", 0, 1, time.Second, strings.Repeat("v", 256<<10))); err != nil {
		t.Fatal(err)
	}
	for range 2 * maxInFlight {
		if err := c.send(fetchReq("big", 0, 0, 0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { h, owed := outboxes(b); return h > 0 && owed == maxInFlight })
	c.Close() // with the writer waiting for the client to read, and the reader for a slot
	waitFor(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.conns) == 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestAnswersInRequestOrderOverAPipe: on a connection with no file
// descriptor (net.Pipe), where no write can be tried without blocking,
// every answer goes through the writer, still in request order, answers
// given later (fetches parked until their MaxWait) among answers given at
// once.
func TestAnswersInRequestOrderOverAPipe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 1})
		if _, err := b.CreateTopic("o", 2); err != nil {
			t.Fatal(err)
		}
		server, client := net.Pipe()
		defer client.Close()
		sc := newConn(b, server)
		b.mu.Lock()
		b.conns[sc] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go sc.serve()
		c := &rawConn{Conn: client, r: bufio.NewReader(client), sent: map[int32]kmsg.Request{}}
		recvInOrder(t, c, pipelineMixed(t, c, "o"))
		if h, _ := outboxes(b); h == 0 {
			t.Errorf("no write was handed to the writer over a pipe")
		}
	})
}

// TestAnAnswerHoldsItsSlotUntilWritten: an answer given while the writer
// waits for the client to read an earlier one keeps its slot until it is
// written itself, so that maxInFlight bounds the answers not yet written,
// not only those not yet encoded.
func TestAnAnswerHoldsItsSlotUntilWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, client := net.Pipe() // no file descriptor: every write is the writer's
		defer client.Close()
		var o outbox
		o.init(server)
		wrote := make(chan struct{})
		go func() { defer close(wrote); o.write() }()
		h := header{key: kmsg.ApiVersions, correlation: 1}
		first, second := o.enqueue(h), o.enqueue(h)
		first.reply(kmsg.NewPtrApiVersionsResponse())
		synctest.Wait() // the writer waits for the client to read the first
		second.reply(kmsg.NewPtrApiVersionsResponse())
		readFrame(t, client)
		synctest.Wait() // the first is written; the writer waits on the second
		if got := len(o.slots); got != 1 {
			t.Errorf("with one answer written and one being written, %d slots are taken; want 1", got)
		}
		readFrame(t, client)
		synctest.Wait()
		if got := len(o.slots); got != 0 {
			t.Errorf("with both answers written, %d slots are taken; want 0", got)
		}
		o.readEnded()
		<-wrote
	})
}

// readFrame reads one size-prefixed frame from r.
func readFrame(t *testing.T, r io.Reader) {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, binary.BigEndian.Uint32(size[:]))); err != nil {
		t.Fatal(err)
	}
}
