package main

import "sync"

// intake is the queue between an open-loop generator and the goroutine that
// hands its requests to the system: push never waits, however far behind the
// system is, so arrivals keep to their schedule and the backlog waits here,
// where it is measured (intake_late).
type intake struct {
	mu     sync.Mutex
	items  []*request
	closed bool
	ready  chan struct{} // has a value when items or closed changed since the last take
}

func newIntake() *intake { return &intake{ready: make(chan struct{}, 1)} }

// push queues r for take. It never blocks.
func (q *intake) push(r *request) {
	q.mu.Lock()
	q.items = append(q.items, r)
	q.mu.Unlock()
	q.signal()
}

// close says nothing more will be pushed.
func (q *intake) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *intake) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take waits for queued requests and returns them all, oldest first; it
// returns false once the intake is closed and empty.
func (q *intake) take() ([]*request, bool) {
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		if len(items) > 0 {
			return items, true
		}
		if closed {
			return nil, false
		}
		<-q.ready
	}
}
