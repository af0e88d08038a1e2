package bucket_test

import (
	"math/rand/v2"
	"testing"

	"github.com/purgatory-go/purgatory/bucket"
)

// spread is an element the size of a timer in an operation, on a line of its
// own, so that a list of them in random order is a chain of cache misses.
type spread struct {
	links bucket.Links[spread]
	list  int32 // which of the benchmark's lists holds it, as a wheel computes from a deadline
	when  int64
	_     [48]byte // 64 bytes in all
}

func (s *spread) Links() *bucket.Links[spread] { return &s.links }

// spreadLists empties lists and deals els out to them in the given order,
// round the lists, each element recording which list holds it.
func spreadLists(lists []bucket.Bucket[spread, *spread], els []spread, order []int) {
	for i := range lists {
		lists[i].Init()
	}
	for i, j := range order {
		lists[i%len(lists)].Add(&els[j])
		els[j].list = int32(i % len(lists))
	}
}

// BenchmarkFlushCold flushes 64 lists of 16,384 elements that lie in random
// order over 64 MiB, as a wheel's bucket holds timers armed far apart in
// time: each element a cache miss. fn reads the element's deadline and hands
// it on, as the wheel's cascade does a due timer. The time is per element.
func BenchmarkFlushCold(b *testing.B) {
	const n = 1 << 20
	els := make([]spread, n)
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	type job struct {
		s    *spread
		when int64
	}
	due := make([]job, 0, n)
	fn := func(s *spread) { // as the wheel's cascade: a due timer is handed on
		if s.when <= 0 {
			due = append(due, job{s, s.when})
		}
	}
	lists := make([]bucket.Bucket[spread, *spread], 64)
	for b.Loop() {
		b.StopTimer()
		spreadLists(lists, els, order)
		due = due[:0]
		b.StartTimer()
		for i := range lists {
			lists[i].Flush(fn)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
}
