package history

import (
	"fmt"
	"strings"
	"time"
)

// A killed consumer's pop may still be served: the server learns of the
// kill only when it reads the reset or the end of input, maybe after a
// push has handed the killed client a value that is then gone with it. So
// each killed consumer is watched until the server surely has let go of it
// (QueueHistory.Gone), which bounds when it could have been served.

// probe watches the killed consumers' client ids in CLIENT LIST, every 2 ms
// while the workload runs, then until none is left or patience runs out
// (those left count as never gone). It runs on c, the admin connection,
// after the workload's goroutines have ended; the nemesis's and the
// consumers' kills during the run are probed by watchLoop.
func (r *recorder) probe(c *conn, patience time.Duration) error {
	for deadline := time.Now().Add(patience); ; time.Sleep(2 * time.Millisecond) {
		left, err := r.look(c)
		if err != nil || left == 0 || time.Now().After(deadline) {
			return err
		}
	}
}

// look reads CLIENT LIST once and marks gone the watched ids it lacks; it
// returns how many are still listed.
func (r *recorder) look(c *conn) (int, error) {
	v, err := c.do("CLIENT", "LIST")
	if err != nil {
		return 0, fmt.Errorf("history: CLIENT LIST: %w", err)
	}
	listed := map[int64]bool{}
	for _, line := range strings.Split(v.(string), "\n") {
		var id int64
		if _, err := fmt.Sscanf(line, "id=%d ", &id); err == nil {
			listed[id] = true
		}
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.watched {
		if !listed[id] {
			r.h.Gone[id] = now
			delete(r.watched, id)
		}
	}
	return len(r.watched), nil
}

// watchLoop probes while the run lasts, on a connection of its own.
func (r *recorder) watchLoop() {
	c, err := dial(r.addr)
	if err != nil {
		r.failed(err)
		return
	}
	defer c.close()
	for time.Now().Before(r.until) {
		if _, err := r.look(c); err != nil {
			r.failed(err)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// watch marks a killed consumer's id to be watched until it is gone.
func (r *recorder) watch(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watched[id] = true
}

// goneAt records that the server closed a killed consumer's connection.
func (r *recorder) goneAt(id int64, at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Gone[id] = at
	delete(r.watched, id)
}
