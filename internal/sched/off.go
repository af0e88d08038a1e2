//go:build !purgatorycheck

package sched

import "sync"

// On reports whether the checker's points are in the build
// (-tags purgatorycheck).
const On = false

// At is a scheduling point before an access to shared state, named by
// what. It does nothing: without the tag, a call is inlined away.
func At(what string) {}

// Mutex is the mutex of the library's checked paths: sync.Mutex itself.
type Mutex = sync.Mutex

// WheelMutex is the timing wheel's: sync.Mutex itself. (With the tag, its
// Lock is a point named "wheel: lock", which a scenario may pass.)
type WheelMutex = sync.Mutex
