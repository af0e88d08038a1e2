//go:build purgatorycheck && !amd64 && !arm64

package sched

// goid is the calling goroutine's ID, from its stack's first line.
func goid() int64 { return stackGoid() }
