package main

import (
	"strconv"
)

// The reply side of the Redis protocol: RESP2, or RESP3 once a client has
// said HELLO 3. Replies are appended to a connection's output buffer, which
// its goroutine writes out after each batch of commands.

// replies is a connection's output buffer and the protocol it speaks.
type replies struct {
	out  []byte
	resp int // 2 or 3
}

func (w *replies) ok()                 { w.out = append(w.out, "+OK\r\n"...) }
func (w *replies) status(s string)     { w.out = append(append(append(w.out, '+'), s...), "\r\n"...) }
func (w *replies) err(msg string)      { w.out = append(append(append(w.out, '-'), msg...), "\r\n"...) }
func (w *replies) int(n int64)         { w.out = strconv.AppendInt(append(w.out, ':'), n, 10); w.crlf() }
func (w *replies) crlf()               { w.out = append(w.out, '\r', '\n') }
func (w *replies) arrayLen(n int)      { w.header('*', n) }
func (w *replies) bulkString(s string) { w.header('$', len(s)); w.out = append(w.out, s...); w.crlf() }

func (w *replies) bulk(b []byte) {
	w.header('$', len(b))
	w.out = append(w.out, b...)
	w.crlf()
}

func (w *replies) header(kind byte, n int) {
	w.out = strconv.AppendInt(append(w.out, kind), int64(n), 10)
	w.crlf()
}

// nullBulk is a missing value: RESP2's $-1, RESP3's _.
func (w *replies) nullBulk() {
	if w.resp == 3 {
		w.out = append(w.out, "_\r\n"...)
		return
	}
	w.out = append(w.out, "$-1\r\n"...)
}

// nullArray is a missing array (a blocking pop that timed out): RESP2's *-1,
// RESP3's _.
func (w *replies) nullArray() {
	if w.resp == 3 {
		w.out = append(w.out, "_\r\n"...)
		return
	}
	w.out = append(w.out, "*-1\r\n"...)
}

// mapLen starts a map of n pairs: RESP3's %n, RESP2's array of 2n.
func (w *replies) mapLen(n int) {
	if w.resp == 3 {
		w.header('%', n)
		return
	}
	w.header('*', 2*n)
}

// bulks is an array of bulk strings.
func (w *replies) bulks(bs [][]byte) {
	w.arrayLen(len(bs))
	for _, b := range bs {
		w.bulk(b)
	}
}

// Redis's error texts, as the tests compare them.
const (
	errWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errSyntax        = "ERR syntax error"
	errNotInteger    = "ERR value is not an integer or out of range"
	errNoSuchKey     = "ERR no such key"
	errIndexRange    = "ERR index out of range"
	errTimeoutNeg    = "ERR timeout is negative"
	errTimeoutFloat  = "ERR timeout is not a float or out of range"
	errTimeoutRange  = "ERR timeout is out of range"
	errNotPositive   = "ERR value is out of range, must be positive"
	errExecAbort     = "EXECABORT Transaction discarded because of previous errors."
	errNestedMulti   = "ERR MULTI calls can not be nested"
	errExecNoMulti   = "ERR EXEC without MULTI"
	errDiscardNoMult = "ERR DISCARD without MULTI"
	errWatchInMulti  = "ERR WATCH inside MULTI is not allowed"
	errUnblocked     = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
	errShutdown      = "ERR the server is shutting down: blocked clients are answered, then closed"
)

// errWrongArgs is Redis's reply to a command given the wrong number of args.
func errWrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}
