package purgatory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/inflight"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// ErrShutdownInCallback is returned by Shutdown when it is called from inside
// a callback that it would have to wait for: it has closed the purgatory as
// Close does and waited for nothing.
var ErrShutdownInCallback = errors.New("purgatory: Shutdown called from inside an operation's callback, which cannot wait for itself; the purgatory is closed but nothing was waited for (call Close there, and Shutdown from outside)")

// Purgatory holds operations until they complete or expire (Kafka's
// DelayedOperationPurgatory). It must be created with [New]. All its methods
// are safe for concurrent use, also from inside the operations' callbacks
// (see the package documentation, "Re-entrancy").
type Purgatory[K comparable] struct {
	name        string
	tw          *timingwheel.TimingWheel
	ownsWheel   bool
	detachWheel func() bool // stops the wheel's AfterStop from closing p
	watchers    shards[K]
	core        core // settings and counters, which each operation reaches too
	closed      atomic.Bool
	swept       chan struct{} // closed when Close's sweep has ended every operation
}

// New returns a Purgatory named name: the metrics package labels its series
// with it, so it is given once, here, and must not be empty; names must be
// unique among the purgatories whose collectors share a Prometheus registry.
// With no [WithTimingWheel] option it creates a timing wheel of its own, which
// Close stops. It returns an error wrapping [ErrInvalidOption] if the name is
// empty or an option is invalid, and one wrapping [timingwheel.ErrStopped] if
// the wheel given with WithTimingWheel has been stopped.
//
// If the wheel stops before the purgatory is closed (a shared wheel stopped
// first, in whatever order a service shuts down), the purgatory closes itself:
// its operations end with Outcome Closed, as if Close had been called, since
// no timeout could end them any more.
func New[K comparable](name string, opts ...Option) (*Purgatory[K], error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty name; name each purgatory (it labels its metrics, and must be unique per registry)", ErrInvalidOption)
	}
	c := config{shards: DefaultShards}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		o(&c)
	}
	switch {
	case c.shards < 1:
		return nil, fmt.Errorf("%w: %d shards; need at least 1", ErrInvalidOption, c.shards)
	case c.maxDelayed < 0:
		return nil, fmt.Errorf("%w: WithMaxDelayed(%d); pass a positive bound, or leave the option out for none", ErrInvalidOption, c.maxDelayed)
	case c.loggerSet && c.logger == nil:
		return nil, fmt.Errorf("%w: WithLogger(nil); pass a *slog.Logger, or leave the option out for slog.Default()", ErrInvalidOption)
	case c.wheelSet && c.wheel == nil:
		return nil, fmt.Errorf("%w: WithTimingWheel(nil); pass a wheel made with timingwheel.New, or leave the option out", ErrInvalidOption)
	}
	p := &Purgatory[K]{name: name, tw: c.wheel, swept: make(chan struct{})}
	p.core.counters = newCounters()
	p.core.settings = settings{observer: c.observer, epoch: time.Now(), onPanic: c.onPanic, maxDelayed: c.maxDelayed, logger: c.logger, name: name}
	p.core.dog = newWatchdog()
	p.watchers = newShards[K](c.shards, &p.core.counters, mayPanicToHash(reflect.TypeFor[K]()))
	if p.tw == nil {
		var opts []timingwheel.Option
		if c.logger != nil {
			opts = append(opts, timingwheel.WithLogger(c.logger))
		}
		tw, err := timingwheel.New(opts...)
		if err != nil {
			return nil, err
		}
		p.tw, p.ownsWheel = tw, true
	}
	// A stopped wheel would never expire anything. (A wheel made
	// WithManualClock is the caller's to drive.)
	if err := p.tw.Err(); err != nil {
		return nil, fmt.Errorf("purgatory: the wheel given with WithTimingWheel has been stopped; its timeouts would never run: %w", err)
	}
	p.detachWheel = p.tw.AfterStop(p.Close)
	return p, nil
}

