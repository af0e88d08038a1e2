package timingwheel

import (
	"time"

	"github.com/purgatory-go/purgatory/internal/recovery"
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
func (tw *TimingWheel) run(t *timer) {
	defer tw.inflight.Done()
	defer tw.recoverPanic("a timer's callback")
	t.h.Fire()
}

// recoverPanic is deferred around user code. It counts a recovered panic and
// reports it (internal/recovery: the panic handler, or the log with its
// stack), from inside the deferred recovery so that the stack shows where the
// panic happened.
func (tw *TimingWheel) recoverPanic(where string) {
	if r := recover(); r != nil {
		tw.panics.Add(1)
		recovery.Report("timingwheel", where, r, tw.onPanic)
	}
}
