package main

import (
	"slices"
	"sort"
)

// batchStore holds record batches in offset order: their bytes back to back
// in a few large buffers (segments, as Kafka's log keeps them in segment
// files) and, for each batch, where it lies, in an index that holds no
// pointers. The garbage collector so has one pointer a segment to follow,
// not one a batch: with a slice a batch, every collection marked each batch
// the broker held, and its marking grew with the log.
//
// A batch never spans two segments. A segment is freed once every batch in
// it is dropped, so dropping the oldest batches frees memory a segment at a
// time, as deleting a segment file does in Kafka.
//
// It is not safe for concurrent use: its owner's mutex guards it.
type batchStore struct {
	index []stored  // in offset order
	segs  []segment // in position order; the last is where batches are added
	size  int64     // bytes ever added: positions are counted from the store's creation
}

// stored is where one batch lies.
type stored struct {
	base, last int64 // the offsets it spans
	pos        int64 // bytes of the store before it
	n          int64 // its length
}

// segment is a buffer of batches: data[0] is at position pos.
type segment struct {
	pos  int64
	data []byte // its length is what is used
}

// The first segment is small, for a partition that holds little; each next
// one is twice the last, up to maxSegment. A batch larger than that has a
// segment of its own size.
const (
	firstSegment = 4 << 10
	maxSegment   = 1 << 20
)

// len returns how many batches it holds.
func (s *batchStore) len() int { return len(s.index) }

// add copies data, a batch spanning base to last, to the end and returns the
// copy, which the caller may still amend: the leader writes the batch's
// offset into it.
func (s *batchStore) add(data []byte, base, last int64) []byte {
	seg := s.room(len(data))
	at := len(seg.data)
	seg.data = append(seg.data, data...)
	s.index = append(s.index, stored{base: base, last: last, pos: s.size, n: int64(len(data))})
	s.size += int64(len(data))
	return seg.data[at:len(seg.data):len(seg.data)]
}

// room returns the last segment, or a new one if the last has no room for n
// more bytes.
func (s *batchStore) room(n int) *segment {
	size := firstSegment
	if k := len(s.segs); k > 0 {
		last := &s.segs[k-1]
		if cap(last.data)-len(last.data) >= n {
			return last
		}
		size = min(2*cap(last.data), maxSegment)
	}
	s.segs = append(s.segs, segment{pos: s.size, data: make([]byte, 0, max(size, n))})
	return &s.segs[len(s.segs)-1]
}

// find returns the index of the batch holding offset, or len() if none does
// (offset is at or past the end).
func (s *batchStore) find(offset int64) int {
	return sort.Search(len(s.index), func(i int) bool { return s.index[i].last >= offset })
}

// bytes returns batch i.
func (s *batchStore) bytes(i int) []byte {
	b := s.index[i]
	seg := &s.segs[s.segmentIndex(b.pos)]
	at := b.pos - seg.pos
	return seg.data[at : at+b.n : at+b.n]
}

// appendBatches appends batches i to j-1 to dst and returns it.
func (s *batchStore) appendBatches(dst []byte, i, j int) []byte {
	if i >= j {
		return dst
	}
	from, to := s.index[i].pos, s.index[j-1].pos+s.index[j-1].n
	dst = slices.Grow(dst, int(to-from))
	for k := s.segmentIndex(from); from < to; k++ {
		seg := s.segs[k]
		end := min(to, seg.pos+int64(len(seg.data)))
		dst = append(dst, seg.data[from-seg.pos:end-seg.pos]...)
		from = end // the next segment starts where seg's data ends
	}
	return dst
}

// dropFirst drops the n oldest batches and frees the segments that held only
// those.
func (s *batchStore) dropFirst(n int) {
	s.index = s.index[n:]
	first := s.size // the first position still held
	if len(s.index) > 0 {
		first = s.index[0].pos
	}
	k := 0
	for k+1 < len(s.segs) && s.segs[k+1].pos <= first {
		k++
	}
	clear(s.segs[:k])
	s.segs = s.segs[k:]
}

// segmentIndex returns the index of the segment holding position pos.
func (s *batchStore) segmentIndex(pos int64) int {
	return sort.Search(len(s.segs), func(k int) bool { return s.segs[k].pos > pos }) - 1
}
