package purgatory

import "github.com/purgatory-go/purgatory/internal/recovery"

// Where a panic in user code goes. On the caller's own goroutine
// (TryCompleteElseWatch, CheckAndComplete, CancelForKey, ForceComplete) it
// continues to the caller once the books balance. On a goroutine the library
// owns (a timeout on the wheel, a context's AfterFunc, Close's sweep) there is
// no caller to give it to: it is recovered, counted in Stats.Panics and passed
// to the WithPanicHandler function or, with none, logged once with its stack
// to the purgatory's logger (WithLogger; slog.Default()), as net/http logs a
// handler's panic.

// recoverPanic is deferred around user code on the library's goroutines.
func (c *core) recoverPanic(where string) {
	if r := recover(); r != nil {
		c.report(where, r)
	}
}

// closeRecovering ends e's use with Outcome Closed, recovering and reporting
// a panic from its callbacks.
func (c *core) closeRecovering(e entry) {
	defer c.recoverPanic("OnComplete or Recycle of an operation ended by Close")
	e.op.endAt(e.use(), e.impl, Closed)
}

// report runs inside the deferred recovery, so the stack still shows where
// the callback panicked.
func (c *core) report(where string, r any) {
	c.counters.panics.Add(1)
	recovery.Report(recovery.Logger(c.settings.logger), "purgatory", where, r, c.settings.onPanic)
}
