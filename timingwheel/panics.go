package timingwheel

import (
	"log"
	"runtime/debug"
	"time"
)

// observe tells the observer each timer's lateness. A panicking observer is
// recovered and reported like a callback, so that it cannot kill the driver;
// the timers it was told about still run.
func (tw *TimingWheel) observe(late []time.Duration) {
	defer tw.recoverPanic("the Observer")
	for _, l := range late {
		tw.observer.TimerFired(l)
	}
}

// run calls t's callback, recovering a panic so that it cannot kill the driver or
// a worker and lose the timers behind it.
func (tw *TimingWheel) run(t *Timer) {
	defer tw.inflight.done()
	defer tw.recoverPanic("a timer's callback")
	t.f()
}

// recoverPanic is deferred around user code. It counts a recovered panic and
// passes it to the panic handler or, with none, logs it once with its stack
// through the standard log package (net/http's convention for a handler's
// panic). It runs inside the deferred recovery, so the stack shows where the
// panic happened. A handler that panics itself is logged too, never allowed to
// kill the goroutine that runs other timers.
func (tw *TimingWheel) recoverPanic(where string) {
	r := recover()
	if r == nil {
		return
	}
	tw.panics.Add(1)
	if h := tw.onPanic; h != nil {
		if handled(h, r) {
			return
		}
		where += " (and the panic handler panicked too)"
	}
	log.Printf("timingwheel: recovered a panic from %s: %v\n%s", where, r, debug.Stack())
}

// handled calls h(r) and reports whether it returned normally; a panic in h is
// logged.
func handled(h func(any), r any) (ok bool) {
	defer func() {
		if !ok {
			log.Printf("timingwheel: the panic handler panicked: %v\n%s", recover(), debug.Stack())
		}
	}()
	h(r)
	return true
}
