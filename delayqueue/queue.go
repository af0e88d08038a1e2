// Package delayqueue provides Queue, a heap-ordered queue of items that each
// become available at an expiration (Java's DelayQueue, as Kafka's timer uses it).
//
// It is a building block of package timingwheel, exported for those who build
// a wheel of their own; most programs want timingwheel instead. Its API may
// still change before v1.0 (see CHANGELOG.md): the wheel's next version takes
// the locking and the sleeping out of it.
//
// Expirations are durations since an epoch the caller chooses. The queue never
// reads the clock itself: Poll takes "now" as an argument, and Take asks a clock
// function the caller passes in, so tests can drive it in fake time.
package delayqueue

import (
	"context"
	"sync"
	"time"

	"github.com/emirpasic/gods/v2/queues/priorityqueue"
)

// Queue is a delay queue of values of type T. It must be created with [New].
//
// Concurrency: Offer, Poll and Peek are safe for concurrent use by any
// number of goroutines. Take may be called by one goroutine at a time (the
// consumer); it may run concurrently with all the others.
type Queue[T any] struct {
	mu   sync.Mutex // guards heap and seq
	heap *priorityqueue.Queue[*item[T]]
	seq  uint64 // keeps items with equal expirations in offer order

	// wake holds a token when an offer has put a new item at the head, so that a
	// consumer sleeping in Take re-reads the head. It has capacity 1, so offers
	// never block; Take drains it before each look at the head.
	wake chan struct{}
	// timer is the consumer's sleep; only Take touches it.
	timer *time.Timer
}

type item[T any] struct {
	value      T
	expiration time.Duration
	seq        uint64
}

func compare[T any](a, b *item[T]) int {
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
func New[T any]() *Queue[T] {
	return &Queue[T]{
		heap: priorityqueue.NewWith(compare[T]),
		wake: make(chan struct{}, 1),
	}
}

// Offer adds value, to become available at expiration. If it becomes the earliest
// item, a consumer sleeping in Take wakes up to reconsider how long to sleep.
func (q *Queue[T]) Offer(value T, expiration time.Duration) {
	q.mu.Lock()
	q.seq++
	it := &item[T]{value: value, expiration: expiration, seq: q.seq}
	q.heap.Enqueue(it)
	head, _ := q.heap.Peek()
	q.mu.Unlock()
	if head == it {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// Poll removes and returns the earliest item if its expiration is at or before
// now. It returns false if the queue is empty or the earliest item is not due.
func (q *Queue[T]) Poll(now time.Duration) (value T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	head, ok := q.heap.Peek()
	if !ok || head.expiration > now {
		return value, false
	}
	q.heap.Dequeue()
	return head.value, true
}

// Peek returns the earliest expiration in the queue, and false if it is empty.
// The delay until the next item is due is expiration minus now.
func (q *Queue[T]) Peek() (expiration time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	head, ok := q.heap.Peek()
	if !ok {
		return 0, false
	}
	return head.expiration, true
}

// len returns the number of items in the queue, due or not, for tests
// (export_test.go).
func (q *Queue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heap.Size()
}

// Take removes and returns the earliest item, waiting until it is due according
// to now. While it waits it sleeps (no polling): until the head's expiration, or
// until an earlier item is offered, or until ctx is done, in which case it
// returns ctx.Err(). Only one goroutine may call Take at a time.
func (q *Queue[T]) Take(ctx context.Context, now func() time.Duration) (T, error) {
	for {
		// A token from an offer made before this look is stale: the look
		// below sees that offer anyway.
		select {
		case <-q.wake:
		default:
		}
		q.mu.Lock()
		head, ok := q.heap.Peek()
		wait := time.Duration(-1)
		if ok {
			if wait = head.expiration - now(); wait <= 0 {
				q.heap.Dequeue()
				q.mu.Unlock()
				return head.value, nil
			}
		}
		q.mu.Unlock()

		var expired <-chan time.Time
		if wait > 0 {
			if q.timer == nil {
				q.timer = time.NewTimer(wait)
			} else {
				q.timer.Reset(wait)
			}
			expired = q.timer.C
		}
		select {
		case <-ctx.Done():
			q.stopTimer(wait)
			var zero T
			return zero, ctx.Err()
		case <-q.wake:
			q.stopTimer(wait)
		case <-expired:
		}
	}
}

func (q *Queue[T]) stopTimer(wait time.Duration) {
	if wait > 0 {
		q.timer.Stop()
	}
}