// Name returns the name given to New.
func (p *Purgatory[K]) Name() string { return p.name }

// Observer returns the Observer given with WithObserver, or nil.
func (p *Purgatory[K]) Observer() Observer { return p.core.settings.observer }

// TimingWheel returns the wheel that runs the purgatory's timeouts: its own,
// or the one passed with WithTimingWheel. Use it for the wheel's Stats or
// metrics; the purgatory stops its own wheel on Close.
func (p *Purgatory[K]) TimingWheel() *timingwheel.TimingWheel { return p.tw }

// mustBeNew panics with a message that says what to do on a Purgatory that was
// not made by New (a zero value would divide by zero or deadlock later).
func (p *Purgatory[K]) mustBeNew() {
	if p == nil || p.tw == nil {
		panic("purgatory: Purgatory must be created with New")
	}
}

// TryCompleteElseWatch tries to complete op; if it cannot, it watches op under
// every key and tries once more, so that no completion event that lands between
// the two tries is missed, and if op still cannot complete it starts op's
// timeout (and ties it to op.Context). No other try of op runs meanwhile: a
// CheckAndComplete on one of its keys during the call makes this call try once
// more before it returns. It returns true only if this call completed op.
//
// With WithMaxDelayed, an op that cannot complete at once while the bound is
// reached is not watched: it ends at once with Outcome Shed (OnComplete runs
// on the calling goroutine) and false is returned.
//
// Keys repeated in one call are watched once. Misuses panic before anything
// changes: a nil op, zero keys, an op passed to TryCompleteElseWatch before, a
// zero op.Timeout (see Op.Timeout), or a key that cannot be hashed (such as a
// slice in a Purgatory[any]). An op ended by ForceComplete before this call is
// neither watched nor counted, and false is returned. After Close, op ends at
// once with Outcome Closed (OnComplete runs on the calling goroutine) and
// false is returned.
//
// If TryComplete panics, the call is undone before the panic continues: op is
// left unwatched, without a timeout and uncounted (and must not be passed
// again). If OnComplete panics after this call completed op, op has ended
// (Completed, and counted) and the panic continues.
func (p *Purgatory[K]) TryCompleteElseWatch(op Operation, keys ...K) bool {
	p.mustBeNew()
	o := opOf(op, "TryCompleteElseWatch")
	if len(keys) == 0 {
		panic("purgatory: TryCompleteElseWatch called with no keys; an operation must be watched under at least one")
	}
	p.watchers.checkKeys(keys)
	return p.add(op, o, func() (distinct int) {
		for i, key := range keys {
			if slices.Contains(keys[:i], key) {
				continue // watched once
			}
			if !p.watchers.watch(o, key) {
				break // ended from outside meanwhile
			}
			distinct++
		}
		return distinct
	})
}

// add is TryCompleteElseWatch and TryCompleteElseWatchAt after their checks
// of the keys: watch links o under them (until it finds o ended) and returns
// how many distinct keys it linked.
func (p *Purgatory[K]) add(op Operation, o *Op, watch func() (distinct int)) bool {
	o.checkTimeout(op)
	if !o.added.CompareAndSwap(false, true) {
		panic("purgatory: operation passed to TryCompleteElseWatch twice; use a new operation")
	}
	if !o.bind(op, &p.core, p.tw) {
		return false
	}
	if p.closed.Load() {
		o.end(Closed)
		return false
	}
	if !o.acquire() {
		return false // ForceComplete won meanwhile
	}
	held := true // the try bit, until settle lets it go
	defer func() {
		if held && o.abandon(true) { // TryComplete panicked
			o.withdraw()
		}
	}()
	ok := o.check(op)
	if !ok && p.overBound() {
		// Rather than park it: it has been tried, nothing watches it, and
		// no timeout runs for it.
		won := o.tryHeld(op, false, 0)
		held = false
		if won {
			o.complete(op, Completed)
			return true
		}
		o.end(Shed)
		return false
	}
	solo := int32(0)
	if !ok {
		if watch() == 1 {
			solo = soloBit // from now on, only its key's walk tries it
		}
		if ok = o.check(op); !ok && o.state.Load()&outcomeBits == 0 {
			o.arm()
		}
	}
	won := o.tryHeld(op, ok, solo)
	held = false
	if won {
		o.complete(op, Completed)
		return true
	}
	// Close sets closed and then sweeps the watch lists; this call linked op
	// and then reads closed. So if Close's sweep missed op, this read sees
	// closed, and op is ended here rather than left on a stopped wheel.
	if p.closed.Load() {
		o.end(Closed)
	}
	return false
}

