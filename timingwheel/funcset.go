package timingwheel

import "sync"

// funcSet holds functions registered to run once, later, each of which can be
// detached until then: AfterStop's functions on a wheel, and AfterFunc's on a
// context. The lock passed to add guards the set.
type funcSet map[*func()]struct{}

// add registers f and returns the function that detaches it, reporting
// whether f was still registered (so had not run). The caller holds mu; the
// detach function takes it.
func (s *funcSet) add(f func(), mu sync.Locker) (detach func() bool) {
	key := &f
	if *s == nil {
		*s = make(funcSet)
	}
	(*s)[key] = struct{}{}
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := (*s)[key]
		delete(*s, key)
		return ok
	}
}
