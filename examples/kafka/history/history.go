// Package history checks a Kafka broker as Jepsen's Kafka tests do, as far
// as a single-node broker allows: kgo clients produce unique values (with
// kgo's idempotent producer, its default, so that a retried send cannot be
// stored twice) and read them back, partition consumers from the log's
// start and members of a consumer group; producers are killed after a send
// (its outcome unknown), consumers in a long poll, group members in the
// middle of a rebalance. Every send's answer and every record polled is
// recorded, and the history is checked afterwards (check.go):
//
//   - lost writes: every acknowledged send at or below the highest offset
//     polled in its partition was polled;
//   - send and poll agree on the value at each offset, and polls agree with
//     each other;
//   - a consumer's polls of a partition are contiguous: no skip, no going
//     back (a group member's, while its assignment stays);
//   - no value at two offsets, and no value polled that was never sent.
//
// It runs against any broker: examples/kafka's tests run it against this
// broker and, as the control, against franz-go's kfake.
package history

import (
	"sync"
	"time"
)

// Status is how a send ended, as its producer saw it.
type Status uint8

const (
	OK      Status = iota // acknowledged, with its offset
	Unknown               // its producer was killed, or it failed: it may or may not be stored
)

// Send is one record produced.
type Send struct {
	Producer     int
	Value        string
	Partition    int32
	Offset       int64 // acknowledged: where it was stored
	Call, Return time.Duration
	Status       Status
}

// Poll is one record a consumer polled.
type Poll struct {
	Session   int  // the consumer (a client instance)
	Group     bool // a group member's
	Epoch     int  // a member's count of assignment changes when it polled this
	Partition int32
	Offset    int64
	Value     string
	At        time.Duration
}

// History is a run's sends and polls.
type History struct {
	Seed                          uint64
	Sends                         []Send
	Polls                         []Poll
	Producers, Consumers, Members int // killed
	Errors                        []string
	Duration                      time.Duration
}

// recorder is a run's shared state: the history so far, under mu.
type recorder struct {
	start time.Time
	until time.Time
	mu    sync.Mutex
	h     History
	next  int // the next consumer session
}

func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) send(s ...Send) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Sends = append(r.h.Sends, s...)
}

func (r *recorder) poll(p ...Poll) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Polls = append(r.h.Polls, p...)
}

func (r *recorder) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Errors = append(r.h.Errors, err.Error())
}

func (r *recorder) session() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return r.next
}

// killed counts a kill: of a producer, a consumer or a group member.
func (r *recorder) killed(of *int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*of++
}
