// Package bucket provides Bucket, one slot of a timing wheel: an intrusive
// doubly-linked list of elements that share an expiration (Kafka's
// TimerTaskList).
//
// It is a building block of package timingwheel, exported for those who build
// a wheel of their own; most programs want timingwheel instead. Its API may
// still change before v1.0 (see CHANGELOG.md).
//
// The list is intrusive: an element has a field of type [Links], two pointers
// and nothing else, so a Bucket costs its elements no allocation, no back
// pointer and no payload pointer, and removing one is O(1) without knowing
// which Bucket holds it. Add, Remove and Flush are O(1) per element and never
// allocate.
//
// Concurrency: nothing here is synchronized. The timing wheel calls every
// function of this package under the lock of the shard that holds the bucket;
// a caller without such a lock must serialize all calls on a Bucket and its
// elements itself.
package bucket

import "iter"

// NoExpiration is the expiration of a Bucket that is not scheduled: a new one,
// or one that has just been flushed.
const NoExpiration int64 = -1

// Links are an element's place in a Bucket. The zero Links are unlinked. An
// element type E holds them in a named field (links, say; not embedded, which
// would clash with the method) and returns that field's address from its
// method Links, which makes *E a [Node]:
//
//	type timer struct {
//		links bucket.Links[timer]
//		...
//	}
//
//	func (t *timer) Links() *bucket.Links[timer] { return &t.links }
type Links[E any] struct {
	next, prev *E
}

// Node is a pointer to an element that holds Links and returns them from its
// method Links.
type Node[E any] interface {
	*E
	Links() *Links[E]
}

// Bucket is a list of elements with an expiration. Make one with [New], or
// call Init on one in place (an array of buckets, say) before any other
// method. A Bucket must not be copied after that: its elements point into it.
type Bucket[E any, P Node[E]] struct {
	// root is the sentinel, never handed out: root.next is the first element
	// and root.prev the last. It is an E so that the links of every element,
	// and of the sentinel, are pointers to E.
	root       E
	expiration int64
}

// New returns an empty Bucket with expiration NoExpiration.
func New[E any, P Node[E]]() *Bucket[E, P] {
	b := new(Bucket[E, P])
	b.Init()
	return b
}

// Init empties b, without touching the elements it held, and sets its
// expiration to NoExpiration.
func (b *Bucket[E, P]) Init() {
	r := P(&b.root).Links()
	r.next, r.prev = &b.root, &b.root
	b.expiration = NoExpiration
}

// Linked reports whether e is in a Bucket.
func Linked[E any, P Node[E]](e P) bool { return e.Links().next != nil }

// Remove takes e out of the Bucket that holds it, in O(1), and reports whether
// it was in one.
func Remove[E any, P Node[E]](e P) bool {
	l := e.Links()
	if l.next == nil {
		return false
	}
	P(l.prev).Links().next = l.next
	P(l.next).Links().prev = l.prev
	l.next, l.prev = nil, nil
	return true
}

// Add appends e to b. If e is in a Bucket (b included), it is removed from
// there first, so an element is never in two places.
func (b *Bucket[E, P]) Add(e P) {
	Remove(e)
	root := P(&b.root).Links()
	l := e.Links()
	l.prev, l.next = root.prev, &b.root
	P(root.prev).Links().next = (*E)(e)
	root.prev = (*E)(e)
}

// Empty reports whether b holds no element.
func (b *Bucket[E, P]) Empty() bool {
	return P(&b.root).Links().next == &b.root
}

// Expiration returns b's expiration, or NoExpiration.
func (b *Bucket[E, P]) Expiration() int64 { return b.expiration }

// SetExpiration sets b's expiration and reports whether it changed. The timing
// wheel offers a bucket to its delay queue only when this returns true, so each
// bucket is queued at most once per expiration.
func (b *Bucket[E, P]) SetExpiration(expiration int64) bool {
	changed := b.expiration != expiration
	b.expiration = expiration
	return changed
}

// Flush empties b, resets its expiration to NoExpiration and calls fn with each
// element it held, in the order they were added. Each element is already
// unlinked when fn sees it, so fn may add it to any Bucket, b included:
// elements added to b during the flush stay in b for the next one. fn must not
// remove elements of this flush other than the one it was given.
func (b *Bucket[E, P]) Flush(fn func(P)) {
	if b.Empty() {
		b.expiration = NoExpiration
		return
	}
	root := P(&b.root).Links()
	e := root.next
	// Detach the whole chain before calling fn, so that fn may add to b again.
	b.Init()
	for e != &b.root {
		l := P(e).Links()
		next := l.next
		l.next, l.prev = nil, nil
		fn(P(e))
		e = next
	}
}

// All returns an iterator over b's elements in the order they were added. The
// body may remove the element it was just given, and nothing else of b.
func (b *Bucket[E, P]) All() iter.Seq[P] {
	return func(yield func(P) bool) {
		for e := P(&b.root).Links().next; e != &b.root; {
			next := P(e).Links().next
			if !yield(P(e)) {
				return
			}
			e = next
		}
	}
}
