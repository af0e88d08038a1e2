package main

import "syscall"

// A big bulk's array is mapped from the OS, whole, as soon as its length is
// read. On one event loop a stall stops every client, and the reader's
// arrays grown on the Go heap stalled it twice over: each growth copied what
// had come (33, 67 and 134 MB for a 512 MB bulk, up to 388 ms for the last
// copy into fresh pages, another client's slowest PING 386 ms against
// redis-server's 106 ms in the load test's query-buffer workload), and the
// collector's cycle over a heap of 1.4 GB took 389 ms of wall clock
// (gctrace). A mapping is only reserved address space until bytes are
// written into it, so a client that announces a 512 MB bulk and sends
// nothing makes the server use nothing much; nothing is ever copied; and the
// collector neither sees the array nor paces by it. It is unmapped once the
// command that read it has run, or the client has gone (reader.release).
// Commands copy what they keep: a list's element, a string's value, a queued
// or pending command (ownArgs).

// offHeapMin is the least length of a bulk read into a mapped array.
const offHeapMin = 1 << 20

// reserve returns an empty array of capacity n mapped off the heap for a big
// bulk, kept in r.mapped to be unmapped; nil for a shorter one, or if no
// mapping is to be had (the caller then grows one on the heap).
func (r *reader) reserve(n int) []byte {
	if n < offHeapMin {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	r.mapped = append(r.mapped, b)
	return b[:0]
}

// freeAll unmaps every array reserve mapped: the commands that read them
// have run, or the client has gone.
func (r *reader) freeAll() {
	for _, m := range r.mapped {
		syscall.Munmap(m)
	}
	clear(r.mapped)
	r.mapped = r.mapped[:0]
}

// release gives back what the reader holds off the heap: the client has
// gone, and the reader is not used again.
func (r *reader) release() {
	r.freeAll()
	r.big, r.args, r.cmds = nil, nil, nil
}
