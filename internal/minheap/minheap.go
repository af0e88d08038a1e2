// Package minheap is a binary min-heap of values by an int64 key, typed so
// that an entry is a value in the heap's array: a push allocates nothing but
// the array's growth, and a comparison reads a field, not an interface
// (container/heap would box every entry and call Less through an interface).
//
// The timing wheel orders the timers of its current tick by deadline with it,
// and the purgatory a key's level watches by level. Kafka's and the wheel's
// delay queue of buckets (package delayqueue) is a heap too, but a generic
// one over gods' priority queue, and stays so: it is the project's published
// part, with Kafka's name.
package minheap

// Entry is a value with the key the heap orders it by, and Seq, which orders
// entries of equal Key.
type Entry[V any] struct {
	Key   int64
	Seq   uint64
	Value V
}

// less orders entries by Key, then Seq.
func (e *Entry[V]) less(f *Entry[V]) bool {
	return e.Key < f.Key || e.Key == f.Key && e.Seq < f.Seq
}

// Heap is a binary min-heap of entries by Key, and by Seq among equal keys.
// The zero Heap is empty and ready to use. A Heap is not safe for concurrent
// use. Its slice may be read in place (h[0] is the least entry) and filtered
// in place, after which Init restores the order.
type Heap[V any] []Entry[V]

// Push adds v with key. Entries pushed with equal keys come out in no
// particular order; see PushInOrder.
func (h *Heap[V]) Push(key int64, v V) { h.PushInOrder(key, 0, v) }

// PushInOrder adds v with key and seq: of entries with equal keys, the one
// with the least seq comes out first (the purgatory passes the order in which
// operations were watched, so that ties keep it).
func (h *Heap[V]) PushInOrder(key int64, seq uint64, v V) {
	*h = append(*h, Entry[V]{key, seq, v})
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].less(&s[parent]) {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

// Pop removes and returns the entry with the least key. The heap must not be
// empty.
func (h *Heap[V]) Pop() Entry[V] {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = Entry[V]{} // drop the reference
	*h = s[:last]
	h.down(0)
	return top
}

// Init restores the heap order of a slice whose entries were changed or
// removed in place.
func (h Heap[V]) Init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h Heap[V]) down(i int) {
	for {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].less(&h[least]) {
			least = l
		}
		if r < len(h) && h[r].less(&h[least]) {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
