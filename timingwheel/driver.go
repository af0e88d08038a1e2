package timingwheel

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// The driver is Kafka's reaper without the polling: one goroutine that polls
// the wheel, hands what is due to the executor, and sleeps on one reusable
// time.Timer until the wheel's next deadline. It wakes only when something
// is due: a timer armed meanwhile that is due sooner re-arms that time.Timer
// where it sleeps (wakeFor) instead of waking it to plan again, and a Stop
// of the near deadline it sleeps for moves its wake-up on (postpone); each
// needless wake-up costs a thread wake and pushes a runnable goroutine out
// of its P's next slot (issue 51). It holds a shard's mu only while it
// polls that shard, and polls only the shards whose time has come
// (shard.go).
//
// It hands due timers to the executor instead of running one itself: with the
// pool, the worker it starts runs on the same P as soon as the driver parks,
// a goroutine switch rather than a second wake-up of a thread. A relay that
// had the woken driver run the first callback and pass its role to a new
// goroutine (leader/follower; git history, wheel v3) measured the same W4
// lateness p50 and median p99.9, and its p99.9 was near 15 ms in two of six
// runs against at most 7.2 ms without it, so it was left out.

// forever is the wait of a driver that sleeps until woken.
const forever time.Duration = math.MaxInt64

func (tw *TimingWheel) drive(sleep *time.Timer) {
	var due []job
	for {
		var ok bool
		var now instant
		due, now, _, ok = tw.advance(due[:0])
		if !ok {
			close(tw.done) // stopped
			return
		}
		tw.dispatch(due, now, true)
		if len(due) > 0 {
			clear(due) // drop the references until the next batch
			continue   // look again: time passed while handing them over
		}
		tw.plan()
		select {
		case <-sleep.C:
			tw.wakeups.Add(1)
		case <-tw.wake:
			tw.wakeups.Add(1)
			sleep.Stop()
		case <-tw.quit:
			sleep.Stop()
			close(tw.done)
			return
		}
	}
}

// carryOn does on a new goroutine what user code left undone when it ended
// its goroutine (runtime.Goexit: t.FailNow in a test's callback, say), and
// then drives the wheel if the ended goroutine was its driver: so no timer
// is lost, and done is closed once, by the driver that sees the wheel
// stopped. Two calls into user code end the driver that way: an inline
// callback (resume) and the Observer (observe).
func (tw *TimingWheel) carryOn(undone func(), driving bool) {
	go func() {
		undone()
		if driving {
			tw.sleepMu.Lock()
			sleep := tw.sleep
			tw.sleepMu.Unlock()
			tw.drive(sleep)
		}
	}()
}

// resume runs rest, the part of an inline batch after a callback that ended
// its goroutine, in order on a new goroutine (carryOn).
func (tw *TimingWheel) resume(rest []job, driving bool) {
	tw.carryOn(func() { tw.exec.execute(rest, driving) }, driving)
}

// plan arms the driver's sleep for sleepUntil: the instant its last look
// published (nextLook), or one that a register brought forward (wakeFor) or
// a Stop moved on (postpone) since. When nothing is pending the timer is
// stopped, and the driver sleeps until a register arms it again: it always
// waits on the timer's channel, which is how it is woken.
func (tw *TimingWheel) plan() {
	tw.sleepMu.Lock()
	defer tw.sleepMu.Unlock()
	tw.armSleep(instant(tw.sleepUntil.Load()))
}

// armSleep arms the driver's timer for at, or stops it for never. The
// caller holds sleepMu.
func (tw *TimingWheel) armSleep(at instant) {
	if at == never {
		tw.sleep.Stop()
		return
	}
	tw.sleep.Reset(at.until(tw.now()))
}

// postpone moves the driver's wake-up on after a Stop took out of a shard
// the deadline the driver was to wake for at old (shard.stop). If the
// driver still plans to look at old, it publishes the next instant any
// shard is due, by nextLook's handshake (a timer armed meanwhile is either
// seen there or sees the new instant and brings the sleep forward), and
// re-arms the driver's sleep for it. A driver that woke at old meanwhile
// finds nothing due and plans again: a lost race costs the one wake-up that
// every stop cost before. AdvanceClock's waits are not moved.
func (tw *TimingWheel) postpone(old instant) {
	sched.At("wheel: sleepUntil load")
	if instant(tw.sleepUntil.Load()) != old {
		return // the driver plans otherwise already
	}
	tw.sleepMu.Lock()
	defer tw.sleepMu.Unlock()
	if tw.sleep == nil || tw.stopped() || instant(tw.sleepUntil.Load()) != old {
		return
	}
	if at := tw.nextLook(); at != old {
		tw.armSleep(at)
	}
}

