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
	t := &Timer{tw: tw}
	t.e.Value = t
	r := &recurrence{t: t, s: s, f: f}
	t.f = r.run
	first := s.Next(time.Now())
	tw.mu.Lock()
	refused := tw.state == stopped
	switch {
	case refused:
		tw.reject(t)
	case !first.IsZero():
		t.exp = tw.at(first)
		tw.schedule(t)
	}
	tw.mu.Unlock()
	if refused {
		tw.warn()
	}
	return t
}

type recurrence struct {
	t *Timer
	s Scheduler
	f func()
}

func (r *recurrence) run() {
	tw := r.t.tw
	tw.mu.Lock()
	planned := tw.start.Add(time.Duration(r.t.exp))
	tw.mu.Unlock()
	defer r.rearm(planned)
	r.f()
}

func (r *recurrence) rearm(planned time.Time) {
	next := r.s.Next(planned)
	if now := time.Now(); !next.IsZero() && !next.After(now) {
		next = r.s.Next(now)
	}
	tw := r.t.tw
	tw.mu.Lock()
	defer tw.mu.Unlock()
	// Stop during the run ends the schedule; Reset during the run has already
	// armed the next one.
	if next.IsZero() || r.t.stopped || r.t.e.Bucket() != nil || tw.state == stopped {
		return
	}
	r.t.exp = tw.at(next)
	tw.schedule(r.t)
}

// at converts an absolute time into nanoseconds since the wheel's start.
func (tw *TimingWheel) at(t time.Time) int64 {
	return max(int64(t.Sub(tw.start)), 0)
}
