package testkit

import "runtime"

// LiveHeap returns the bytes of live heap objects after a full collection
// (two: the first may leave objects that finalizers or sweeping free only
// at the next).
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
