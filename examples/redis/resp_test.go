package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// testLimits are Redis 7.0's defaults, or maxQuery if given.
func testLimits(maxQuery ...int64) *atomic.Pointer[limits] {
	lim := limits{maxBulk: 512 << 20, maxQuery: 1 << 30}
	if len(maxQuery) > 0 {
		lim.maxQuery = maxQuery[0]
	}
	var p atomic.Pointer[limits]
	p.Store(&lim)
	return &p
}

// feed gives r the input in pieces of the sizes in chunks (cycled; the rest
// at once if chunks is empty), as reads would, and returns the commands it
// parsed, copied as strings, and its error. It stops at the first error.
func feed(r *reader, in []byte, chunks []int) ([][]string, error) {
	var out [][]string
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(chunks) > 0 {
			n = min(n, max(chunks[i%len(chunks)], 1))
		}
		space := r.space()
		n = min(n, len(space))
		copy(space, in[:n])
		in = in[n:]
		cmds, err := r.read(n)
		for _, cmd := range cmds {
			var args []string
			for _, a := range cmd {
				args = append(args, string(a))
			}
			out = append(out, args)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func TestReader(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	cases := []struct {
		name string
		in   string
		want [][]string
		err  string
	}{
		{"multibulk", "*2\r\n$4\r\nLLEN\r\n$1\r\nk\r\n", [][]string{{"LLEN", "k"}}, ""},
		{"pipelined", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}, {"PING"}}, ""},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}, ""},
		{"big bulk", "*2\r\n$4\r\nECHO\r\n$100000\r\n" + big + "\r\n", [][]string{{"ECHO", big}}, ""},
		{"empty multibulk is no command", "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}, ""},
		{"inline", "LPUSH k \"a b\" 'c\\'d' \"\\x41\\n\"\r\n", [][]string{{"LPUSH", "k", "a b", "c'd", "A\n"}}, ""},
		{"inline without \\r", "PING\n\r\n\n", [][]string{{"PING"}}, ""},
		{"unbalanced quotes", "ECHO \"a\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"quote then no space", "ECHO \"a\"b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"bad multibulk length", "*x\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"multibulk too long", "*2147483648\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"not a bulk", "*1\r\n:1\r\n", nil, "ERR Protocol error: expected '$', got ':'"},
		{"negative bulk", "*1\r\n$-1\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk over 512 MB", "*1\r\n$536870913\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk of 512 MB is announced", "*1\r\n$536870912\r\n", nil, ""},
		{"a command before the error runs", "PING\r\n*1\r\n$x\r\n", [][]string{{"PING"}}, "ERR Protocol error: invalid bulk length"},
		{"inline over 64 KiB", strings.Repeat("a", inlineMax+2), nil, "ERR Protocol error: too big inline request"},
		{"inline of 64 KiB waits", strings.Repeat("a", inlineMax) + "\r", nil, ""},
		{"inline over 64 KiB with its end", strings.Repeat("a", inlineMax+1) + "\r\n", nil, "ERR Protocol error: too big inline request"},
		{"inline of 64 KiB with its end", "ECHO " + strings.Repeat("a", inlineMax-5) + "\r\n", [][]string{{"ECHO", strings.Repeat("a", inlineMax-5)}}, ""},
		{"an empty line where $ was due", "*1\r0\r0", nil, "ERR Protocol error: expected '$', got '\r'"},
		{"count line over 64 KiB", "*" + strings.Repeat("1", inlineMax+1), nil, "ERR Protocol error: too big mbulk count string"},
		{"bulk line over 64 KiB", "*1\r\n$" + strings.Repeat("1", inlineMax+1), nil, "ERR Protocol error: too big bulk count string"},
	}
	for _, tc := range cases {
		for _, chunks := range [][]int{nil, {1}, {3, 7}} {
			got, err := feed(newReader(testLimits()), []byte(tc.in), chunks)
			require.Equal(t, tc.want, got, "%s, in pieces of %v", tc.name, chunks)
			if tc.err == "" {
				require.NoError(t, err, "%s, in pieces of %v", tc.name, chunks)
			} else {
				require.EqualError(t, err, tc.err, "%s, in pieces of %v", tc.name, chunks)
			}
		}
	}
}

