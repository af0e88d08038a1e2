package timingwheel

import (
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/bucket"
)

// Timer is a callback scheduled on a TimingWheel. AfterFunc, NewTimer and
// ScheduleFunc return one they allocate; [TimingWheel.InitTimer] prepares one
// the caller owns, a field of a struct of theirs, so that arming it allocates
// nothing. Its methods are safe for concurrent use, from any goroutine and from
// inside callbacks. A nil or zero Timer is never pending: Stop and Reset on it
// return false and do nothing. A Timer must not be copied once made or
// initialised (go vet reports copies).
//
// A Timer allocated by the wheel is one allocation of 48 bytes. Its place in
// the wheel is its level, its bucket there and its index in the bucket's
// array, eight bytes and no pointer, so stopping it clears that slot at once,
// in O(1), touching no other timer, and the bucket keeps nothing of it; the
// bucket reuses cleared slots (package bucket).
type Timer struct {
	_ noCopy
	t timer
}

// timer is a Timer's state, and the element the wheel links.
//
// A timer lives on one shard of its TimingWheel at a time, the one sh names
// (sh is nil only in a zero Timer), and every field but sh, h and
// keepsDeadline is guarded by that shard's mu; lock finds and locks it. Which
// shard, and when a timer moves, is shard.go's move rule: a pending timer
// never moves.
//
// A timer is in one of four states (state):
//
//	idle     Not linked: never armed, stopped, or refused by a stopped wheel
//	         (rejected). Stop returns false; Reset arms it.
//	inLevel  Linked in the bucket of one of its shard's levels: the bucket of
//	         the tick when falls in, on the finest level that spans it.
//	         Counted in w.count.
//	inNear   Linked in w.near, because the tick when falls in has begun, and
//	         listed in w.nearHeap at when. Counted in w.count. Stop and Reset
//	         leave the heap entry behind: an entry whose timer is no longer
//	         inNear with the same when is stale: skipped when popped, and
//	         dropped once it reaches the head of the heap, before the driver
//	         plans a wake-up for it (wheel.next; the runtime's timerModified
//	         follows the same rule).
//	handed   Taken out of the wheel at its deadline and handed to the executor,
//	         whose call of h.Fire may not have started yet. Not linked, not
//	         counted. A recurring timer is handed between a run's start and
//	         its rearm, which arms it again only if it is still handed: Stop
//	         made it idle, Reset armed it already.
//
// Who moves a timer, always under its shard's mu:
//
//	idle, handed -> inLevel, inNear   armLocked: AfterFunc, Reset; a rearm
//	inLevel -> inLevel, inNear        the flush of a coarser bucket (cascade)
//	inLevel, inNear -> handed         the driver's collect, at or after when
//	inLevel, inNear -> inLevel, inNear  Reset
//	any -> idle                       Stop; the wheel's Stop (drain)
//	idle, handed: sh -> another shard move, in Reset, before it schedules
type timer struct {
	links bucket.Links[timer] // its index in its bucket, which wheel.slotOf finds
	// inLevel: the bucket that holds it, lv.buckets[bucket] of
	// lv = levels[level]. The deadline names it too, but through a division:
	// BenchmarkOwnedResetStop took 1.2x its time when Stop and Reset found
	// the bucket that way.
	bucket uint32
	level  uint8
	state  timerState
	// rejected is set when a stopped wheel refused to schedule the timer.
	rejected bool
	// keepsDeadline marks a context's timer: the wheel's Stop calls h.Fire
	// instead of handing it back, and Fire moves the deadline to a runtime
	// timer. Immutable.
	keepsDeadline bool
	sh            atomic.Pointer[shard] // the shard it lives on; see above
	h             Handler               // immutable once set
	when          instant               // the deadline: set by wheel.insert, or by a context's making before it is registered
}

type timerState uint8

const (
	idle timerState = iota
	inLevel
	inNear
	handed
)

// Links makes *timer a bucket.Node.
func (t *timer) Links() *bucket.Links[timer] { return &t.links }

// pending reports whether t waits in the wheel.
func (t *timer) pending() bool { return t.state == inLevel || t.state == inNear }

