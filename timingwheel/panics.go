package timingwheel

import (
	"time"

	"github.com/purgatory-go/purgatory/internal/recovery"
)

// observe tells the observer each timer's lateness at its hand-off at now. A
// panicking observer is recovered and reported like a callback, so that it
// cannot kill the driver; the timers it was told about still run. One that
// calls runtime.Goexit ends the goroutine, driver or AdvanceClock's caller:
// the batch is handed over from a new one (carryOn), untold.
func (tw *TimingWheel) observe(due []job, now instant, driving bool) {
	returned := false
	defer func() {
		if !returned { // the goroutine that filled due is ending: due is ours
			tw.carryOn(func() { tw.hand(due, driving) }, driving)
		}
	}()
	tw.tellObserver(due, now)
	returned = true
}

func (tw *TimingWheel) tellObserver(due []job, now instant) {
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
	if tw.starts != nil {
		tw.started(j)
	}
	tw.fire(j)
}

// fire calls j's callback and counts it returned. Every callback runs under
// it (inCallback).
func (tw *TimingWheel) fire(j job) {
	defer tw.inflight.Done()
	defer tw.recoverPanic("a timer's callback")
	j.t.h.Fire()
}

// started tells the StartObserver how late j's callback starts. One that
// calls runtime.Goexit ends the goroutine before the callback runs: the
// callback then runs on a goroutine of its own, beside the executor's.
func (tw *TimingWheel) started(j job) {
	returned := false
	defer func() {
		if !returned {
			go tw.fire(j)
		}
	}()
	tw.tellStarted(j.when)
	returned = true
}

func (tw *TimingWheel) tellStarted(when instant) {
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
