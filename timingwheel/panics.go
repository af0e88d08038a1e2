package timingwheel

import (
	"time"

	"github.com/purgatory-go/purgatory/internal/recovery"
)

// observe tells the observer each timer's lateness at its hand-off at now. A
// panicking observer is recovered and reported like a callback, so that it
// cannot kill the driver; the timers it was told about still run.
func (tw *TimingWheel) observe(due []job, now instant) {
	defer tw.recoverPanic("the Observer")
	for _, j := range due {
		tw.observer.TimerFired(time.Duration(now - j.when)) // due: when <= now
	}
}

// run calls j's callback, recovering a panic so that it cannot kill the driver
// or a worker and lose the timers behind it. With a StartObserver it first
// tells how late the callback starts (a panic there is reported, and the
// callback runs all the same).
func (tw *TimingWheel) run(j job) {
	defer tw.inflight.Done()
	if tw.starts != nil {
		tw.started(j.when)
	}
	defer tw.recoverPanic("a timer's callback")
	j.t.h.Fire()
}

func (tw *TimingWheel) started(when instant) {
	defer tw.recoverPanic("the Observer")
	tw.starts.CallbackStarted(max(time.Duration(tw.now()-when), 0))
}

// recoverPanic is deferred around user code. It counts a recovered panic and
// reports it (internal/recovery: the panic handler, or the log with its
// stack), from inside the deferred recovery so that the stack shows where the
// panic happened.
func (tw *TimingWheel) recoverPanic(where string) {
	if r := recover(); r != nil {
		tw.panics.Add(1)
		recovery.Report(recovery.Logger(tw.logger), "timingwheel", where, r, tw.onPanic)
	}
}