// overBound reports whether more operations wait than WithMaxDelayed allows
// (counting the one being added).
func (p *Purgatory[K]) overBound() bool {
	n := p.core.settings.maxDelayed
	return n > 0 && p.core.counters.delayed() > int64(n)
}

// CheckAndComplete tries to complete every operation watched under key, with
// no purgatory lock held, and returns how many this call completed (Kafka's
// checkAndComplete). It walks the key's list in place; the operations it
// completes no longer count in Watched when it returns, and their places in
// the key's list are reclaimed as the walk ends, in one critical section. An
// operation that another goroutine is trying at that moment is not waited for:
// that goroutine tries it once more. Nor is a walk of the same key under way,
// on another goroutine or further up this one (a TryComplete that checks its
// own key): that walk is asked to go over the key once more before it ends,
// and this call returns 0. It returns 0 after Close.
//
// If a callback panics (TryComplete, OnComplete, OnExpiration or the
// Observer), the operations after it are still tried, and then the panic
// continues. An operation whose TryComplete panicked stays watched, with its
// timeout running; one whose OnComplete panicked has ended and is counted.
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	p.mustBeNew()
	p.watchers.checkKey(key)
	if p.closed.Load() {
		return 0
	}
	l, ops := p.watchers.enter(key)
	if l == nil {
		return 0
	}
	w := walk{ops: ops, list: l}
	touch(w.ops)
	defer w.finish()
	w.run()
	return w.won
}

// CancelForKey removes every operation watched under key and cancels them
// without completing them: their timeouts stop, they leave their other keys'
// watch lists, OnComplete does not run and Outcome reports Cancelled (Kafka's
// cancelForKey). It returns the operations it cancelled, in no particular
// order; none for a key nobody watches. If the Observer panics, the remaining
// operations are still cancelled before the panic continues.
func (p *Purgatory[K]) CancelForKey(key K) []Operation {
	p.mustBeNew()
	p.watchers.checkKey(key)
	w := walk{ops: p.watchers.take(key), outcome: Cancelled}
	defer w.finish()
	w.run()
	cancelled := make([]Operation, w.won)
	for i, e := range w.ops[:w.won] {
		cancelled[i] = e.impl
	}
	return cancelled
}

// ForceCompleteForKey ends every operation watched under key with Outcome
// Forced, running each one's OnComplete on the calling goroutine ("flush this
// tenant": answer everything waiting on it now), and returns how many this
// call ended. It is ForceComplete for each operation under key: an operation
// that another path ends meanwhile (a walk of the key trying it, its timeout,
// Close) ends once, by whichever path wins, and does not count here. The
// operations leave their other keys' watch lists and stop their timeouts, and
// are counted under Forced in Stats and the metrics. The key's list is taken
// whole first, as CancelForKey takes it, so a CheckAndComplete of the key
// running at the same time finishes its own pass and then finds the key
// empty.
//
// OnComplete runs inside this call: one that blocks holds up the rest (see
// [StuckAfter]). If a callback panics (OnComplete or the Observer), the
// remaining operations are still ended before the panic continues.
func (p *Purgatory[K]) ForceCompleteForKey(key K) int {
	p.mustBeNew()
	p.watchers.checkKey(key)
	w := walk{ops: p.watchers.take(key), outcome: Forced}
	defer w.finish()
	w.run()
	return w.won
}

