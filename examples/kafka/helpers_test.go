package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/crashout"
)

func TestMain(m *testing.M) {
	crashout.Keep() // a fuzz worker's crash, kept where .ci/run can print it
	if os.Getenv("KAFKA_EXAMPLE_RUN_MAIN") == "1" {
		main() // the SIGTERM test runs the command as a child process
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// logBook collects the broker's log lines for a test to read.
type logBook struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBook) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// has waits up to 5 s for a log line containing s.
func (l *logBook) has(s string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, s) {
				l.mu.Unlock()
				return true
			}
		}
		l.mu.Unlock()
	}
	return false
}

// startBroker serves a broker on a loopback port until the test ends.
func startBroker(t *testing.T, cfg Config, topics ...string) (*Broker, string, *logBook) {
	t.Helper()
	logs := new(logBook)
	if cfg.Logf == nil {
		cfg.Logf = logs.logf
	}
	b, err := NewBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range topics {
		if err := createTopics(b, spec); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return b, ln.Addr().String(), logs
}

// rawConn speaks the protocol by hand, for requests no client would send and
// for pipelining: kmsg encodes the bodies, the test frames them.
type rawConn struct {
	net.Conn
	r    *bufio.Reader
	corr int32
	sent map[int32]kmsg.Request
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{Conn: nc, r: bufio.NewReader(nc), sent: map[int32]kmsg.Request{}}
}

// frame encodes req with a request header (v1, or v2 if flexible).
func frame(req kmsg.Request, corr int32) []byte {
	buf := []byte{0, 0, 0, 0}
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, 4)
	buf = append(buf, "test"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

func (c *rawConn) send(req kmsg.Request) error {
	c.corr++
	c.sent[c.corr] = req
	_, err := c.Write(frame(req, c.corr))
	return err
}

// recv reads the next response, which must answer the oldest request sent.
func (c *rawConn) recv() (kmsg.Response, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, err
	}
	corr := int32(binary.BigEndian.Uint32(body))
	req, ok := c.sent[corr]
	if !ok {
		return nil, fmt.Errorf("response to correlation id %d, which was not sent", corr)
	}
	delete(c.sent, corr)
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:] // no tagged fields in our responses' headers
	}
	return resp, resp.ReadFrom(body)
}

func (c *rawConn) do(req kmsg.Request) (kmsg.Response, error) {
	if err := c.send(req); err != nil {
		return nil, err
	}
	return c.recv()
}

// fetchReq is a fetch of one partition from offset.
func fetchReq(topic string, partition int32, offset int64, maxWait time.Duration, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = minBytes, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceReq is a produce (v7) of one record, value, to partition of topic.
func produceReq(t *testing.T, topic string, partition int32, acks int16, timeout time.Duration, value string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, acks, int32(timeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, recordBatch(t, value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceNumbered produces records "r<from>" to "r<to-1>" to topic, record i
// to partition i%partitions, one at a time, each acknowledged.
func produceNumbered(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partitions, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "r%d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
