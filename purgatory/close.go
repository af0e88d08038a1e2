package purgatory

import (
	"context"
	"errors"

	"github.com/purgatory-go/purgatory/internal/inflight"
)

// ErrShutdownInCallback is returned by Shutdown when it is called from inside
// a callback that it would have to wait for: it has closed the purgatory as
// Close does and waited for nothing.
var ErrShutdownInCallback = errors.New("purgatory: Shutdown called from a callback: closed, waited for nothing; call Close there")

// Close ends every pending operation now with Outcome Closed, running
// OnComplete (not OnExpiration: shutting down is not a timeout) on the calling
// goroutine, and then stops the timing wheel if the purgatory created it.
// Nothing is dropped silently: an operation being added while Close runs is
// ended either by Close or by TryCompleteElseWatch itself. A panic in a
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
// before it (they find their operations ended, or end them themselves): use
// Shutdown for that. In an http.Server with long polls parked here, register
// Close with srv.RegisterOnShutdown before calling srv.Shutdown: Shutdown
// waits for the handlers, and the handlers wait for their operations.
func (p *Purgatory[K]) Close() {
	p.mustBeNew()
	if p.closed.Swap(true) {
		return
	}
	defer close(p.swept)
	p.core.room.wakeAll() // Admit returns once closed
	p.detachWheel()
	p.watchers.each(func(ops []entry) {
		for _, e := range ops {
			p.core.closeRecovering(e.op)
		}
	})
	if p.ownsWheel {
		p.tw.Stop()
	}
}

// Shutdown closes the purgatory as Close does and waits, until ctx is done,
// for Close's sweep, for the callbacks that its timeouts and contexts had
// started (OnComplete, OnExpiration) to return and, if the purgatory made its
// own wheel, for that wheel's Shutdown (http.Server.Shutdown's convention). It
// returns ctx's error if ctx was done first, whatever the callbacks do: the
// sweep runs on a goroutine of its own, so a blocking OnComplete holds up the
// sweep but not the caller, and the operations behind it still end, exactly
// once, when it returns. Later calls wait the same way.
//
// Shutdown does not wait for callbacks that run inside the caller's own calls
// (CheckAndComplete, TryCompleteElseWatch, ForceComplete, ForceCompleteForKey
// on other goroutines): those goroutines are the caller's to wait for, as the
// handlers' connections are http.Server's.
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
	if !p.closed.Load() {
		go p.Close() // a later call, or one that lost the race, returns at once
	}
	select {
	case <-p.swept:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := p.core.counters.inflight.Wait(ctx); err != nil {
		return err
	}
	if p.ownsWheel {
		if _, err := p.tw.Shutdown(ctx); err != nil {
			return err
		}
	}
	return nil
}

// inCallback names the frames under which the callbacks that Shutdown waits
// for run.
var inCallback = inflight.FramesOf((*Op).expire, (*Op).contextDone, (*core).closeRecovering)
