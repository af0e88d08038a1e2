package purgatory

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
	"github.com/purgatory-go/purgatory/timingwheel"
)

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
	waiters     waiters       // Wait's operations, recycled
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
	c := config{shards: DefaultShards()}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		o(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	tw, owns, err := c.timingWheel()
	if err != nil {
		return nil, err
	}
	p := &Purgatory[K]{name: name, tw: tw, ownsWheel: owns, swept: make(chan struct{})}
	p.core.counters = newCounters()
	p.core.settings = settings{observer: c.observer, epoch: time.Now(), onPanic: c.onPanic, maxDelayed: c.maxDelayed, logger: c.logger, name: name}
	p.core.dog = newWatchdog(&p.core)
	p.watchers = newShards[K](c.shards, &p.core.counters, mayPanicToHash(reflect.TypeFor[K]()))
	p.detachWheel = p.tw.AfterStop(p.Close)
	return p, nil
}

// Name returns the name given to New.
func (p *Purgatory[K]) Name() string { return p.name }

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
// changes: a nil op, zero keys, an op still pending from an earlier call or
// whose last use is not over (see [Op] on reuse), an op first used in another
// purgatory, a zero op.Timeout (see Op.Timeout), or a key that cannot be
// hashed (such as a slice in a Purgatory[any]). An op ended by ForceComplete
// before it was ever passed here is neither watched nor counted, and false is
// returned. After Close, op ends at once with Outcome Closed (OnComplete runs
// on the calling goroutine) and false is returned.
//
// If TryComplete panics, the call is undone before the panic continues: op is
// left unwatched, without a timeout and uncounted (it may be passed again; its
// Recycle does not run for the call undone). If OnComplete panics after this
// call completed op, op has ended (Completed, and counted) and the panic
// continues.
func (p *Purgatory[K]) TryCompleteElseWatch(op Operation, keys ...K) bool {
	p.mustBeNew()
	o := opOf(op, "TryCompleteElseWatch")
	if len(keys) == 0 {
		panic("purgatory: TryCompleteElseWatch called with no keys; an operation must be watched under at least one")
	}
	p.watchers.mustHashKeys(keys)
	return p.add(op, o, &watches[K]{keys: keys}, nil)
}

// add is TryCompleteElseWatch's contract, for plain and level watches alike:
// w is what o is watched under. With parked (TryCompleteElsePark), the use is
// bound with its timeout's pin, parked is told its generation before the use
// can end, and nothing is armed: its waiter times it (park.go).
func (p *Purgatory[K]) add(op Operation, o *Op, w *watches[K], parked func(gen)) bool {
	o.mustHaveTimeout(op)
	pin, t := o.timeoutPin(parked != nil)
	g, bound := o.bind(op, &p.core, p.tw, pin, t)
	if !bound {
		return false // ended by ForceComplete before it was ever added
	}
	if parked != nil {
		parked(g) // the try bit is held: the use cannot end before this
	}
	return p.tryElseWatch(op, o, w, o.parkedIf(parked != nil))
}

// tryElseWatch is add's from bind, which left the try bit held, to its last
// settle: a try, the watch, a try again, arming the timeout and the
// context (not for a parked use, pk its parking), and conclude.
func (p *Purgatory[K]) tryElseWatch(op Operation, o *Op, w *watches[K], pk *parking) bool {
	try := firstTries{o: o, impl: op, held: true} // no other try of o runs until try.conclude
	defer try.undo()                              // if TryComplete panics
	if p.isClosed() {
		try.giveUp(Closed) // no try after Close
		return false
	}
	ok := try.try()
	if ok && pk != nil {
		pk.passedAtOnce(o) // park.go, rule 1
	}
	if !ok && p.overBound() {
		try.giveUp(Shed) // rather than park it: tried, unwatched, no timeout
		return false
	}
	solo := false
	if !ok {
		solo = w.link(&p.watchers, o) == 1 && !pk.rings() // from now on, only its key's walk tries it (or its waiter: bell.go)
		if ok = try.try(); !ok && !o.decided() && pk == nil {
			o.arm()
		}
	}
	if try.conclude(ok, solo) {
		return true
	}
	// Close sets closed and then sweeps the watch lists; this call linked op
	// and then reads closed. So if Close's sweep missed op, this read sees
	// closed, and op is ended here rather than left on a stopped wheel.
	if p.isClosed() {
		o.endOwn(Closed)
	}
	return false
}

// isClosed reports whether Close has begun: a scheduling point of the
// interleaving checker (internal/sched), as every shared access here is.
func (p *Purgatory[K]) isClosed() bool {
	sched.At("closed load")
	return p.closed.Load()
}

// overBound reports whether more operations wait than WithMaxDelayed allows
// (counting the one being added).
func (p *Purgatory[K]) overBound() bool {
	n := p.core.settings.maxDelayed
	return n > 0 && p.core.counters.delayed() > int64(n)
}

// Watched returns the number of (operation, key) watches: Kafka's
// PurgatorySize. An operation stops counting as it ends, so it counts live
// operations only. It sums per-P atomic counters, without locks.
func (p *Purgatory[K]) Watched() int {
	c := &p.core.counters
	return int(c.watched(c.delayed()))
}

// Delayed returns the number of operations added and not yet ended: Kafka's
// NumDelayedOperations. It sums per-P atomic counters, without locks.
func (p *Purgatory[K]) Delayed() int { return int(p.core.counters.delayed()) }

// Stats returns a snapshot of the purgatory's counters, read without locks.
func (p *Purgatory[K]) Stats() Stats { return p.core.counters.snapshot() }