// A client whose query buffer (what it sent and the server has not run,
// with the args of the command under way) passes the limit is refused.
func TestReaderQueryBufferLimit(t *testing.T) {
	const limit = 64 << 10
	arg := strings.Repeat("x", 40<<10)
	cmd := "*3\r\n$4\r\nECHO\r\n$40960\r\n" + arg + "\r\n$40960\r\n" + arg + "\r\n"
	_, err := feed(newReader(testLimits(limit)), []byte(cmd), nil)
	require.ErrorIs(t, err, errQueryBufferLimit, "two args of 40 KiB in one command")
	_, err = feed(newReader(testLimits(limit)), []byte(cmd), []int{4096})
	require.ErrorIs(t, err, errQueryBufferLimit, "in pieces")
	got, err := feed(newReader(testLimits(limit)), []byte("*2\r\n$4\r\nECHO\r\n$40960\r\n"+arg+"\r\n"), []int{4096})
	require.NoError(t, err, "one arg of 40 KiB")
	require.Len(t, got, 1)

	// Commands parsed are out of the buffer: a read is parsed whole before
	// the next, so pipelined commands never add up.
	got, err = feed(newReader(testLimits(limit)), []byte(strings.Repeat("PING\r\n", 20_000)), nil)
	require.NoError(t, err, "120 KB of pipelined PINGs")
	require.Len(t, got, 20_000)
}

// A big bulk's array grows as its bytes come: announcing 512 MB costs the
// server a megabyte at most until the bytes arrive.
func TestReaderBigBulkGrowsAsItComes(t *testing.T) {
	r := newReader(testLimits())
	_, err := feed(r, []byte("*1\r\n$524288\r\nabc"), nil)
	require.NoError(t, err)
	require.LessOrEqual(t, cap(r.big), 1<<20, "under offHeapMin: on the heap, at most 1 MiB before its bytes come")
	require.Empty(t, r.mapped)
	require.Equal(t, 524288+2, r.want)
}

// A bulk of offHeapMin or more is read into an array mapped whole off the
// heap at once, which costs no memory until bytes come: announcing 512 MB
// leaves the resident set as it was. The bulk arrives intact in any chunks,
// and its array is unmapped once its command has run (the next space), or
// when the client goes (release).
func TestReaderBigBulkMapped(t *testing.T) {
	rss := func() int64 {
		b, err := os.ReadFile("/proc/self/statm")
		require.NoError(t, err)
		f := strings.Fields(string(b))
		pages, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err)
		return pages * int64(os.Getpagesize())
	}
	r := newReader(testLimits())
	before := rss()
	_, err := feed(r, []byte("*1\r\n$536870912\r\nabc"), nil)
	require.NoError(t, err)
	require.Len(t, r.mapped, 1)
	require.Equal(t, 536870912+2, cap(r.big))
	require.Less(t, rss()-before, int64(16<<20), "a mapping costs nothing until written")
	r.release()
	require.Empty(t, r.mapped)

	r = newReader(testLimits())
	bulk := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	in := append(append([]byte(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", len(bulk))), bulk...), "\r\n"...)
	cmds, err := feed(r, in, []int{7, 65536, 1 << 20})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"ECHO", string(bulk)}}, cmds, "intact")
	require.Len(t, r.mapped, 1, "held while its command may run")
	r.space()
	require.Empty(t, r.mapped, "unmapped once it has run")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The reader parses the same commands, and fails with the same error,
// whether the bytes come at once or in pieces of any sizes. (The query
// buffer limit is 1 GiB here, out of a fuzzer's reach: what it counts does
// depend on the pieces.)
func FuzzReader(f *testing.F) {
	f.Add([]byte("*2\r\n$4\r\nLLEN\r\n$1\r\nk\r\nPING\r\n"), []byte{1, 2, 3})
	f.Add([]byte("ECHO \"a\\x41\" 'b'\r\n*1\r\n$0\r\n\r\n"), []byte{5})
	f.Add([]byte("*1\r\n$40000\r\n"+strings.Repeat("y", 40000)+"\r\n"), []byte{200, 7})
	f.Add([]byte("*1\r\n$x\r\n"), []byte{})
	f.Fuzz(func(t *testing.T, in []byte, sizes []byte) {
		chunks := make([]int, len(sizes))
		for i, s := range sizes {
			chunks[i] = int(s)
		}
		whole, werr := feed(newReader(testLimits()), in, nil)
		pieces, perr := feed(newReader(testLimits()), in, chunks)
		require.Equal(t, whole, pieces)
		require.Equal(t, errText(werr), errText(perr))
	})
}
