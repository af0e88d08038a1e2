package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// The request side of the Redis protocol (RESP): a reader that parses
// commands out of a connection's query buffer as bytes arrive, with Redis
// 7.0's limits and error texts (networking.c's processInlineBuffer and
// processMultibulkBuffer). It keeps its place between reads, so a command
// that arrives in pieces is parsed once, not again at every read, and a big
// bulk is read straight into an array of its own size.

const (
	// inlineMax is Redis's PROTO_INLINE_MAX_SIZE: the longest inline
	// command, and the longest header line of a multibulk.
	inlineMax = 64 * 1024
	// bigArg is Redis's PROTO_MBULK_BIG_ARG: a bulk at least this long is
	// read into its own array.
	bigArg = 32 * 1024
	// minRead is the least room a read is given.
	minRead = 16 * 1024
)

// protocolError is a malformed request: Redis answers it with its text and
// closes the connection.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "ERR Protocol error: " + e.msg }

// errQueryBufferLimit is a client whose query buffer passed
// client-query-buffer-limit: Redis closes its connection without an answer.
var errQueryBufferLimit = errors.New("closing client that reached max query buffer length")

// limits are the reader's bounds, from the server's config.
type limits struct {
	maxBulk  int64 // proto-max-bulk-len
	maxQuery int64 // client-query-buffer-limit
}

// reader parses commands from the bytes a connection reads. A read goes into
// space(); read(n) then returns the commands it completed, which, with their
// args, stay valid until the next space(). Not safe for concurrent use.
type reader struct {
	lim   *atomic.Pointer[limits] // the server's, which CONFIG SET changes
	buf   []byte                  // buf[off:] read and not yet parsed
	off   int
	argc  int      // args the multibulk under way still needs; 0: none under way
	bulk  int64    // length of the bulk being read; -1: its $ line comes next
	args  [][]byte // the command under way's args; args[:owned] are copies of their own
	owned int
	held  int64  // bytes args[:owned] hold, counted against the query buffer limit
	big   []byte // a big bulk being read into its own array, with its \r\n
	want  int    // the length big will have: the bulk and its \r\n
	// argv backs the args of the commands a read completes: each
	// multibulk's are carved from it, and it is used again from its start
	// once they have run (space), so that a command's args cost no
	// allocation of their own.
	argv [][]byte
	cmds [][][]byte // read's result, used again by the next read
	// mapped are the arrays of big bulks mapped off the heap (bigbulk.go),
	// unmapped once their commands have run.
	mapped [][]byte
}

func newReader(lim *atomic.Pointer[limits]) *reader { return &reader{lim: lim, bulk: -1} }

// space returns where the next read puts its bytes. A bulk of offHeapMin or
// more is read into an array mapped whole (bigbulk.go). A shorter big bulk's
// array, or one that could not be mapped, grows on the heap as its bytes
// come, doubling from what first came, so that a client that only announces
// a big bulk makes the server allocate nothing much; once an eighth of it
// has come, to its whole length at once.
func (r *reader) space() []byte {
	if r.argc == 0 { // no args under way: those carved so far have run
		clear(r.argv)
		r.argv = r.argv[:0]
		r.freeAll()
	}
	if r.big != nil {
		if len(r.big) == cap(r.big) {
			n := min(2*cap(r.big), r.want)
			if 8*len(r.big) >= r.want {
				n = r.want
			}
			nb := make([]byte, len(r.big), n)
			copyInPieces(nb, r.big)
			r.big = nb
		}
		return r.big[len(r.big):cap(r.big)]
	}
	if r.off > 0 { // parsed: the commands it held have run
		n := copy(r.buf, r.buf[r.off:])
		r.buf, r.off = r.buf[:n], 0
	}
	if cap(r.buf)-len(r.buf) < minRead {
		nb := make([]byte, len(r.buf), max(2*cap(r.buf), len(r.buf)+minRead))
		copy(nb, r.buf)
		r.buf = nb
	}
	return r.buf[len(r.buf):cap(r.buf)]
}

// copyInPieces copies src to dst a few MiB at a time: a copy is not
// preemptible, and one of hundreds of MiB into memory not yet touched held a
// P for most of a second, the other clients' commands waiting behind it.
func copyInPieces(dst, src []byte) {
	const piece = 4 << 20
	for len(src) > piece {
		copy(dst, src[:piece])
		dst, src = dst[piece:], src[piece:]
	}
	copy(dst, src)
}

