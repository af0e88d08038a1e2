package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// partitionLog is one partition: the leader's log and what its followers have
// copied. Every field is guarded by mu; nobody calls out while holding it.
//
// Offsets follow Kafka: the log start offset (start) is the first offset
// still held, which retention moves (configs.go); the log end offset (leo) is
// the next offset to be written; the high watermark (hw) is the first offset
// not yet held by every in-sync replica (isr.go), and consumers see only what
// lies below it. Followers see up to leo.
type partitionLog struct {
	topic string
	index int32
	owner *topic      // its configs; immutable
	gone  atomic.Bool // its topic was deleted: every request on it is answered UNKNOWN_TOPIC_OR_PARTITION

	mu        sync.Mutex
	batches   batchStore // in offset order, each starting where the last ended; positions are counted from the log's creation
	start     int64      // the log start offset: the first batch's base, or end if none is held
	end       int64      // the log end offset
	hw        int64
	followers []int64        // each follower's log end offset, as its last fetch said
	copies    []*replicaCopy // each follower's copy, which it alone writes (not under mu)
	isr       []follower     // each follower's place in the ISR (isr.go)
	producers map[int64]*sequences
}

func newPartitionLog(t *topic, index int32, replicas int) *partitionLog {
	l := &partitionLog{topic: t.name, index: index, owner: t, followers: make([]int64, replicas-1), producers: map[int64]*sequences{}}
	now := time.Now()
	for range replicas - 1 {
		l.copies = append(l.copies, new(replicaCopy))
		l.isr = append(l.isr, follower{inSync: true, caughtUp: now})
	}
	return l
}

func (l *partitionLog) String() string { return fmt.Sprintf("%s-%d", l.topic, l.index) }

// leo returns the log end offset. The caller holds mu.
func (l *partitionLog) leo() int64 { return l.end }

var errCorrupt = errors.New("record batch is truncated or not magic v2")

// splitBatches checks that records is a sequence of whole v2 record batches
// and returns them.
func splitBatches(records []byte) ([][]byte, error) {
	var out [][]byte
	for len(records) > 0 {
		if len(records) < batchHeaderLen {
			return nil, errCorrupt
		}
		n := 12 + int(int32(binary.BigEndian.Uint32(records[offLength:])))
		if n < batchHeaderLen || n > len(records) || records[offMagic] != 2 {
			return nil, errCorrupt
		}
		out = append(out, records[:n:n])
		records = records[n:]
	}
	if len(out) == 0 {
		return nil, errCorrupt
	}
	return out, nil
}

// appendBatch writes one batch at the log's end and returns the offsets it
// took. A batch an idempotent producer sent before (a retry) is not written
// again: its first write's offsets are returned. A gap in a producer's
// sequence is refused.
func (l *partitionLog) appendBatch(data []byte) (base, last int64, err error) {
	span := int64(int32(binary.BigEndian.Uint32(data[offLastDelta:]))) + 1
	if span < 1 {
		return 0, 0, errCorrupt
	}
	pid := int64(binary.BigEndian.Uint64(data[offProducerID:]))
	seq := int32(binary.BigEndian.Uint32(data[offFirstSequence:]))

	l.mu.Lock()
	defer l.mu.Unlock()
	var ps *sequences
	if pid >= 0 {
		ps = l.producers[pid]
		if ps == nil {
			ps = &sequences{}
			l.producers[pid] = ps
		}
		if b, l, ok := ps.seen(seq); ok {
			return b, l, nil
		}
		if !ps.next(seq) {
			return 0, 0, errOutOfOrder
		}
	}
	base = l.leo()
	last = base + span - 1
	own := l.batches.add(data, base, last) // a copy: the request's buffer is reused
	binary.BigEndian.PutUint64(own[offBaseOffset:], uint64(base))
	l.end = last + 1
	if ps != nil {
		ps.record(seq, int32(span), base, last)
	}
	l.updateHW() // moves at once if no follower is in sync
	return base, last, nil
}

var errOutOfOrder = errors.New("out of order sequence number")

// sequences remembers an idempotent producer's last five batches on one
// partition (Kafka keeps as many), so that a retried batch is acknowledged
// with its first offsets instead of being written twice.
type sequences struct {
	recent [5]struct {
		seq, end   int32 // end: the next sequence expected after the batch
		base, last int64
	}
	n int // batches recorded, at most len(recent)
	i int // where the next one goes
}

func (s *sequences) seen(seq int32) (base, last int64, ok bool) {
	for _, r := range s.recent[:s.n] {
		if r.seq == seq {
			return r.base, r.last, true
		}
	}
	return 0, 0, false
}

