// Package recovery reports panics that the library recovered from user code,
// the same way in every package: to the user's handler or, with none, once
// to the library's logger (log/slog) with the stack of the panic (net/http's
// convention for a handler's panic). A handler that panics itself is logged,
// never propagated: it must not kill the goroutine that serves other work.
package recovery

import (
	"log/slog"
	"runtime/debug"
)

// Report passes r, recovered from user code described by where, to h, or logs
// it at level Error with its stack to l if h is nil or panics. pkg prefixes
// the message. Call it inside the deferred function that recovered r, so that
// the stack still shows where the panic happened.
func Report(l *slog.Logger, pkg, where string, r any, h func(recovered any)) {
	if h != nil {
		if handled(l, pkg, h, r) {
			return
		}
		where += " (and the panic handler panicked too)"
	}
	l.Error(pkg+": recovered a panic from "+where, "panic", r, "stack", string(debug.Stack()))
}

// handled calls h(r) and reports whether it returned normally; a panic in h
// is logged.
func handled(l *slog.Logger, pkg string, h func(any), r any) (ok bool) {
	defer func() {
		if !ok {
			l.Error(pkg+": the panic handler panicked", "panic", recover(), "stack", string(debug.Stack()))
		}
	}()
	h(r)
	return true
}

// Logger returns l, or slog.Default() if l is nil: read at each log line, so
// that a service that sets its default logger after making a wheel or a
// purgatory is still heard.
func Logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}