// read takes the n bytes just read into space's slice and returns the
// commands they complete. An error is final: a *protocolError to answer, or
// errQueryBufferLimit, which refuses what the read brought, as Redis checks
// its query buffer before it parses.
func (r *reader) read(n int) (cmds [][][]byte, err error) {
	clear(r.cmds)
	cmds = r.cmds[:0]
	defer func() { r.cmds = cmds }()
	if r.big != nil {
		r.big = r.big[:len(r.big)+n]
	} else {
		r.buf = r.buf[:len(r.buf)+n]
	}
	if err := r.checkLimit(); err != nil {
		return nil, err
	}
	if r.big != nil {
		if len(r.big) < r.want {
			return nil, nil
		}
		r.args = append(r.args, r.big[:len(r.big)-2])
		r.owned, r.held = r.owned+1, r.held+int64(len(r.big))
		r.big, r.bulk, r.argc = nil, -1, r.argc-1
		if r.argc == 0 {
			cmds = append(cmds, r.done())
		}
	}
	cmds, err = r.parse(cmds)
	r.own()
	return cmds, err
}

// checkLimit reports a query buffer over client-query-buffer-limit: what is
// read and not yet run, with the args of the command under way.
func (r *reader) checkLimit() error {
	if int64(len(r.buf)-r.off)+r.held+int64(len(r.big)) > r.lim.Load().maxQuery {
		return errQueryBufferLimit
	}
	return nil
}

// own copies the args of the command under way that still point into buf,
// which the next space() moves.
func (r *reader) own() {
	for ; r.owned < len(r.args); r.owned++ {
		r.args[r.owned] = bytes.Clone(r.args[r.owned])
		r.held += int64(len(r.args[r.owned]))
	}
}

// done returns the command under way, complete, and starts the next.
func (r *reader) done() [][]byte {
	cmd := r.args
	r.args, r.owned, r.held, r.bulk = nil, 0, 0, -1
	return cmd
}

// parse appends to cmds the commands complete in buf[off:].
func (r *reader) parse(cmds [][][]byte) ([][][]byte, error) {
	for {
		if r.argc == 0 {
			if r.off == len(r.buf) {
				return cmds, nil
			}
			var cmd [][]byte
			var more bool
			var err error
			if r.buf[r.off] == '*' {
				more, err = r.header()
			} else {
				cmd, more, err = r.inline()
			}
			if err != nil || !more {
				return cmds, err
			}
			if cmd != nil {
				cmds = append(cmds, cmd)
			}
			continue
		}
		more, err := r.nextBulk()
		if err != nil || !more {
			return cmds, err
		}
		if r.argc == 0 {
			cmds = append(cmds, r.done())
		}
	}
}

// line returns the header line at off, up to its \r, and where the line
// after it starts; ok false if it is not all read yet. tooBig is the error
// for a line longer than inlineMax.
func (r *reader) line(tooBig string) (line []byte, next int, ok bool, err error) {
	rest := r.buf[r.off:]
	cr := bytes.IndexByte(rest, '\r')
	switch {
	case cr > inlineMax, cr < 0 && len(rest) > inlineMax:
		// Too long, whether its end has come or not: so a line is
		// refused or not whatever pieces it comes in (as inline's).
		return nil, 0, false, &protocolError{tooBig}
	case cr < 0:
		return nil, 0, false, nil
	case cr+1 >= len(rest): // the \n is yet to come
		return nil, 0, false, nil
	}
	return rest[:cr], r.off + cr + 2, true, nil
}

// header parses a multibulk's *N line.
func (r *reader) header() (more bool, err error) {
	line, next, ok, err := r.line("too big mbulk count string")
	if !ok {
		return false, err
	}
	n, ok := parseInt(line[1:])
	if !ok || n > math.MaxInt32 {
		return false, &protocolError{"invalid multibulk length"}
	}
	r.off = next
	if n > 0 {
		r.argc, r.bulk = int(n), -1
		r.args = r.carve(int(min(n, 1024)))
	}
	return true, nil
}

// carve returns room for n args from argv, empty: a command of more args
// than it was given grows out of argv by append, as any slice.
func (r *reader) carve(n int) [][]byte {
	if cap(r.argv)-len(r.argv) < n {
		r.argv = make([][]byte, 0, max(256, n))
	}
	from := len(r.argv)
	r.argv = r.argv[:from+n]
	return r.argv[from : from : from+n]
}