// next reports whether seq continues the producer's sequence.
func (s *sequences) next(seq int32) bool {
	if s.n == 0 {
		return true // a producer new to this partition may start anywhere
	}
	prev := s.recent[(s.i+len(s.recent)-1)%len(s.recent)]
	return seq == prev.end
}

func (s *sequences) record(seq, span int32, base, last int64) {
	end := seq + span
	if end < 0 {
		end -= -1 << 31 // sequences wrap at MaxInt32 to 0
	}
	s.recent[s.i] = struct {
		seq, end   int32
		base, last int64
	}{seq, end, base, last}
	s.i = (s.i + 1) % len(s.recent)
	s.n = min(s.n+1, len(s.recent))
}

// posOf returns how many bytes of the log lie before the batch holding offset.
// The caller holds mu.
func (l *partitionLog) posOf(offset int64) int64 {
	if i := l.batches.find(offset); i < l.batches.len() {
		return l.batches.index[i].pos
	}
	return l.batches.size
}

// bytesBefore returns how many bytes of the log lie before the batch holding
// offset: a fetch from offset has n bytes to read once readableEnd reaches
// bytesBefore(offset)+n.
func (l *partitionLog) bytesBefore(offset int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.posOf(offset)
}

// readableEnd returns how many bytes of the log a reader may read from its
// start: up to the high watermark for a consumer, the log end for a
// follower. It only grows (the log is never truncated at its end, and
// retention's drops at its start do not move the positions, counted from
// the log's creation), so it is the level of the reader's fetch key.
func (l *partitionLog) readableEnd(follower bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.posOf(l.limit(follower))
}

// limit is how far a reader may read: the high watermark for a consumer, the
// log end for a follower. The caller holds mu.
func (l *partitionLog) limit(follower bool) int64 {
	if follower {
		return l.leo()
	}
	return l.hw
}

// available returns the bytes a reader from offset could be sent now, and
// whether offset is in the log's range at all.
func (l *partitionLog) available(offset int64, follower bool) (n int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.start || offset > l.leo() {
		return 0, false
	}
	end := l.limit(follower)
	if offset >= end {
		return 0, true
	}
	return l.posOf(end) - l.posOf(offset), true
}

// read returns the batches from the one holding offset up to the reader's
// limit and at most maxBytes, though always the first whole batch (Kafka's
// KIP-74, so that a batch larger than maxBytes cannot stall a reader), and the
// log start offset and high watermark to report. An offset before the log
// start (retention dropped it) or past the log end is not ok.
func (l *partitionLog) read(offset int64, maxBytes int32, follower bool) (records []byte, start, hw int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.start || offset > l.leo() {
		return nil, l.start, l.hw, false
	}
	end := l.limit(follower)
	i := l.batches.find(offset)
	j, n := i, int64(0)
	for ; j < l.batches.len() && l.batches.index[j].base < end; j++ {
		b := l.batches.index[j]
		if j > i && n+b.n > int64(maxBytes) {
			break
		}
		n += b.n
	}
	return l.batches.appendBatches(nil, i, j), l.start, l.hw, true
}

// offsets returns the log's start, high watermark and end.
func (l *partitionLog) offsets() (start, hw, leo int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start, l.hw, l.leo()
}

// retain drops the oldest batches that r no longer keeps, among those every
// in-sync replica holds (below the high watermark), from the leader's log and
// the followers' copies, and reports whether the log start moved: batches
// older than r.age (by their newest record's timestamp), and, while the
// partition stays at least r.bytes without it, the oldest (Kafka's
// deleteRetentionSizeBreachedSegments, a batch for a segment). The memory
// goes a segment of the batchStore at a time.
func (l *partitionLog) retain(r retention, now time.Time) bool {
	start, moved := l.retainLeader(r, now)
	if moved {
		for _, c := range l.copies {
			c.dropBefore(start)
		}
	}
	return moved
}

func (l *partitionLog) retainLeader(r retention, now time.Time) (start int64, moved bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.batches.size - l.posOf(l.start)
	n := 0
	for i, b := range l.batches.index {
		if b.last >= l.hw {
			break
		}
		old := r.age >= 0 && now.Sub(time.UnixMilli(maxTimestamp(l.batches.bytes(i)))) > r.age
		big := r.bytes >= 0 && held-b.n >= r.bytes
		if !old && !big {
			break
		}
		held -= b.n
		n++
	}
	if n == 0 {
		return l.start, false
	}
	l.batches.dropFirst(n)
	l.start = l.end
	if l.batches.len() > 0 {
		l.start = l.batches.index[0].base
	}
	return l.start, true
}

// maxTimestamp is a batch's newest record's timestamp, in milliseconds.
func maxTimestamp(data []byte) int64 { return int64(binary.BigEndian.Uint64(data[offMaxTimestamp:])) }
