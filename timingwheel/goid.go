package timingwheel

import (
	"bytes"
	"runtime"
	"strconv"
)

// goid returns the calling goroutine's ID. Go deliberately offers no API for it;
// the wheel needs it for one question only, "is Stop being called from a
// callback?", which decides whether Stop may wait for the goroutines that run
// callbacks (waiting for itself would deadlock). It is read when a callback
// goroutine starts and when Stop is called, never per timer.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("timingwheel: cannot parse goroutine ID from runtime.Stack: " + err.Error())
	}
	return id
}
