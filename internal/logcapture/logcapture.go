// Package logcapture lets tests read what the library logs: through the
// standard logger (slog.Default's output, when no logger was given) or
// through a logger made here.
package logcapture

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Buffer is what the standard logger wrote since Capture; safe for
// concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Capture sends the standard logger's output to a Buffer until the test ends.
func Capture(t testing.TB) *Buffer {
	t.Helper()
	b := &Buffer{}
	out := log.Writer()
	log.SetOutput(b)
	t.Cleanup(func() { log.SetOutput(out) })
	return b
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a logger that writes text lines, without their time, to a
// new Buffer, for options that take a *slog.Logger.
func Logger() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	drop := func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: drop})), b
}

// Lines returns the lines written so far.
func (b *Buffer) Lines() []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
