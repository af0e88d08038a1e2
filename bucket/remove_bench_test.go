package bucket_test

import (
	"math/rand/v2"
	"testing"

	"github.com/purgatory-go/purgatory/bucket"
)

// BenchmarkRemoveCold removes, in random order, the elements of 64 lists of
// 16,384 that lie in random order over 64 MiB, as Stop takes timers out of a
// wheel's buckets when their operations complete: the element is the caller's
// (a Stop has just read it), what else a removal touches is not. The time is
// per element.
func BenchmarkRemoveCold(b *testing.B) {
	const n = 1 << 20
	els := make([]spread, n)
	rng := rand.New(rand.NewPCG(3, 4))
	order := rng.Perm(n)
	stops := rng.Perm(n)
	lists := make([]bucket.Bucket[spread, *spread], 64)
	for b.Loop() {
		b.StopTimer()
		spreadLists(lists, els, order)
		b.StartTimer()
		for _, j := range stops {
			e := &els[j]
			e.when++ // the caller has the element's line: a Stop has just locked its timer
			lists[e.list].Remove(e)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
}
