package main

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestBatchStoreKeepsWhatItWasGiven adds batches of every size, from a few
// bytes to more than a segment, drops the oldest now and then, and checks
// after each step that every batch held reads back as it was added, alone
// and in runs that cross segments, and that a segment is freed once its
// batches are all dropped.
func TestBatchStoreKeepsWhatItWasGiven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s batchStore
	var want [][]byte // the batches held, oldest first
	var wantPos []int64
	size := int64(0)
	offset := int64(0)
	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 3 && len(want) > 0: // drop the oldest few
			n := 1 + rng.IntN(len(want))
			s.dropFirst(n)
			want, wantPos = want[n:], wantPos[n:]
		default:
			n := 1 + rng.IntN(300)
			if r < 5 {
				n = maxSegment/2 + rng.IntN(maxSegment) // some larger than a segment
			}
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			span := int64(1 + rng.IntN(5))
			got := s.add(data, offset, offset+span-1)
			if !bytes.Equal(got, data) {
				t.Fatalf("step %d: add returned %d bytes unlike the %d given", step, len(got), n)
			}
			want, wantPos = append(want, data), append(wantPos, size)
			offset += span
			size += int64(n)
		}
		checkStore(t, step, &s, want, wantPos, size)
	}
}

func checkStore(t *testing.T, step int, s *batchStore, want [][]byte, wantPos []int64, size int64) {
	t.Helper()
	if s.len() != len(want) || s.size != size {
		t.Fatalf("step %d: %d batches, size %d; want %d and %d", step, s.len(), s.size, len(want), size)
	}
	for i := range want {
		if !bytes.Equal(s.bytes(i), want[i]) || s.index[i].pos != wantPos[i] {
			t.Fatalf("step %d: batch %d of %d reads back wrong (at %d; want %d)", step, i, len(want), s.index[i].pos, wantPos[i])
		}
		if got := s.find(s.index[i].last); got != i {
			t.Fatalf("step %d: find(%d) = %d; want %d", step, s.index[i].last, got, i)
		}
	}
	if len(want) > 0 {
		i := step % len(want)
		j := i + 1 + step%7
		j = min(j, len(want))
		if got := s.appendBatches([]byte("x"), i, j); !bytes.Equal(got, append([]byte("x"), bytes.Join(want[i:j], nil)...)) {
			t.Fatalf("step %d: batches %d to %d read back wrong", step, i, j-1)
		}
	}
	first := size
	if len(want) > 0 {
		first = wantPos[0]
	}
	// The segments held: the one holding the first batch, and each after it.
	if len(s.segs) > 1 && s.segs[1].pos <= first {
		t.Fatalf("step %d: segment at %d is kept though every batch in it was dropped (the first held is at %d)", step, s.segs[0].pos, first)
	}
}

// TestBatchStoreHoldsFewPointers: a partition's many small batches cost the
// collector one pointer a segment, not one a batch.
func TestBatchStoreHoldsFewPointers(t *testing.T) {
	var s batchStore
	data := make([]byte, 150)
	const n = 100_000
	for i := range int64(n) {
		s.add(data, i, i)
	}
	// 15 MB: the first segments double from 4 KiB, the rest are 1 MiB.
	if got, most := len(s.segs), 8+int(n*150/maxSegment)+1; got > most {
		t.Errorf("%d batches of 150 bytes in %d segments; want at most %d", n, got, most)
	}
}