// A Handler is what a Timer runs when it fires: its Fire method, in the wheel's
// executor. A struct that embeds a Timer can be the Timer's own Handler (pass
// a pointer to it to InitTimer), so that neither needs a closure.
type Handler interface {
	Fire()
}

// A Drainer is a Handler that is told when its timer will not fire because
// the wheel has stopped: the wheel's Stop calls Drain for each of its
// timers still pending, instead of handing back Fire, and a Reset (or
// AfterFunc) that a stopped wheel refuses calls it for the timer refused.
// Drain runs once for each arming that will not fire, with no lock of the
// wheel held, on the goroutine of the Stop or the Reset; it must not block,
// and a panic in it reaches that goroutine: Stop's once every other Drainer
// has been told and the AfterStop functions have started. A purgatory's operations hold
// their timeouts with one, so that an operation whose timeout a stopped
// wheel dropped still lets go of it.
type Drainer interface {
	Handler
	Drain()
}

// HandlerFunc adapts a func to a Handler, as http.HandlerFunc does.
type HandlerFunc func()

// Fire calls f.
func (f HandlerFunc) Fire() { f() }

// noCopy makes go vet's copylocks check report copies of a Timer, whose
// neighbours in the wheel point to it.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// AfterFunc schedules f to run in the wheel's executor once d has elapsed, and
// returns a Timer that can stop or reset it. f never runs before d has elapsed
// on the monotonic clock from the call, and is not rounded to a tick: it runs
// as soon as the driver wakes at its deadline, as time.AfterFunc's f does. A d
// of zero or less runs f on the driver's next pass, never on the calling
// goroutine, and math.MaxInt64 (any d beyond the wheel's range) never runs
// it: every d is taken (see Durations and deadlines). A nil f is a misuse
// and panics.
//
// On a stopped wheel the returned Timer never runs: check [Timer.Rejected]
// where work must not vanish during shutdown (a retry, say), or [TimingWheel.Err]
// before scheduling. Each such timer is counted in [Stats].Rejected (the
// metric timingwheel_rejected_timers_total), and the wheel's first one is
// logged.
func (tw *TimingWheel) AfterFunc(d time.Duration, f func()) *Timer {
	tw.mustBeNew()
	if f == nil {
		panic("timingwheel: AfterFunc called with a nil func")
	}
	t := &Timer{}
	t.t.h = HandlerFunc(f)
	sh := tw.local()
	t.t.sh.Store(sh)
	t.t.armNew(sh, tw.deadline(d))
	return t
}

// NewTimer returns a Timer for f that is not armed, unlike time.NewTimer(d),
// which starts at once: here Reset arms it, as often as needed. It lets a
// callback refer to its own Timer without a data race (the variable is set
// before the timer can run), which a retry loop needs:
//
//	t := tw.NewTimer(attempt) // attempt may call t.Reset to retry
//	t.Reset(0)
//
// A nil f is a misuse and panics.
func (tw *TimingWheel) NewTimer(f func()) *Timer {
	tw.mustBeNew()
	if f == nil {
		panic("timingwheel: NewTimer called with a nil func")
	}
	t := &Timer{}
	t.t.h = HandlerFunc(f)
	t.t.sh.Store(tw.local())
	return t
}

// InitTimer prepares t, a zero Timer the caller owns, to call h.Fire on tw,
// and leaves it unarmed: Reset arms it, as often as needed, and Stop stops it,
// as for any Timer. Neither InitTimer nor Reset allocates, which is why a
// program with millions of records embeds a Timer in each and makes the record
// its Handler:
//
//	type session struct {
//		idle timingwheel.Timer
//		...
//	}
//
//	func (s *session) Fire() { ... } // the session has been idle too long
//
//	tw.InitTimer(&s.idle, s)
//	s.idle.Reset(time.Minute)
//
// A Timer is initialised once: a nil t or h, or a t already initialised or
// made by AfterFunc, NewTimer or ScheduleFunc, is a misuse and panics.
func (tw *TimingWheel) InitTimer(t *Timer, h Handler) {
	tw.mustBeNew()
	switch {
	case t == nil || h == nil:
		panic("timingwheel: InitTimer called with a nil Timer or Handler")
	case t.t.sh.Load() != nil:
		panic("timingwheel: InitTimer called on a Timer that is already initialised; a Timer is initialised once, and Reset re-arms it")
	}
	t.t.h = h
	t.t.sh.Store(tw.local())
}

