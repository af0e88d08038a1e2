//go:build purgatorycheck

package sched

import (
	"sync"
	"sync/atomic"
)

// On reports whether the checker's points are in the build
// (-tags purgatorycheck).
const On = true

// active is the checker running now, if any: its points are live.
var active atomic.Pointer[scheduler]

// At is a scheduling point before an access to shared state, named by
// what: while a checker runs, the calling goroutine waits here until the
// checker lets it go on.
func At(what string) {
	if s := active.Load(); s != nil {
		s.arrive(what, nil)
	}
}

// Choose is a choice of data that the checker makes, as it chooses who goes
// on: a test's TryComplete answering either way, say. While a checker runs
// it is a point whose n ways are each explored; otherwise it returns 0.
// The library never calls it.
func Choose(what string, n int) int {
	if s := active.Load(); s != nil {
		return s.choose(what, n)
	}
	return 0
}

// Mutex is the mutex of the library's checked paths. While a checker runs,
// Lock is a scheduling point that the checker lets through only while
// nobody holds the mutex, so that no goroutine blocks on it where the
// checker cannot see; otherwise it is a sync.Mutex.
type Mutex struct {
	mu   sync.Mutex
	held atomic.Bool
}

// Lock locks m.
func (m *Mutex) Lock() { m.lock("lock") }

func (m *Mutex) lock(what string) {
	for s := active.Load(); s != nil; s = active.Load() {
		if !s.arrive(what, m) {
			break // a point the scenario passes
		}
		if m.mu.TryLock() {
			m.held.Store(true)
			return
		}
		// Taken by a goroutine that ran beside this one (woken by a
		// channel or a timer, not by the checker): wait for it again.
	}
	m.mu.Lock()
	m.held.Store(true)
}

// TryLock locks m if nobody holds it, and reports whether it did.
func (m *Mutex) TryLock() bool {
	At("trylock")
	if m.mu.TryLock() {
		m.held.Store(true)
		return true
	}
	return false
}

// Unlock unlocks m.
func (m *Mutex) Unlock() {
	m.held.Store(false)
	m.mu.Unlock()
}

// WheelMutex is the timing wheel's mutex: a Mutex whose Lock is the point
// "wheel: lock", so that a scenario can pass the wheel's points by their
// names' prefix ("wheel: ").
type WheelMutex struct{ Mutex }

// Lock locks m.
func (m *WheelMutex) Lock() { m.lock("wheel: lock") }
