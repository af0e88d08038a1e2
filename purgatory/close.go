package purgatory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/purgatory-go/purgatory/internal/inflight"
	"github.com/purgatory-go/purgatory/internal/recovery"
	"github.com/purgatory-go/purgatory/internal/sched"
)

// ErrShutdownInCallback is returned by Shutdown when it is called from inside
// a callback that it would have to wait for: it has closed the purgatory as
// Close does and waited for nothing.
var ErrShutdownInCallback = errors.New("purgatory: Shutdown called from a callback: closed, waited for nothing; call Close there")

// Close ends every pending operation with Outcome Closed, running OnComplete
// (not OnExpiration: shutting down is not a timeout) on the calling goroutine,
// and then stops the timing wheel if the purgatory created it. An operation
// whose TryComplete runs at that moment is not waited for: Close leaves Closed
// for that try, and the operation ends when the try returns, on the trying
// goroutine (Completed, if the try passed). Nothing is dropped silently: an
// operation being added while Close runs is ended either by Close or by
// TryCompleteElseWatch itself. A panic in a
// callback during the sweep is recovered and reported (WithPanicHandler, or
// the log) and the sweep goes on, so Close always ends everything and stops
// its wheel. Close is idempotent: later calls return at once, even while the
// first one's sweep runs. Afterwards TryCompleteElseWatch ends its operation
// at once, CheckAndComplete returns 0 and CancelForKey still cancels.
//
// Close is synchronous: an OnComplete that blocks holds it up (the log names
// the operation once it has run longer than [StuckAfter]). To bound the wait,
// call Shutdown with a context instead.
//
// Close does not wait for callbacks that a timeout or a context started just
// before it (they find their operations ended, or end them themselves), nor
// for the tries under way: use Shutdown for the first. In an http.Server with long polls parked here, register
// Close with srv.RegisterOnShutdown before calling srv.Shutdown: Shutdown
// waits for the handlers, and the handlers wait for their operations.
func (p *Purgatory[K]) Close() {
	p.mustBeNew()
	sched.At("closed swap")
	if p.closed.Swap(true) {
		return
	}
	defer close(p.swept)
	p.core.room.wakeAll() // Admit returns once closed
	p.detachWheel()
	p.watchers.each(func(ops []entry) {
		for _, e := range ops {
			p.core.closeRecovering(e)
		}
	})
	if p.ownsWheel {
		p.tw.Stop()
	}
}

// Shutdown closes the purgatory as Close does and waits, until ctx is done,
// for Close's sweep, for the callbacks that its timeouts and contexts had
// started (OnComplete, OnExpiration) to return and, if the purgatory made its
// own wheel, for that wheel's Shutdown (http.Server.Shutdown's convention).
// If ctx is done first it returns, whatever the callbacks do, an error that
// wraps ctx's error (errors.Is(err, context.DeadlineExceeded) tells) and
// names the callbacks still running: each operation's type, its outcome, how
// long it has run and the call it holds up (at most three, and how many in
// all); it logs the same at level Warn. The sweep runs on a goroutine of its
// own, so a blocking OnComplete holds up the sweep but not the caller, and the
// operations behind it still end, exactly once, when it returns. Later calls
// wait the same way.
//
// Shutdown does not wait for callbacks that run inside the caller's own calls
// (CheckAndComplete, HandOff, Advance, TryCompleteElseWatch, ForceComplete,
// ForceCompleteForKey on other goroutines), which include the callbacks of the
// operations whose tries were under way when Close, a timeout or a context
// left its outcome for them: those goroutines are the caller's to wait for,
// as the handlers' connections are http.Server's.
//
// Do not call Shutdown from an operation's callback: it would wait for
// itself. Called from one that it counts (OnComplete or OnExpiration run by a
// timeout, a context or Close's sweep), it closes the purgatory, waits for
// nothing, and returns [ErrShutdownInCallback]. Call Close there.
func (p *Purgatory[K]) Shutdown(ctx context.Context) error {
	p.mustBeNew()
	if inCallback.OnStack() {
		p.Close()
		return ErrShutdownInCallback
	}
	if !p.isClosed() {
		go p.Close() // a later call, or one that lost the race, returns at once
	}
	select {
	case <-p.swept:
	case <-ctx.Done():
		return p.shutdownError(ctx)
	}
	if err := p.core.counters.inflight.Wait(ctx); err != nil {
		return p.shutdownError(ctx)
	}
	if p.ownsWheel {
		if _, err := p.tw.Shutdown(ctx); err != nil {
			return err
		}
	}
	return nil
}

// shutdownError is Shutdown's error once ctx is done: it wraps ctx's error,
// names the callbacks still running, and says the same to the logger.
func (p *Purgatory[K]) shutdownError(ctx context.Context) error {
	c := &p.core
	count, list := c.describe(c.dog.current(time.Now()), time.Now())
	if list == "" {
		list = "none is tracked (a panic handler runs, or a callback the watch could not track)"
	}
	err := fmt.Errorf("purgatory %q: Shutdown: %w with %s operation callbacks still running: %s", p.name, ctx.Err(), count, list)
	recovery.Logger(c.settings.logger).Warn(fmt.Sprintf("purgatory %q: Shutdown's context ended with %s operation callbacks (OnComplete, OnExpiration) still running; "+
		"their operations still end, once each, when they return", p.name, count), "err", ctx.Err(), "running", list)
	return err
}

// inCallback names the frames under which the callbacks that Shutdown waits
// for run.
var inCallback = inflight.FramesOf((*Op).expire, (*Op).contextDone, (*core).closeRecovering)