// nextBulk parses the next bulk of the multibulk under way: its $N line, or
// its body.
func (r *reader) nextBulk() (more bool, err error) {
	if r.bulk < 0 {
		if r.off == len(r.buf) {
			return false, nil
		}
		line, next, ok, err := r.line("too big bulk count string")
		if !ok {
			return false, err
		}
		if c := r.buf[r.off]; c != '$' { // line may be empty: "\r" is the byte then
			return false, &protocolError{fmt.Sprintf("expected '$', got '%c'", c)}
		}
		n, ok := parseInt(line[1:])
		if !ok || n < 0 || n > r.lim.Load().maxBulk {
			return false, &protocolError{"invalid bulk length"}
		}
		r.off, r.bulk = next, n
		if n >= bigArg && int64(len(r.buf)-r.off) < n+2 {
			r.want = int(n + 2)
			if r.big = r.reserve(r.want); r.big == nil {
				r.big = make([]byte, 0, max(min(r.want, 1<<20), len(r.buf)-r.off))
			}
			r.big = append(r.big, r.buf[r.off:]...)
			r.off = len(r.buf)
			return false, nil
		}
	}
	if int64(len(r.buf)-r.off) < r.bulk+2 {
		return false, nil
	}
	end := r.off + int(r.bulk)
	r.args = append(r.args, r.buf[r.off:end:end])
	r.off, r.bulk, r.argc = end+2, -1, r.argc-1
	return true, nil
}

// inline parses an inline command, a line of space-separated args; an empty
// line is no command.
func (r *reader) inline() (cmd [][]byte, more bool, err error) {
	rest := r.buf[r.off:]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		// Too long whether its end has come or not (a \r may end it):
		// so a line is refused or not whatever pieces it comes in.
		if len(rest) > inlineMax+1 {
			return nil, false, &protocolError{"too big inline request"}
		}
		return nil, false, nil
	}
	line := rest[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) > inlineMax {
		return nil, false, &protocolError{"too big inline request"}
	}
	r.off += nl + 1
	args, ok := splitArgs(line)
	if !ok {
		return nil, false, &protocolError{"unbalanced quotes in request"}
	}
	if len(args) == 0 {
		return nil, true, nil
	}
	return args, true, nil
}

// parseInt is Redis's string2ll: a decimal int64, with no sign but '-', no
// spaces and no leading zeros but a lone 0.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	switch {
	case neg && v <= 1<<63:
		return -int64(v-1) - 1, true
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}

// splitArgs is Redis's sdssplitargs: args separated by spaces, each plain,
// "double quoted" (with \n \r \t \b \a \\ \" and \xHH escapes) or 'single
// quoted' (with \' ), a quoted arg followed by a space or the end. It
// reports false for unbalanced quotes.
func splitArgs(line []byte) ([][]byte, bool) {
	var args [][]byte
	for i := 0; ; {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, true
		}
		arg, next, ok := nextArg(line, i)
		if !ok {
			return nil, false
		}
		args, i = append(args, arg), next
	}
}

// nextArg reads the argument that starts at line[i], plain until a space,
// unless a quote opens (quotedArg), and returns it and where the next may
// start.
func nextArg(line []byte, i int) (arg []byte, next int, ok bool) {
	arg = []byte{}
	for ; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\n', '\r', '\t', 0:
			return arg, i + 1, true
		case '"', '\'':
			return quotedArg(line, i+1, c, arg)
		default:
			arg = append(arg, c)
		}
	}
	return arg, i, true
}

// quotedArg reads the rest of arg from line[i], inside the quote q: in
// "double quotes" the escapes \xHH and \c (unescape), in 'single quotes'
// only \'. The closing quote ends the argument and must be followed by a
// space or the end; a quote never closed fails.
func quotedArg(line []byte, i int, q byte, arg []byte) ([]byte, int, bool) {
	for ; i < len(line); i++ {
		switch c := line[i]; {
		case q == '"' && c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			arg = append(arg, hexVal(line[i+2])<<4|hexVal(line[i+3]))
			i += 3
		case q == '"' && c == '\\' && i+1 < len(line):
			i++
			arg = append(arg, unescape(line[i]))
		case q == '\'' && c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			i++
			arg = append(arg, '\'')
		case c == q:
			if i+1 < len(line) && !isSpace(line[i+1]) {
				return nil, 0, false
			}
			return arg, i + 1, true
		default:
			arg = append(arg, c)
		}
	}
	return nil, 0, false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
