package timingwheel

import (
	"math"
	"time"
)

// instant is a point on a wheel's clock: nanoseconds since the wheel's start,
// on the monotonic clock. Deadlines, the driver's now and the delay queue's
// expirations are all instants; this file holds every conversion between
// instants, durations, times and ticks, each saturating instead of
// overflowing.
//
// Every instant lies in [0, never]: a deadline before the wheel's start is
// its start, which has passed, so the timer is due at once all the same.
// That bound is what keeps the difference of any two instants inside a
// Duration. Before it, AfterFunc(math.MinInt64) made a deadline near
// MinInt64; an arm that brought the driver's sleep forward to it took
// until's overflowed difference, about 292 years, for the wait, and every
// timer of the wheel waited with it (issue 69, since 4fa01af).
type instant int64

// never is the instant that does not come: a driver that waits for it waits
// until woken.
const never instant = math.MaxInt64

// now returns the current instant.
func (tw *TimingWheel) now() instant { return instant(time.Since(tw.start)) }

// deadline returns the instant d after now.
func (tw *TimingWheel) deadline(d time.Duration) instant { return tw.now().add(d) }

// add returns i+d for i in [0, never], saturating at never and at the
// wheel's start, 0: any Duration, math.MinInt64 and math.MaxInt64 included,
// gives an instant.
func (i instant) add(d time.Duration) instant {
	switch {
	case d > 0 && instant(d) > never-i:
		return never
	case d < 0 && instant(-(d+1)) >= i: // -(d+1): -d without overflow at MinInt64, less one
		return 0
	}
	return i + instant(d)
}

// until returns how long after now i comes, zero if it has come. Both are
// instants, so the difference cannot overflow; it is taken only when i is
// later all the same.
func (i instant) until(now instant) time.Duration {
	if i <= now {
		return 0
	}
	return time.Duration(i - now)
}

// instantOf converts a time into an instant; times before the wheel's start
// become its start.
func (tw *TimingWheel) instantOf(t time.Time) instant {
	return max(instant(t.Sub(tw.start)), 0)
}

// timeOf converts an instant into a time.
func (tw *TimingWheel) timeOf(i instant) time.Time { return tw.start.Add(time.Duration(i)) }

// maxTicks caps ticks so that every level's arithmetic stays inside int64.
// With the smallest allowed tick (1µs) it is about 146,000 years away.
const maxTicks = math.MaxInt64 / 2

// tickOf returns the tick an instant falls in.
func (w *wheel) tickOf(i instant) int64 {
	if i <= 0 {
		return 0
	}
	return min(int64(i)/int64(w.tick), maxTicks)
}

// startOf returns the instant a tick begins, saturating at never.
func (w *wheel) startOf(tick int64) instant {
	if tick > math.MaxInt64/int64(w.tick) {
		return never
	}
	return instant(tick * int64(w.tick))
}