// touch brings each operation's cache lines in before the tries. Each try's
// first read of an operation is a cache miss, and a try is long enough that
// the CPU never has two of those in flight; a loop this short overlaps them
// all, and the tries then hit the cache. (BenchmarkCheckWalk: about a third
// of the time per try.)
func touch(ops []entry) {
	for _, e := range ops {
		e.op.touch()
	}
}

// walk ends the operations of one key, one after another: by trying them
// (outcome Pending) or with outcome. It counts the operations it ended in won
// and, when it ends them with an outcome, moves them to the front of ops.
// A walk that tries holds its key's list (list) until it leaves it, and goes
// over the list again as often as other walks of the key ask it to.
type walk struct {
	ops     []entry
	next    int
	won     int
	outcome Outcome
	holding *Op      // the operation whose try bit this walk holds, if any
	list    walkList // the key's list this walk holds, until it leaves it
}

// walkList is a key's watch list as a walk holds it, whatever the key's type.
type walkList interface {
	// leave ends the walk of the list and compacts it if any entry is dead,
	// unless another walk asked for one more pass: then it compacts, returns
	// the list's entries and true, and the walk goes on with them.
	leave() (ops []entry, again bool)
}

func (w *walk) run() {
	for {
		w.pass()
		if w.list == nil {
			return
		}
		ops, again := w.list.leave()
		w.ops, w.next = ops, 0
		if !again {
			w.list = nil
			return
		}
		touch(w.ops)
	}
}

// pass goes over ops once.
func (w *walk) pass() {
	for w.next < len(w.ops) {
		e := w.ops[w.next]
		o := e.op
		w.next++
		if w.outcome == Pending {
			impl := e.impl
			if s := o.state.Load(); s&(soloBit|tryingBit|outcomeBits) == soloBit {
				// Only this walk tries o (try.go): no try bit to take.
				if o.check(impl) && o.claim(Completed) {
					w.complete(o, impl)
				}
				continue
			}
			if !o.acquire() {
				continue
			}
			w.holding = o
			won := o.tryHeld(impl, o.check(impl), 0)
			w.holding = nil
			if won {
				w.complete(o, impl)
			}
			continue
		}
		if o.end(w.outcome) {
			w.ops[w.won] = e // CancelForKey returns them
			w.won++
		}
	}
}

// complete ends o, which this walk's try completed.
func (w *walk) complete(o *Op, impl Operation) {
	w.won++
	o.complete(impl, Completed)
}

// finish is deferred by run's caller. After a walk that ran to its end it does
// nothing. If a callback panicked, it lets go of the try bit if TryComplete was
// the one, then walks the rest before the panic goes on, so that one
// operation's panic does not hold back the others (and a further panic does the
// same from there). Doing this once per walk, rather than deferring per try,
// keeps the try itself free of defers.
func (w *walk) finish() {
	if o := w.holding; o != nil {
		w.holding = nil
		o.abandon(false)
	}
	if w.next < len(w.ops) || w.list != nil {
		defer w.finish()
		w.run()
	}
}

// Watched returns the number of (operation, key) watches: Kafka's
// PurgatorySize. An operation stops counting as it ends, so it counts live
// operations only. It reads eleven atomic counters per P, without locks.
func (p *Purgatory[K]) Watched() int {
	c := &p.core.counters
	return int(c.watched(c.delayed()))
}

// Delayed returns the number of operations added and not yet ended: Kafka's
// NumDelayedOperations. It reads ten atomic counters per P, without locks.
func (p *Purgatory[K]) Delayed() int { return int(p.core.counters.delayed()) }

// Stats returns a snapshot of the purgatory's counters, read without locks.
func (p *Purgatory[K]) Stats() Stats { return p.core.counters.snapshot() }

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
