package bucket

import "iter"

// All exposes Bucket.all to the external tests.
func All[T any](b *Bucket[T]) iter.Seq[*Entry[T]] { return b.all() }
