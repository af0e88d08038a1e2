// Package bucket provides Bucket, one slot of a timing wheel: a doubly-linked
// list of entries that share an expiration (Kafka's TimerTaskList).
//
// It is a building block of package timingwheel, exported for those who build
// a wheel of their own; most programs want timingwheel instead. Its API may
// still change before v1.0 (see CHANGELOG.md).
//
// Entries are intrusive: an Entry knows the Bucket that holds it, so removing it
// is O(1) without a search, and adding it to another Bucket first takes it out of
// the old one. Add, Remove and Flush are O(1) per entry and never allocate.
package bucket

import (
	"iter"
	"sync/atomic"
)

// NoExpiration is the expiration of a Bucket that is not scheduled: a new one,
// or one that has just been flushed.
const NoExpiration int64 = -1

// Entry is an element of a Bucket. The zero Entry is unlinked and ready to use.
//
// An Entry is usually embedded in, or pointed to by, the value it schedules; Value
// leads back from the entry to that value when a Bucket hands the entry out.
type Entry[T any] struct {
	next, prev *Entry[T]
	list       *Bucket[T]

	// Value is the caller's payload (as container/list's Element.Value): the
	// timer the entry schedules, which also keeps the entry's deadline.
	Value T
}

// Bucket returns the Bucket that holds e, or nil if e is not in one.
func (e *Entry[T]) Bucket() *Bucket[T] { return e.list }

// Remove takes e out of the Bucket that holds it, in O(1). It reports whether
// e was in a Bucket. It must be serialized with the holding Bucket's Add and
// Flush.
func (e *Entry[T]) Remove() bool {
	if e.list == nil {
		return false
	}
	e.list.remove(e)
	return true
}

// Bucket is a list of entries with an expiration. It must be created with [New].
//
// Concurrency: Add, Flush, Len and Entry.Remove must be serialized by the caller
// (the timing wheel calls them under its own lock), and an Entry may only be moved
// between buckets under that same serialization. Expiration and SetExpiration are
// atomic and may be called at any time from any goroutine.
type Bucket[T any] struct {
	root       Entry[T] // sentinel: root.next is the first entry, root.prev the last
	len        int
	expiration atomic.Int64
	counter    *atomic.Int64
}

// New returns an empty Bucket with expiration NoExpiration. If counter is not nil,
// it is shared with other buckets (Kafka's taskCounter): every entry added to any
// of them increments it and every entry removed or flushed decrements it, so it
// always holds the number of entries in all of them. Moving an entry between two
// buckets that share counter leaves it unchanged.
func New[T any](counter *atomic.Int64) *Bucket[T] {
	b := &Bucket[T]{counter: counter}
	b.root.next = &b.root
	b.root.prev = &b.root
	b.expiration.Store(NoExpiration)
	return b
}

// Add appends e to b. If e is in another Bucket (or already in b), it is removed
// from there first, so an entry is never in two buckets.
func (b *Bucket[T]) Add(e *Entry[T]) {
	if e.list != nil {
		e.list.remove(e)
	}
	last := b.root.prev
	e.prev = last
	e.next = &b.root
	last.next = e
	b.root.prev = e
	e.list = b
	b.len++
	if b.counter != nil {
		b.counter.Add(1)
	}
}

func (b *Bucket[T]) remove(e *Entry[T]) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.next, e.prev, e.list = nil, nil, nil
	b.len--
	if b.counter != nil {
		b.counter.Add(-1)
	}
}

// Len returns the number of entries in b.
func (b *Bucket[T]) Len() int { return b.len }

// Expiration returns b's expiration, or NoExpiration.
func (b *Bucket[T]) Expiration() int64 { return b.expiration.Load() }

// SetExpiration sets b's expiration and reports whether it changed. The timing
// wheel offers a bucket to its delay queue only when this returns true, so each
// bucket is queued at most once per expiration.
func (b *Bucket[T]) SetExpiration(expiration int64) bool {
	// Most adds land in a bucket that is already scheduled: a load is cheaper
	// than the locked exchange a Swap costs.
	if b.expiration.Load() == expiration {
		return false
	}
	return b.expiration.Swap(expiration) != expiration
}

// Flush empties b, resets its expiration to NoExpiration and calls fn with each
// entry it held, in the order they were added. Each entry is already unlinked when
// fn sees it, so fn may add it to any bucket, b included: entries added to b
// during the flush stay in b for the next one. fn must not remove entries of this
// flush other than the one it was given.
func (b *Bucket[T]) Flush(fn func(*Entry[T])) {
	b.expiration.Store(NoExpiration)
	end := &b.root
	e := b.root.next
	// Detach the whole chain before calling fn, so that fn may add to b again.
	b.root.next, b.root.prev, b.len = end, end, 0
	for e != end {
		next := e.next
		e.next, e.prev, e.list = nil, nil, nil
		if b.counter != nil {
			b.counter.Add(-1)
		}
		fn(e)
		e = next
	}
}

// all returns an iterator over b's entries in the order they were added, for
// tests (export_test.go). The iterator must not be used while b is being
// changed, except that the body may remove the entry it was just given.
func (b *Bucket[T]) all() iter.Seq[*Entry[T]] {
	return func(yield func(*Entry[T]) bool) {
		for e := b.root.next; e != &b.root; {
			next := e.next
			if !yield(e) {
				return
			}
			e = next
		}
	}
}
