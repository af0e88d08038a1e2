// Package bucket provides Bucket, one slot of a timing wheel: the elements
// that share an expiration, in the order they were added (Kafka's
// TimerTaskList).
//
// It is a building block of package timingwheel, exported for those who build
// a wheel of their own; most programs want timingwheel instead. Its API may
// still change before v1.0 (see CHANGELOG.md).
//
// A Bucket keeps its elements in an array, and each element keeps its index
// there in a field of type [Links], four bytes and nothing else: the caller
// knows which Bucket holds an element (a timing wheel records the level and
// bucket in the timer), so the element holds no pointer back, and removing it
// is O(1). A removal clears its slot and touches no other element. The array
// is compacted when it would otherwise grow (an Add that finds it full and at
// least half cleared), so it stays under twice what the Bucket holds, plus
// what was added since the last compaction or flush. Flush reads the array in
// order, so the elements it visits are independent loads that the CPU
// overlaps, where a linked list's next element is known only once the one
// before has arrived (BenchmarkFlushCold and BenchmarkRemoveCold: elements
// that are cache misses). Add, Remove and Flush are amortized O(1) per
// element; Add allocates only when a Bucket's array grows past its largest
// size yet.
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
	at uint32 // 1 + the element's index in its Bucket's array; 0: in none
}

// Node is a pointer to an element that holds Links and returns them from its
// method Links.
type Node[E any] interface {
	*E
	Links() *Links[E]
}

// slots are a Bucket's elements.
type slots[E any] struct {
	items []*E // in the order added; nil where an element has left
	live  int  // the elements: items that are not nil
}

// Bucket is a list of elements with an expiration. Its zero value is not
// ready: make one with [New], or call Init on one in place (an array of
// buckets, say) before any other method. A Bucket must not be copied while it
// holds elements: the copy would share its array, and its elements' indices.
type Bucket[E any, P Node[E]] struct {
	slots      slots[E]
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
	b.slots = slots[E]{}
	b.expiration = NoExpiration
}

// Linked reports whether e is in a Bucket.
func Linked[E any, P Node[E]](e P) bool { return e.Links().at != 0 }

// Remove takes e out of b, in O(1), and reports whether it was in a Bucket.
// It clears e's slot; a Bucket left with no element starts its array again
// from the front. It panics if e is in another Bucket: the caller must know
// which one holds it.
func (b *Bucket[E, P]) Remove(e P) bool {
	l := e.Links()
	if l.at == 0 {
		return false
	}
	s := &b.slots
	i := int(l.at - 1)
	if i >= len(s.items) || s.items[i] != (*E)(e) {
		panic("bucket: Remove of an element that is in another Bucket; remove it from the Bucket that holds it")
	}
	s.items[i] = nil
	s.live--
	if s.live == 0 {
		s.items = s.items[:0] // every slot is clear
	}
	l.at = 0
	return true
}

// Add appends e to b. It panics if e is in a Bucket (b included): remove it
// from there first, so that an element is never in two places.
func (b *Bucket[E, P]) Add(e P) {
	l := e.Links()
	if l.at != 0 {
		panic("bucket: Add of an element that is in a Bucket already; remove it from that Bucket first")
	}
	s := &b.slots
	if len(s.items) == cap(s.items) && 2*s.live <= len(s.items) && s.live > 0 {
		b.compact() // at least half the slots are clear: reuse them rather than grow
	}
	s.items = append(s.items, (*E)(e))
	l.at = uint32(len(s.items))
	s.live++
}

// compact moves b's elements to the front of its array, in order, and
// clears the rest.
func (b *Bucket[E, P]) compact() {
	s := &b.slots
	kept := s.items[:0]
	for _, e := range s.items {
		if e != nil {
			kept = append(kept, e)
			P(e).Links().at = uint32(len(kept))
		}
	}
	clear(s.items[len(kept):])
	s.items = kept
}

// Empty reports whether b holds no element.
func (b *Bucket[E, P]) Empty() bool { return b.slots.live == 0 }

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
// remove elements of this flush other than the one it was given. b keeps its
// array for the elements added after the flush, unless fn added some or the
// array is far larger than what it held (minKept).
func (b *Bucket[E, P]) Flush(fn func(P)) {
	b.expiration = NoExpiration
	items := b.slots.items
	if b.slots.live == 0 {
		return
	}
	flushed := b.slots.live
	b.slots = slots[E]{} // fn may add to b: a new array for those
	for i, e := range items {
		if e == nil {
			continue
		}
		items[i] = nil
		P(e).Links().at = 0
		fn(P(e))
	}
	if b.slots.items == nil && cap(items) <= 2*flushed+minKept {
		b.slots.items = items[:0] // every slot is clear
	}
}

// minKept is the capacity a Bucket's array may keep past a flush whatever
// the flush found in it: an array more than twice the elements it held, and
// larger than this, is let go, so that a bucket that was once crowded does
// not hold its largest array for ever.
const minKept = 64

// All returns an iterator over b's elements in the order they were added. The
// body may remove the element it was just given, and nothing else of b.
func (b *Bucket[E, P]) All() iter.Seq[P] {
	return func(yield func(P) bool) {
		s := &b.slots
		for i := 0; i < len(s.items); i++ {
			if e := s.items[i]; e != nil && !yield(P(e)) {
				return
			}
		}
	}
}