// wheel returns the TimingWheel t belongs to; t must be initialised.
func (t *timer) wheel() *TimingWheel { return t.sh.Load().tw }

// arm schedules t at when, out of its old place if it had one, or refuses it
// if the wheel is stopped; a timer that is not pending is first moved to the
// calling goroutine's shard (shard.go's move rule). (Moving only when the
// lock was busy measured worse at 2 goroutines, W7 owned 1.31× of G=1
// against 1.70×, though before the shards were padded apart: a shard whose
// lock is free at the moment of the try may still be on another core's
// cache.) It reports whether t was pending, and false if it was refused.
func (t *timer) arm(when instant) (pending bool) {
	sh := t.lock()
	if !t.pending() {
		if local := sh.tw.local(); local != sh {
			sh = t.move(sh, local)
		}
	}
	return t.armLocked(sh, when)
}

// armNew arms a timer that nobody else can reach yet (AfterFunc's, a
// recurrence's) on sh, the shard it was placed on.
func (t *timer) armNew(sh *shard, when instant) {
	sh.mu.Lock()
	t.armLocked(sh, when)
}

// armLocked puts t, on the locked shard sh, at when, or refuses it if the
// wheel is stopped, and unlocks sh. It reports whether t was pending.
func (t *timer) armLocked(sh *shard, when instant) (pending bool) {
	if sh.tw.stopped() {
		sh.tw.reject(t)
		sh.mu.Unlock()
		sh.tw.warn()
		if d, ok := t.h.(Drainer); ok {
			d.Drain()
		}
		return false
	}
	pending = t.pending()
	sh.register(t, when)
	sh.mu.Unlock()
	return pending
}

// move hands t, which is not pending, from the locked shard from to the
// shard to, and returns the shard t lives on then, locked: to, unless another
// goroutine moved t again meanwhile. t is idle or handed throughout: a Stop
// that comes between finds it on to, not pending, as it would have on from.
func (t *timer) move(from, to *shard) *shard {
	t.sh.Store(to)
	from.mu.Unlock()
	return t.lock()
}

// Stop prevents the Timer from firing. It returns true if the call stops the
// timer, false if the timer has already fired (or been handed to the executor),
// been stopped, or was never scheduled. Stop does not wait for a callback that
// has already started. On a recurring timer, Stop also ends the schedule, even
// while a run is in progress.
func (t *Timer) Stop() bool {
	if t == nil || t.t.sh.Load() == nil {
		return false
	}
	sh := t.t.lock()
	ok, old, moved := sh.stop(&t.t)
	sh.mu.Unlock()
	if moved {
		sh.tw.postpone(old)
	}
	return ok
}

// Reset re-arms the Timer to fire once d has elapsed from the call, as AfterFunc
// would, for any d; a Timer that has fired or been stopped is scheduled again. It returns
// true if the timer was pending, false if it had fired or been stopped. On a
// stopped wheel Reset does nothing, returns false and marks the timer
// rejected (see [Timer.Rejected]).
//
// As with time.Timer, if the previous run's callback was already handed to the
// executor, that run still happens: Reset does not wait for it or cancel it.
// On a recurring timer, Reset moves the next run, and the schedule continues
// from that run: a d of zero or less plans it for the time of the call, so
// the run after it comes a full interval later, as it would after a
// time.Timer that re-arms itself when it fires.
func (t *Timer) Reset(d time.Duration) bool {
	if t == nil {
		return false
	}
	sh := t.t.sh.Load()
	if sh == nil {
		return false
	}
	if _, recurring := t.t.h.(*recurrence); recurring {
		d = max(d, 0) // a past plan would bring the next run forward
	}
	return t.t.arm(sh.tw.deadline(d))
}

// Rejected reports whether the wheel refused the timer because it had been
// stopped when AfterFunc, ScheduleFunc or Reset was asked to schedule it: such
// a timer never runs. A stopped wheel stays stopped, so a rejected timer
// stays rejected.
func (t *Timer) Rejected() bool {
	if t == nil || t.t.sh.Load() == nil {
		return false
	}
	sh := t.t.lock()
	defer sh.mu.Unlock()
	return t.t.rejected
}
