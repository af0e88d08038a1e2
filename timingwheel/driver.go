package timingwheel

import (
	"math"
	"time"
)

// The driver is Kafka's reaper without the polling: one goroutine at a time
// holds the driver's role, polls the wheel, and sleeps on one reusable
// time.Timer until the wheel's next deadline, or until a token on wake says
// that a timer scheduled meanwhile is due sooner (tokio's driver works the
// same way). It holds mu only while it polls.
//
// With the pool executor the role is relayed (the leader/follower pattern): a
// driver that wakes to due timers queues all but the first in the pool,
// starts a successor with the role, and runs the first callback itself, then
// serves the pool's queue as one of its workers. So the deadline's one
// wake-up, the driver's, runs the callback, as time.AfterFunc's does, instead
// of a second one for a worker; and a callback that blocks holds up neither
// the wheel (the successor drives it) nor the others (the pool's spare rule).
// The driver counts as a worker from then on, so the pool's bound holds.

// forever is the wait of a driver that sleeps until woken.
const forever time.Duration = math.MaxInt64

// drive is the first driver's goroutine.
func (tw *TimingWheel) drive() {
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	tw.driveWith(sleep, nil)
}

// driveWith holds the driver's role until the wheel stops, closing done then,
// or until it relays the role to a successor, handing on its sleep timer and
// its due slice.
func (tw *TimingWheel) driveWith(sleep *time.Timer, due []*timer) {
	var late []time.Duration
	for {
		var wait time.Duration
		var ok bool
		due, late, wait, ok = tw.advance(due[:0], late[:0])
		if !ok {
			close(tw.done) // stopped
			return
		}
		if len(due) > 0 {
			if first, relayed := tw.relay(due, late); relayed {
				clear(due)
				go tw.driveWith(sleep, due[:0])
				tw.exec.(*pool).runThenServe(first)
				return
			}
			clear(due) // drop the references until the next batch
			continue   // look again: time passed while handing them over
		}
		var ring <-chan time.Time
		if wait != forever {
			sleep.Reset(wait)
			ring = sleep.C
		}
		select {
		case <-ring:
		case <-tw.wake:
			sleep.Stop()
		case <-tw.quit:
			sleep.Stop()
			close(tw.done)
			return
		}
	}
}

// relay hands the due timers over as hand does, except that with the pool
// executor, if its bound allows, it keeps the first for the calling driver to
// run as a worker, and reports true: the caller must then pass its role on.
func (tw *TimingWheel) relay(due []*timer, late []time.Duration) (first *timer, relayed bool) {
	p, ok := tw.exec.(*pool)
	if !ok {
		tw.hand(due, late)
		return nil, false
	}
	tw.count(due, late)
	return p.relay(due)
}

// advance polls the wheel at the current time, appending what is due (and,
// with an observer, how late each is) and returning how long to wait before
// the next poll: forever for "until woken". ok is false once the wheel
// is stopped.
func (tw *TimingWheel) advance(due []*timer, late []time.Duration) ([]*timer, []time.Duration, time.Duration, bool) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.state == stopped {
		return due, late, 0, false
	}
	// A token sent before this look is stale: the look sees its timer.
	select {
	case <-tw.wake:
	default:
	}
	now := tw.now()
	due = tw.w.poll(now, due)
	if tw.observer != nil {
		for _, t := range due {
			late = append(late, t.when.until(now))
		}
	}
	next, ok := tw.w.next()
	if !ok {
		tw.sleepUntil = never
		return due, late, forever, true
	}
	tw.sleepUntil = next
	return due, late, next.until(now), true
}

// hand tells the observer how late the due timers are and hands them to the
// executor, outside the lock.
func (tw *TimingWheel) hand(due []*timer, late []time.Duration) {
	if len(due) == 0 {
		return
	}
	tw.count(due, late)
	tw.exec.execute(due)
}

// count tells the observer how late the due timers are and counts them,
// fired and in flight, before they are handed over.
func (tw *TimingWheel) count(due []*timer, late []time.Duration) {
	if len(late) > 0 {
		tw.observe(late)
	}
	tw.fired.Add(int64(len(due)))
	tw.inflight.Add(len(due))
}

// AdvanceClock drives a wheel made [WithManualClock] from the caller's own
// loop instead of a driver goroutine (Kafka's Timer.advanceClock). It waits up
// to timeout for a timer to come due, runs every timer that is due through the
// executor, and returns true; it returns false if nothing came due within
// timeout or the wheel is stopped. A timeout of zero or less only looks.
// Calling it on a running wheel is a misuse and panics.
func (tw *TimingWheel) AdvanceClock(timeout time.Duration) bool {
	tw.mustBeNew()
	var deadline instant
	var sleep *time.Timer
	for {
		due, late, wait, ok := tw.advanceManual()
		if !ok {
			return false
		}
		if len(due) > 0 {
			tw.hand(due, late)
			return true
		}
		if deadline == 0 {
			deadline = tw.deadline(max(timeout, 0))
		}
		left := deadline.until(tw.now())
		if left == 0 {
			return false
		}
		if sleep == nil {
			sleep = time.NewTimer(min(wait, left))
			defer sleep.Stop()
		} else {
			sleep.Reset(min(wait, left))
		}
		select {
		case <-sleep.C:
		case <-tw.wake:
			sleep.Stop()
		case <-tw.quit:
			return false
		}
	}
}

func (tw *TimingWheel) advanceManual() ([]*timer, []time.Duration, time.Duration, bool) {
	tw.mu.Lock()
	st := tw.state
	tw.mu.Unlock()
	if st == running {
		panic("timingwheel: AdvanceClock called on a running TimingWheel; make it WithManualClock to drive it yourself")
	}
	return tw.advance(nil, nil)
}
