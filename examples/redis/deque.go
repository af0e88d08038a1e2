package main

// deque is a Redis list: a ring of elements that grows by doubling, with
// O(1) pushes and pops at both ends and O(1) access by index. Not safe for
// concurrent use: the server's lock guards every list.
type deque struct {
	ring [][]byte // len(ring) is a power of two, or 0
	head int      // index in ring of element 0
	n    int
}

func (d *deque) len() int { return d.n }

// at returns element i, 0 <= i < n.
func (d *deque) at(i int) []byte { return d.ring[(d.head+i)&(len(d.ring)-1)] }

func (d *deque) set(i int, v []byte) { d.ring[(d.head+i)&(len(d.ring)-1)] = v }

func (d *deque) grow() {
	if d.n < len(d.ring) {
		return
	}
	nr := make([][]byte, max(2*len(d.ring), 8))
	for i := range d.n {
		nr[i] = d.at(i)
	}
	d.ring, d.head = nr, 0
}

func (d *deque) pushFront(v []byte) {
	d.grow()
	d.head = (d.head - 1) & (len(d.ring) - 1)
	d.ring[d.head] = v
	d.n++
}

func (d *deque) pushBack(v []byte) {
	d.grow()
	d.ring[(d.head+d.n)&(len(d.ring)-1)] = v
	d.n++
}

func (d *deque) popFront() []byte {
	v := d.ring[d.head]
	d.ring[d.head] = nil
	d.head = (d.head + 1) & (len(d.ring) - 1)
	d.n--
	d.shrink()
	return v
}

func (d *deque) popBack() []byte {
	i := (d.head + d.n - 1) & (len(d.ring) - 1)
	v := d.ring[i]
	d.ring[i] = nil
	d.n--
	d.shrink()
	return v
}

// shrink lets go of a ring that is mostly empty.
func (d *deque) shrink() {
	if len(d.ring) > 64 && d.n < len(d.ring)/8 {
		nr := make([][]byte, len(d.ring)/4)
		for i := range d.n {
			nr[i] = d.at(i)
		}
		d.ring, d.head = nr, 0
	}
}

// push adds v at the left end (left) or the right one.
func (d *deque) push(v []byte, left bool) {
	if left {
		d.pushFront(v)
	} else {
		d.pushBack(v)
	}
}

// pop removes an element from the left end (left) or the right one; the
// list must not be empty.
func (d *deque) pop(left bool) []byte {
	if left {
		return d.popFront()
	}
	return d.popBack()
}

// slice returns elements from to to (inclusive), clamped by the caller.
func (d *deque) slice(from, to int) [][]byte {
	out := make([][]byte, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, d.at(i))
	}
	return out
}

// replace makes the list the elements of vs, in order.
func (d *deque) replace(vs [][]byte) {
	d.ring, d.head, d.n = nil, 0, 0
	for _, v := range vs {
		d.pushBack(v)
	}
}
