// Package recovery reports panics that the library recovered from user code,
// the same way in every package: to the user's handler or, with none, once
// to the standard log with the stack of the panic (net/http's convention for
// a handler's panic). A handler that panics itself is logged, never
// propagated: it must not kill the goroutine that serves other work.
package recovery

import (
	"log"
	"runtime/debug"
)

// Report passes r, recovered from user code described by where, to h, or logs
// it with its stack if h is nil or panics. pkg prefixes the log line. Call it
// inside the deferred function that recovered r, so that the stack still
// shows where the panic happened.
func Report(pkg, where string, r any, h func(recovered any)) {
	if h != nil {
		if handled(pkg, h, r) {
			return
		}
		where += " (and the panic handler panicked too)"
	}
	log.Printf("%s: recovered a panic from %s: %v\n%s", pkg, where, r, debug.Stack())
}

// handled calls h(r) and reports whether it returned normally; a panic in h
// is logged.
func handled(pkg string, h func(any), r any) (ok bool) {
	defer func() {
		if !ok {
			log.Printf("%s: the panic handler panicked: %v\n%s", pkg, recover(), debug.Stack())
		}
	}()
	h(r)
	return true
}
