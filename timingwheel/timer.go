package timingwheel

import "time"

// Timer is a callback scheduled on a TimingWheel, returned by AfterFunc and
// ScheduleFunc. Its methods are safe for concurrent use, from any goroutine and
// from inside callbacks. A nil or zero Timer is never pending: Stop and Reset on
// it return false and do nothing.
//
// A Timer is one allocation of 64 bytes; it is its own entry in the wheel's
// bucket list, so stopping it unlinks it at once in O(1), with nothing left to
// be swept later.
type Timer struct {
	e       entry // e.Value is the Timer itself
	exp     int64 // the deadline, in ns since the wheel's start; guarded by tw.mu once scheduled
	tw      *TimingWheel
	f       func()
	stopped bool // set by Stop, cleared by Reset: ends a recurring schedule; guarded by tw.mu
	// rejected is set when the wheel refused the timer because it was
	// stopped; guarded by tw.mu.
	rejected bool
	// keepsDeadline marks a context's timer: Stop calls f instead of handing
	// it back, and f moves the deadline to a runtime timer. Immutable.
	keepsDeadline bool
}

// AfterFunc schedules f to run in the wheel's executor once d has elapsed, and
// returns a Timer that can stop or reset it. f never runs before d has elapsed
// on the monotonic clock from the call, and is not rounded to a tick: it runs
// as soon as the driver wakes at its deadline, as time.AfterFunc's f does. A d
// of zero or less runs f on the driver's next pass, never on the calling
// goroutine. A nil f is a misuse and panics.
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
	t := &Timer{tw: tw, f: f}
	t.e.Value = t
	t.exp = tw.expiration(d)
	tw.mu.Lock()
	refused := tw.state == stopped
	if refused {
		tw.reject(t)
	} else {
		tw.schedule(t)
	}
	tw.mu.Unlock()
	if refused {
		tw.warn()
	}
	return t
}

// NewTimer returns a Timer for f that is not armed, unlike time.NewTimer(d),
// which starts at once: here Reset arms it, as often as needed. It lets a callback refer to its own Timer without a data race (the
// variable is set before the timer can run), which a retry loop needs:
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
	t := &Timer{tw: tw, f: f}
	t.e.Value = t
	return t
}

// Stop prevents the Timer from firing. It returns true if the call stops the
// timer, false if the timer has already fired (or been handed to the executor),
// been stopped, or was never scheduled. Stop does not wait for a callback that
// has already started. On a recurring timer, Stop also ends the schedule, even
// while a run is in progress.
func (t *Timer) Stop() bool {
	if t == nil || t.tw == nil {
		return false
	}
	tw := t.tw
	tw.mu.Lock()
	t.stopped = true
	ok := t.e.Remove()
	tw.mu.Unlock()
	return ok
}

// Reset re-arms the Timer to fire once d has elapsed from the call, as AfterFunc
// would; a Timer that has fired or been stopped is scheduled again. It returns
// true if the timer was pending, false if it had fired or been stopped. On a
// stopped wheel Reset does nothing, returns false and marks the timer
// rejected (see [Timer.Rejected]).
//
// As with time.Timer, if the previous run's callback was already handed to the
// executor, that run still happens: Reset does not wait for it or cancel it.
// On a recurring timer, Reset moves the next run, and the schedule continues
// from that run.
func (t *Timer) Reset(d time.Duration) bool {
	if t == nil || t.tw == nil {
		return false
	}
	tw := t.tw
	exp := tw.expiration(d)
	tw.mu.Lock()
	if tw.state == stopped {
		tw.reject(t)
		tw.mu.Unlock()
		tw.warn()
		return false
	}
	pending := t.e.Bucket() != nil
	t.stopped = false
	t.exp = exp
	tw.schedule(t) // moves it out of its old bucket first
	tw.mu.Unlock()
	return pending
}

// Rejected reports whether the wheel refused the timer because it had been
// stopped when AfterFunc, ScheduleFunc or Reset was asked to schedule it: such
// a timer never runs. A stopped wheel stays stopped, so a rejected timer
// stays rejected.
func (t *Timer) Rejected() bool {
	if t == nil || t.tw == nil {
		return false
	}
	t.tw.mu.Lock()
	defer t.tw.mu.Unlock()
	return t.rejected
}
