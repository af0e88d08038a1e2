package purgatory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// Purgatory holds operations until they complete or expire (Kafka's
// DelayedOperationPurgatory). It must be created with [New]. All its methods
// are safe for concurrent use, also from inside the operations' callbacks.
type Purgatory[K comparable] struct {
	name      string
	tw        *timingwheel.TimingWheel
	ownsWheel bool
	watchers  shards[K]
	stats     counters
	closed    atomic.Bool
	bufs      sync.Pool // *[]*Op for CheckAndComplete's snapshots
}

// New returns a Purgatory named name (the name only labels its metrics). With
// no [WithTimingWheel] option it creates and starts a timing wheel of its own,
// which Close stops. It returns an error if an option is invalid.
func New[K comparable](name string, opts ...Option) (*Purgatory[K], error) {
	c := config{shards: DefaultShards}
	for _, o := range opts {
		o(&c)
	}
	if c.shards < 1 {
		return nil, fmt.Errorf("%w: %d shards; need at least 1", ErrInvalidOption, c.shards)
	}
	p := &Purgatory[K]{name: name, tw: c.wheel}
	p.stats.observer, p.stats.epoch = c.observer, time.Now()
	p.watchers = newShards[K](c.shards, &p.stats)
	if p.tw == nil {
		var wopts []timingwheel.Option
		if c.onPanic != nil {
			wopts = append(wopts, timingwheel.WithPanicHandler(c.onPanic))
		}
		tw, err := timingwheel.New(wopts...)
		if err != nil {
			return nil, err
		}
		if err := tw.Start(); err != nil {
			return nil, err
		}
		p.tw, p.ownsWheel = tw, true
	}
	return p, nil
}

// Name returns the name given to New.
func (p *Purgatory[K]) Name() string { return p.name }

// TimingWheel returns the wheel that runs the purgatory's timeouts: its own,
// or the one passed with WithTimingWheel. Use it for the wheel's Stats or
// metrics; the purgatory stops its own wheel on Close.
func (p *Purgatory[K]) TimingWheel() *timingwheel.TimingWheel { return p.tw }

// TryCompleteElseWatch tries to complete op; if it cannot, it watches op under
// every key and tries once more, so that no completion event that lands between
// the two tries is missed, and if op still cannot complete it starts op's
// timeout (and ties it to op.Context). Both tries and the watching happen under
// op's lock. It returns true only if this call completed op.
//
// Keys repeated in one call are watched once. Zero keys, a nil op, or an op
// passed to TryCompleteElseWatch before are misuses and panic. An op completed
// by ForceComplete before this call is neither watched nor counted, and false is
// returned. After Close, op is expired at once (OnComplete and OnExpiration run
// on the calling goroutine) and false is returned.
func (p *Purgatory[K]) TryCompleteElseWatch(op Operation, keys ...K) bool {
	if op == nil {
		panic("purgatory: TryCompleteElseWatch called with a nil Operation")
	}
	if len(keys) == 0 {
		panic("purgatory: TryCompleteElseWatch called with no keys; an operation must be watched under at least one")
	}
	o := op.op()
	if !o.added.CompareAndSwap(false, true) {
		panic("purgatory: operation passed to TryCompleteElseWatch twice; use a new operation")
	}
	if !o.bind(op, &p.stats) {
		return false
	}
	if p.closed.Load() {
		o.expire()
		return false
	}

	lock := o.locker()
	lock.Lock()
	if o.tryClaim(op) {
		lock.Unlock()
		o.complete(op, Completed)
		return true
	}
	for i, key := range keys {
		if slices.Contains(keys[:i], key) {
			continue // watched once
		}
		if !p.watchers.watch(o, key) {
			break // completed from outside meanwhile
		}
	}
	if o.tryClaim(op) {
		lock.Unlock()
		o.complete(op, Completed)
		return true
	}
	if o.state.Load() == int32(Pending) {
		o.setTimer(p.tw.AfterFunc(o.Timeout, o.expire))
		if ctx := o.Context; ctx != nil {
			o.setStopCtx(context.AfterFunc(ctx, o.contextDone))
		}
	}
	lock.Unlock()
	// Close sets closed and then sweeps the watch lists; this call linked op
	// and then reads closed. So if Close's sweep missed op, this read sees
	// closed, and op is expired here rather than left on a stopped wheel.
	if p.closed.Load() {
		o.expire()
	}
	return false
}

// CheckAndComplete tries to complete every operation watched under key, each
// under its own lock and with no purgatory lock held, and returns how many this
// call completed (Kafka's checkAndComplete). Completed operations leave every
// watch list at once. It returns 0 after Close.
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	if p.closed.Load() {
		return 0
	}
	bp, _ := p.bufs.Get().(*[]*Op)
	if bp == nil {
		bp = new([]*Op)
	}
	ops := p.watchers.snapshot(key, (*bp)[:0])
	completed := 0
	for _, o := range ops {
		if p.tryComplete(o) {
			completed++
		}
	}
	clear(ops)
	*bp = ops
	p.bufs.Put(bp)
	return completed
}

func (p *Purgatory[K]) tryComplete(o *Op) bool {
	if o.IsCompleted() {
		return false
	}
	impl := o.impl // written by bind before o was first watched
	var won bool
	if l := o.Locker; l != nil {
		l.Lock()
		won = o.tryClaim(impl)
		l.Unlock()
	} else { // the common case: the Op's own mutex, locked without an interface call
		o.mu.Lock()
		won = o.tryClaim(impl)
		o.mu.Unlock()
	}
	if won {
		o.complete(impl, Completed)
	}
	return won
}

// CancelForKey removes every operation watched under key and cancels them
// without completing them: their timeouts stop, they leave their other keys'
// watch lists, OnComplete does not run and Outcome reports Cancelled (Kafka's
// cancelForKey). It returns the operations it cancelled, in no particular
// order; none for a key nobody watches.
func (p *Purgatory[K]) CancelForKey(key K) []Operation {
	var cancelled []Operation
	for _, o := range p.watchers.take(key) {
		if o.end(Cancelled) {
			cancelled = append(cancelled, o.impl)
		}
	}
	return cancelled
}

// Watched returns the number of (operation, key) watches: Kafka's
// PurgatorySize. Completed operations leave at once, so it counts live
// operations only. It reads one atomic counter.
func (p *Purgatory[K]) Watched() int { return int(p.stats.watched.Load()) }

// Delayed returns the number of operations added and not yet completed,
// expired or cancelled: Kafka's NumDelayedOperations. It reads one atomic
// counter.
func (p *Purgatory[K]) Delayed() int { return int(p.stats.delayed.Load()) }

// Stats returns a snapshot of the purgatory's counters, read without locks.
func (p *Purgatory[K]) Stats() Stats { return p.stats.snapshot() }

// Close expires every pending operation now, running OnComplete and
// OnExpiration on the calling goroutine, and then stops the timing wheel if the
// purgatory created it. Nothing is dropped silently: every added operation ends
// with an outcome: an operation being added while Close runs is expired either
// by Close or by TryCompleteElseWatch itself. Close is idempotent. Afterwards
// TryCompleteElseWatch expires its operation at once, CheckAndComplete returns
// 0 and CancelForKey still cancels.
func (p *Purgatory[K]) Close() {
	if p.closed.Swap(true) {
		return
	}
	p.watchers.each(func(ops []*Op) {
		for _, o := range ops {
			o.expire()
		}
	})
	if p.ownsWheel {
		p.tw.Stop()
	}
}
