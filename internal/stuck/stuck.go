// Package stuck is how the timing wheel and the purgatory notice callbacks
// that block: a Sampler looks at what runs once every Every while anything
// runs, and not at all otherwise, and lets its owner log what has run longer
// than After at most once every LogEvery. The wheel samples its executor's
// workers, the purgatory the operations whose OnComplete or OnExpiration
// runs; what counts as stuck is each one's own (its look function), the
// mechanism is this one.
//
// Nothing on the path that runs a callback reads a clock for the Sampler:
// the owner makes the callback visible to its look function and calls Wake,
// one atomic load while the Sampler is on. Between samples no goroutine
// waits: each sample runs on the goroutine of a runtime timer
// (time.AfterFunc), so an idle owner holds none, and a stopped one leaks
// none.
package stuck

import (
	"sync"
	"sync/atomic"
	"time"
)

const (
	// After is how long a callback may run before it counts as stuck (the
	// wheel's and the purgatory's StuckAfter): far beyond any callback
	// that only hands work on, which takes microseconds, and well inside
	// the 30 s or so a service is usually given to shut down.
	After = 5 * time.Second
	// Every is how often a Sampler that is on samples.
	Every = time.Second
	// LogEvery is the least time between two lines that one Sampler allows.
	LogEvery = time.Minute
)

// A Sampler calls its look function once every Every, from the first Wake
// until look reports that nothing runs. Its methods are safe for concurrent
// use. It must be made with New.
//
// The stop protocol, the one place it is written: a sample that finds
// nothing running clears on, then asks idle once more, and turns itself on
// again if that finds work. An owner makes its work visible and then calls
// Wake, which reads on; the sample clears on and then reads the work. Of two
// such store-then-load pairs on sequentially consistent atomics, one load
// sees the other's store: either Wake finds on clear and arms a sample, or
// the sample's second look finds the work. So no callback runs unsampled.
type Sampler struct {
	look func(now time.Time) (running bool) // one sample; see New
	idle func() bool                        // whether nothing runs; see New
	on   atomic.Bool                        // a sample is armed or under way

	mu     sync.Mutex // guards t and logged
	t      *time.Timer
	logged time.Time // when MayLog last allowed a line; zero if never
}

// New returns a Sampler that is off. look takes one sample at now and
// reports whether anything still runs (or waits to run); idle reports,
// without side effects, whether nothing does. Both run on the Sampler's
// goroutine, never two samples at once, with no lock of the Sampler held.
func New(look func(now time.Time) (running bool), idle func() bool) *Sampler {
	return &Sampler{look: look, idle: idle}
}

// Wake turns the Sampler on if it is off: its first sample comes Every from
// now. Call it after the callback it is for is visible to look and idle.
func (s *Sampler) Wake() {
	if !s.on.Load() && s.on.CompareAndSwap(false, true) {
		s.arm()
	}
}

// arm schedules the next sample. The caller has turned on on.
func (s *Sampler) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t == nil {
		s.t = time.AfterFunc(Every, s.sample)
		return
	}
	s.t.Reset(Every)
}

// sample takes one sample, and arms the next while anything runs.
func (s *Sampler) sample() {
	if s.look(time.Now()) {
		s.arm()
		return
	}
	s.on.Store(false)
	if !s.idle() && s.on.CompareAndSwap(false, true) {
		s.arm() // a Wake that found on set before the store armed nothing
	}
}

// MayLog reports whether a line may be logged at now, and if so counts it:
// true at most once every LogEvery.
func (s *Sampler) MayLog(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.logged.IsZero() && now.Sub(s.logged) < LogEvery {
		return false
	}
	s.logged = now
	return true
}
