package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one client connection. Its reader parses requests and hands each to
// its handler; the handler answers through a callback, at once or later (from
// a purgatory's OnComplete); the answers go out in the order the requests
// came, as the protocol requires (outbox.go). Only the request and response
// headers are framed here; kmsg encodes and decodes every body.
type conn struct {
	b *Broker
	// clientID is the client id of the request being handled; only the
	// reader, which runs the handlers, reads or writes it.
	clientID string
	outbox   // and the connection itself, nc
}

// host is the client's address without its port, as group members are
// described.
func (c *conn) host() string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return c.nc.RemoteAddr().String()
	}
	return "/" + host
}

func newConn(b *Broker, nc net.Conn) *conn {
	c := &conn{b: b}
	c.outbox.init(nc)
	return c
}

// serve runs the reader here and the writer beside it, and returns when both
// have ended.
func (c *conn) serve() {
	defer c.b.wg.Done()
	defer c.b.forget(c)
	written := make(chan struct{})
	go func() { c.write(); close(written) }()
	err := c.read()
	c.readEnded()
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.b.cfg.Logf("kafka: %v: closing the connection: %v", c.nc.RemoteAddr(), err)
	}
	<-written
	c.nc.Close()
}

// drain stops the reader; the writer then sends what is pending and closes.
func (c *conn) drain() {
	if tc, ok := c.nc.(interface{ CloseRead() error }); ok {
		tc.CloseRead()
		return
	}
	c.nc.SetReadDeadline(aLongTimeAgo)
}

// header is a request header (v1, or v2 with tagged fields when the request's
// version is flexible).
type header struct {
	key         kmsg.Key
	version     int16
	correlation int32
	flexible    bool
	clientID    string
}

// read reads requests until the connection ends or a request cannot be
// served; the error says why, for the log.
func (c *conn) read() error {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return err
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > c.b.cfg.MaxFrameBytes {
			return fmt.Errorf("request of %d bytes: want 8 to %d", n, c.b.cfg.MaxFrameBytes)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(r, frame); err != nil {
			return fmt.Errorf("truncated request: %w", err)
		}
		h, req, err := parse(frame)
		if err != nil {
			return err
		}
		s, ok := served[h.key]
		if !ok || h.version < s.min || h.version > s.max {
			resp, err := unsupported(h, req)
			if err != nil {
				return err
			}
			if h.key == kmsg.ApiVersions { // a client's first guess: the answer names the versions served
				h.version, h.flexible = 0, false // so that any client can read it
			} else {
				c.b.cfg.Logf("kafka: %v: API key %d version %d is not served here; answered UNSUPPORTED_VERSION", c.nc.RemoteAddr(), h.key, h.version)
			}
			if err := c.answer(h, func(reply func(kmsg.Response)) { reply(resp) }); err != nil {
				return err
			}
			continue
		}
		c.clientID = h.clientID
		if err := c.answer(h, func(reply func(kmsg.Response)) { s.handle(c.b, c, req, reply) }); err != nil {
			return err
		}
	}
}

// answer runs handle, which replies through the callback it is given (nil:
// no response); a second reply is ignored. The answer takes its place in the
// outbox first, so that it goes out in request order whoever gives it. The
// reader waits here while maxInFlight answers are still to be written. If
// handle panics (a bug: input is checked before it), the request gets no
// answer, and the error closes the connection instead of the broker.
func (c *conn) answer(h header, handle func(reply func(kmsg.Response))) (err error) {
	a := c.enqueue(h)
	defer func() {
		if r := recover(); r != nil {
			a.reply(nil)
			err = fmt.Errorf("API key %d version %d: handler panicked: %v\n%s", h.key, h.version, r, debug.Stack())
		}
	}()
	handle(a.reply)
	return nil
}

// framed is an answer with its request's header, for the writer.
type framed struct {
	kmsg.Response
	h header
}

// appendTo appends the answer as a frame: its size, the response header
// (v0, or v1 with no tagged fields when the version is flexible) and the body.
func (f *framed) appendTo(buf []byte) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(f.h.correlation))
	if f.h.flexible && f.h.key != kmsg.ApiVersions { // ApiVersions answers with header v0 always
		buf = append(buf, 0)
	}
	buf = f.Response.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf
}

// parse reads a request's header and body.
func parse(frame []byte) (header, kmsg.Request, error) {
	h := header{
		key:         kmsg.Key(binary.BigEndian.Uint16(frame[0:])),
		version:     int16(binary.BigEndian.Uint16(frame[2:])),
		correlation: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	req := h.key.Request()
	if req == nil {
		return h, nil, fmt.Errorf("unknown API key %d (version %d)", h.key, h.version)
	}
	if h.version < 0 || h.version > req.MaxVersion() {
		if h.key == kmsg.ApiVersions {
			return h, req, nil // ApiVersions: answered with UNSUPPORTED_VERSION
		}
		return h, nil, fmt.Errorf("%T version %d: kmsg knows up to %d", req, h.version, req.MaxVersion())
	}
	req.SetVersion(h.version)
	h.flexible = req.IsFlexible()
	body, err := skipHeader(frame[8:], h.flexible, &h.clientID)
	if err != nil {
		return h, nil, err
	}
	if err := req.ReadFrom(body); err != nil {
		return h, nil, fmt.Errorf("%T v%d: %w", req, h.version, err)
	}
	return h, req, nil
}

// skipHeader reads the client id into clientID and skips it and, in a
// flexible header, its tagged fields.
func skipHeader(b []byte, flexible bool, clientID *string) ([]byte, error) {
	if len(b) < 2 {
		return nil, errTruncated
	}
	if n := int16(binary.BigEndian.Uint16(b)); n > 0 {
		if len(b) < 2+int(n) {
			return nil, errTruncated
		}
		*clientID = string(b[2 : 2+int(n)])
		b = b[2+int(n):]
	} else {
		b = b[2:]
	}
	if !flexible {
		return b, nil
	}
	tags, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errTruncated
	}
	b = b[n:]
	for range tags {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errTruncated
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, errTruncated
		}
		b = b[n+int(size):]
	}
	return b, nil
}

var errTruncated = errors.New("truncated request header")

// unsupported answers a request this broker does not serve, at a version it
// does not serve: ApiVersions at v0 with UNSUPPORTED_VERSION (as Kafka does,
// so that the client retries at a version it names), any other request with
// UNSUPPORTED_VERSION in its top-level error code if it has one. A request
// with nowhere to put the error is refused with an error, for the log.
func unsupported(h header, req kmsg.Request) (kmsg.Response, error) {
	if h.key == kmsg.ApiVersions {
		resp := apiVersions(req).(*kmsg.ApiVersionsResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	resp := req.ResponseKind()
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(kerr.UnsupportedVersion.Code))
		return resp, nil
	}
	return nil, fmt.Errorf("%T v%d is not served here and its response has no error code to say so", req, h.version)
}
