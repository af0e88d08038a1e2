package timingwheel

import "time"

// A Scheduler gives the times of a recurring schedule. Next returns the first
// run time after prev, or the zero Time to end the schedule. It is called with
// the current time for the first run, then with the planned time of the run just
// made, from one goroutine at a time.
type Scheduler interface {
	Next(prev time.Time) time.Time
}

// Every returns a Scheduler that runs every d: the first run d after
// ScheduleFunc, then at fixed intervals. A d of zero or less is a misuse and
// panics.
func Every(d time.Duration) Scheduler {
	if d <= 0 {
		panic("timingwheel: Every called with a non-positive interval")
	}
	return every(d)
}

type every time.Duration

func (e every) Next(prev time.Time) time.Time { return prev.Add(time.Duration(e)) }

// ScheduleFunc runs f at each time s gives, until s returns the zero Time or the
// returned Timer is stopped. Runs never overlap: the next run is armed when the
// previous one returns (or panics). If a run overran one or more planned times,
// those are skipped and the schedule resumes at s.Next(now), so a slow f never
// causes a burst of catch-up runs. Like AfterFunc, a run is never early. A nil
// s or f is a misuse and panics.
func (tw *TimingWheel) ScheduleFunc(s Scheduler, f func()) *Timer {
	tw.mustBeNew()
	if s == nil || f == nil {
		panic("timingwheel: ScheduleFunc called with a nil Scheduler or func")
	}
	r := &recurrence{s: s, f: f}
	t := &r.t.t
	t.h = r
	sh := tw.local()
	t.sh.Store(sh)
	if first := s.Next(time.Now()); !first.IsZero() {
		t.armNew(sh, tw.instantOf(first))
	} else if tw.stopped() {
		sh.mu.Lock() // rejected is guarded by the timer's shard
		tw.reject(t)
		sh.mu.Unlock()
	}
	return &r.t
}

// recurrence is a recurring schedule: its Timer, handed to the caller, and
// the Handler that runs f and rearms the Timer.
type recurrence struct {
	t Timer
	s Scheduler
	f func()
}

// Fire runs f once and arms the next run.
func (r *recurrence) Fire() {
	t := &r.t.t
	sh := t.lock()
	planned := sh.tw.timeOf(t.when)
	sh.mu.Unlock()
	defer r.rearm(planned)
	r.f()
}

func (r *recurrence) rearm(planned time.Time) {
	next := r.s.Next(planned)
	if now := time.Now(); !next.IsZero() && !next.After(now) {
		next = r.s.Next(now)
	}
	t := &r.t.t
	sh := t.lock()
	defer sh.mu.Unlock()
	// Stop during the run made the timer idle, which ends the schedule; Reset
	// during the run has armed the next one already. The next run stays on
	// the shard of this one.
	if next.IsZero() || t.state != handed || sh.tw.stopped() {
		return
	}
	sh.register(t, sh.tw.instantOf(next))
}
