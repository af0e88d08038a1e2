//go:build purgatorycheck

package sched

import (
	"bytes"
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// scheduler is one run's: the goroutines waiting at a point, and the name
// each goroutine goes by, which is what a schedule chooses (a name stays the
// same from run to run of one scenario, where a goroutine ID would not).
type scheduler struct {
	skip    []string // the points whose names have these prefixes are passed (Scenario.Skip)
	capture bool     // each arrival keeps its callers, for a trace
	mu      sync.Mutex
	waiting []*arrival
	byID    map[int64]*goroutine
	roles   map[string]int // goroutines named so far, by role
}

// goroutine is a goroutine the checker has met.
type goroutine struct {
	name string // "" until the scheduler names it (label)
	role string // what started it
	id   int64  // its goroutine ID, the last tie-break between two unnamed ones
}

// arrival is a goroutine waiting at a point.
type arrival struct {
	g     *goroutine
	what  string
	where [4]uintptr // the point's callers
	mu    *Mutex     // a Lock waits for it to be free
	ways  int        // a Choose: how many ways
	way   int        // the way the checker chose
	go_   chan struct{}
}

func newScheduler() *scheduler {
	return &scheduler{byID: map[int64]*goroutine{}, roles: map[string]int{}}
}

// arrive parks the calling goroutine at a point until the checker lets it
// go on, and reports whether it did: a point of a function the scenario
// skips is passed at once.
func (s *scheduler) arrive(what string, m *Mutex) bool {
	return s.park(&arrival{what: what, mu: m, go_: make(chan struct{})})
}

// choose parks the calling goroutine at a Choose, and returns the way
// the checker chose.
func (s *scheduler) choose(what string, ways int) int {
	a := &arrival{what: what, ways: ways, go_: make(chan struct{})}
	s.park(a)
	return a.way
}

// park parks a's goroutine until the checker lets it go on, and reports
// whether it did (see arrive).
func (s *scheduler) park(a *arrival) bool {
	for _, p := range s.skip {
		if strings.HasPrefix(a.what, p) {
			return false
		}
	}
	id := goid()
	s.mu.Lock()
	g := s.byID[id]
	unnamed := g == nil || g.name == ""
	s.mu.Unlock()
	if g == nil {
		g = &goroutine{role: role(), id: id}
	}
	if s.capture || unnamed {
		// An unnamed goroutine's first point is part of the name label
		// gives it: where it waits tells it from others of its role.
		runtime.Callers(3, a.where[:])
	}
	s.mu.Lock()
	s.byID[id] = g
	a.g = g
	s.waiting = append(s.waiting, a)
	s.mu.Unlock()
	<-a.go_
	return true
}

// name gives the calling goroutine its name before it reaches a point: a
// scenario's path.
func (s *scheduler) name(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[goid()] = &goroutine{name: name, role: name}
}

// label names the goroutines that reached their first point unnamed, in an
// order that does not depend on which got there first: by role, then by
// where they wait. The caller holds nothing, and every goroutine waits.
func (s *scheduler) label() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fresh []*arrival
	for _, a := range s.waiting {
		if a.g.name == "" {
			fresh = append(fresh, a)
		}
	}
	slices.SortFunc(fresh, func(a, b *arrival) int {
		if c := strings.Compare(a.g.role+"\x00"+a.place(), b.g.role+"\x00"+b.place()); c != 0 {
			return c
		}
		return cmp.Compare(a.g.id, b.g.id)
	})
	for _, a := range fresh {
		if a.g.name == "" {
			s.roles[a.g.role]++
			a.g.name = a.g.role + "#" + strconv.Itoa(s.roles[a.g.role])
		}
	}
}

// enabled returns the goroutines that may go on, by name, in name order,
// with where each waits: every waiting one but a Lock of a held mutex.
func (s *scheduler) enabled() []*arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*arrival
	for _, a := range s.waiting {
		if a.mu == nil || !a.mu.held.Load() {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *arrival) int { return strings.Compare(a.g.name, b.g.name) })
	return out
}

// blocked returns the goroutines that wait on a held mutex.
func (s *scheduler) blocked() []*arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*arrival
	for _, a := range s.waiting {
		if a.mu != nil && a.mu.held.Load() {
			out = append(out, a)
		}
	}
	return out
}

// release lets a go on, the way chosen if it waits at a Choose.
func (s *scheduler) release(a *arrival, way int) {
	a.way = way
	s.mu.Lock()
	s.waiting = slices.DeleteFunc(s.waiting, func(b *arrival) bool { return b == a })
	s.mu.Unlock()
	close(a.go_)
}

// releaseAll lets every waiting goroutine go on; the checker is off by then.
func (s *scheduler) releaseAll() {
	s.mu.Lock()
	w := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	for _, a := range w {
		close(a.go_)
	}
}

// place is where a waits: the point's name, and the two calls of the
// library (or the scenario) that led to it.
func (a *arrival) place() string {
	var b strings.Builder
	b.WriteString(a.what)
	frames := runtime.CallersFrames(a.where[:])
	for n := 0; n < 2; {
		f, more := frames.Next()
		if !strings.Contains(f.Function, "internal/sched.") && !strings.HasPrefix(f.Function, "sync/atomic.") && f.Function != "" {
			fn := f.Function[strings.LastIndexByte(f.Function, '/')+1:]
			fmt.Fprintf(&b, " %s %s:%d", map[bool]string{true: "in", false: "←"}[n == 0], fn, f.Line)
			n++
		}
		if !more {
			break
		}
	}
	return b.String()
}

// stackGoid is the calling goroutine's ID, read from its stack's first
// line. Go keeps goroutine IDs out of its API on purpose; the library never
// asks for one, and the checker needs one only to tell its goroutines apart
// (goid).
func stackGoid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// role is what started the calling goroutine: the function its stack says
// created it, without its package path.
func role() string {
	buf := make([]byte, 64<<10)
	b := buf[:runtime.Stack(buf, false)]
	i := bytes.LastIndex(b, []byte("created by "))
	if i < 0 {
		return "goroutine"
	}
	b = b[i+len("created by "):]
	if j := bytes.IndexAny(b, " \n"); j >= 0 {
		b = b[:j]
	}
	name := string(b)
	return name[strings.LastIndexByte(name, '/')+1:]
}
