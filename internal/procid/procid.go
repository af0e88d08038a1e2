// Package procid tells which P (the runtime's processor: one of GOMAXPROCS)
// the calling goroutine runs on, as a hint for choosing a shard.
//
// Go's runtime keeps its own timers per P so that goroutines on different
// cores never share a timer heap, a lock or a cache line; a sharded structure
// outside the runtime can only do the same if it knows the P. Go offers no
// public way to ask (goroutine and processor IDs are left out on purpose), so
// this package reaches runtime.procPin by linkname: the runtime marks it as
// kept for exactly this use ("Do not remove or change the type signature",
// go.dev/issue/67401). It costs about 3 ns. The ways without linkname
// measured worse on the wheel's add+stop path: a per-thread random draw
// (math/rand/v2, about 5 ns) spreads one goroutine's timers over every
// shard, so each shard's buckets and lock move between cores; a sync.Pool of
// shard tokens is per P but costs about 12 ns, a tenth of an add+stop.
//
// The answer is a hint, never a guarantee: the goroutine may move to another
// P as soon as Hint returns, so nothing may depend on it for correctness.
package procid

import (
	_ "unsafe" // for go:linkname
)

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Hint returns the index of the P the calling goroutine runs on, from 0 to
// GOMAXPROCS-1 at the time of the call.
func Hint() int {
	p := procPin()
	procUnpin()
	return p
}
