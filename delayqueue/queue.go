// Package delayqueue provides Queue, a heap-ordered queue of items that each
// become available at an expiration (Java's DelayQueue, as Kafka's timer uses
// it, without the locking and the sleeping: those belong to whoever drives it).
//
// It is a building block of package timingwheel, exported for those who build
// a wheel of their own; most programs want timingwheel instead. Its API may
// still change before v1.0 (see CHANGELOG.md).
//
// Expirations are int64s in a unit and from an epoch the caller chooses (the
// timing wheel uses ticks since its start). The queue never
// reads the clock: Poll takes "now" as an argument and Peek tells when the
// next item is due, so the caller decides how to wait, and tests can drive it
// in fake time.
package delayqueue

import "github.com/emirpasic/gods/v2/queues/priorityqueue"

// Queue is a delay queue of values of type T. It must be created with [New].
//
// Concurrency: a Queue is not safe for concurrent use. The timing wheel calls
// it under the lock of the shard that holds it, the only lock on the path
// from scheduling a timer to running it.
type Queue[T comparable] struct {
	heap *priorityqueue.Queue[item[T]] // items by value: an Offer allocates nothing once the heap has grown
	seq  uint64                        // keeps items with equal expirations in offer order
}

type item[T comparable] struct {
	value      T
	expiration int64
	seq        uint64
}

func compare[T comparable](a, b item[T]) int {
	switch {
	case a.expiration < b.expiration:
		return -1
	case a.expiration > b.expiration:
		return 1
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// New returns an empty Queue.
func New[T comparable]() *Queue[T] {
	return &Queue[T]{heap: priorityqueue.NewWith(compare[T])}
}

// Offer adds value, to become available at expiration.
func (q *Queue[T]) Offer(value T, expiration int64) {
	q.seq++
	q.heap.Enqueue(item[T]{value: value, expiration: expiration, seq: q.seq})
}

// Poll removes and returns the earliest item if its expiration is at or before
// now. It returns false if the queue is empty or the earliest item is not due.
func (q *Queue[T]) Poll(now int64) (value T, ok bool) {
	head, ok := q.heap.Peek()
	if !ok || head.expiration > now {
		return value, false
	}
	q.heap.Dequeue()
	return head.value, true
}

// Peek returns the earliest expiration in the queue, and false if it is empty.
func (q *Queue[T]) Peek() (expiration int64, ok bool) {
	_, expiration, ok = q.Head()
	return expiration, ok
}

// Head returns the earliest item and its expiration, due or not, and false
// if the queue is empty. Poll(expiration) then removes it.
func (q *Queue[T]) Head() (value T, expiration int64, ok bool) {
	head, ok := q.heap.Peek()
	if !ok {
		return value, 0, false
	}
	return head.value, head.expiration, true
}

// len returns the number of items in the queue, due or not, for tests
// (export_test.go).
func (q *Queue[T]) len() int { return q.heap.Size() }
