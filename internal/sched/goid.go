//go:build purgatorycheck && (amd64 || arm64)

package sched

import (
	"sync"
	"unsafe"
)

// getg returns the running goroutine's g, the runtime's record of it.
func getg() unsafe.Pointer

// goidOffset is where in a g its goroutine ID lies, found once by
// comparing the words of a g with the ID that runtime.Stack prints (the
// runtime keeps the offset to itself); -1 if not found.
var goidOffset = sync.OnceValue(func() int {
	want, g := stackGoid(), getg()
	for off := 0; off < 512; off += 8 {
		if *(*int64)(unsafe.Add(g, off)) == want {
			return off
		}
	}
	return -1
})

// goid is the calling goroutine's ID: read from its g at the offset found,
// which costs a load, where runtime.Stack formats the whole stack.
func goid() int64 {
	if off := goidOffset(); off >= 0 {
		return *(*int64)(unsafe.Add(getg(), off))
	}
	return stackGoid()
}
