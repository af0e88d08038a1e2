package delayqueue

// Len exposes Queue.len to the external tests.
func Len[T comparable](q *Queue[T]) int { return q.len() }
