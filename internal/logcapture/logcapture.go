// Package logcapture lets tests read what the library writes to the standard
// logger (recovered panics).
package logcapture

import (
	"bytes"
	"log"
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