// advance polls every shard that is due at the current time, appending what
// is due, and returns the time it polled at and how long to wait before the
// next poll: forever for "until woken". ok is false once the wheel is
// stopped.
func (tw *TimingWheel) advance(due []job) (_ []job, now instant, wait time.Duration, ok bool) {
	if tw.stopped() {
		return due, 0, 0, false
	}
	// A token sent before this look is stale: the look sees its timer.
	select {
	case <-tw.wake:
	default:
	}
	now = tw.now()
	due = tw.processAt(now, due)
	next := tw.nextLook()
	if next == never {
		return due, now, forever, true
	}
	return due, now, next.until(now), true
}

// processAt takes what is due at now out of every shard whose next has come. With
// the inline executor, timers from several shards are put in deadline order,
// as one wheel would hand them.
func (tw *TimingWheel) processAt(now instant, due []job) []job {
	from := 0 // shards that gave timers
	for i := range tw.shards {
		sh := &tw.shards[i]
		sched.At("wheel: next load")
		if instant(sh.next.Load()) > now {
			continue
		}
		n := len(due)
		if due = sh.collect(now, due); len(due) > n {
			from++
		}
	}
	if from > 1 && tw.inline {
		slices.SortStableFunc(due, func(a, b job) int { return cmp.Compare(a.when, b.when) })
	}
	return due
}

// nextLook publishes in sleepUntil when the driver will look next, the
// earliest next of any shard, and returns it. It reads the shards again after
// publishing, so that a register that lowered a shard's next without seeing
// the new sleepUntil is seen here (the handshake at sleepUntil).
func (tw *TimingWheel) nextLook() instant {
	at := tw.earliest()
	for {
		sched.At("wheel: sleepUntil store")
		tw.sleepUntil.Store(int64(at))
		again := tw.earliest()
		if again >= at {
			return at
		}
		at = again
	}
}

// earliest returns the earliest next of any shard, read without their locks.
func (tw *TimingWheel) earliest() instant {
	at := never
	for i := range tw.shards {
		sched.At("wheel: next load")
		at = min(at, instant(tw.shards[i].next.Load()))
	}
	return at
}

// dispatch tells the observer how late the due timers are at now, when they were
// taken out of the wheel, and hands them to the executor, outside the lock;
// driving tells whether the caller is the driver or AdvanceClock's caller.
func (tw *TimingWheel) dispatch(due []job, now instant, driving bool) {
	if len(due) == 0 {
		return
	}
	if tw.observer != nil {
		tw.observe(due, now, driving)
	}
	tw.hand(due, driving)
}

// hand counts due as fired and hands them to the executor.
func (tw *TimingWheel) hand(due []job, driving bool) {
	tw.fired.Add(int64(len(due)))
	tw.inflight.Add(len(due))
	tw.exec.execute(due, driving)
}

// AdvanceClock drives a wheel made [WithManualClock] from the caller's own
// loop instead of a driver goroutine (Kafka's Timer.advanceClock). It waits up
// to timeout for a timer to come due, runs every timer that is due through the
// executor, and returns true; it returns false if nothing came due within
// timeout or the wheel is stopped. A timeout of zero or less only looks; one
// of math.MaxInt64 waits until a timer comes due or the wheel stops.
// Calling it on a running wheel is a misuse and panics.
func (tw *TimingWheel) AdvanceClock(timeout time.Duration) bool {
	tw.mustBeNew()
	var deadline instant
	var sleep *time.Timer
	for {
		due, now, wait, ok := tw.advanceManual()
		if !ok {
			return false
		}
		if len(due) > 0 {
			tw.dispatch(due, now, false)
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

func (tw *TimingWheel) advanceManual() ([]job, instant, time.Duration, bool) {
	if state(tw.state.Load()) == running {
		panic("timingwheel: AdvanceClock called on a running TimingWheel; make it WithManualClock to drive it yourself")
	}
	return tw.advance(nil)
}
