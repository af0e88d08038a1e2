package timingwheel

import (
	"slices"
	"testing"
	"time"
)

// FuzzWheel runs random sequences of add, stop, reset and advance on the pure
// wheel and on a reference model (a slice of deadlines), and requires both to
// fire the same timers at the same advances: every timer whose deadline has
// come, and no other, whatever tick the advance lands in.
func FuzzWheel(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 0, 1, 2, 0, 4}) // a deadline 1µs in: not due at 0.2 ms, due at 1 ms
	f.Add([]byte{0, 1, 10, 0, 2, 200, 2, 0, 40, 1, 1, 0, 3, 0, 255, 2, 0, 255})
	f.Add([]byte{0, 3, 0, 2, 0, 0, 0, 3, 90, 0, 3, 5, 3, 0, 200, 3, 0, 200, 3, 0, 200})
	f.Add([]byte{0, 0, 255, 0, 1, 254, 0, 2, 128, 3, 0, 255, 1, 2, 0, 3, 0, 255, 3, 0, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const tick, size, ids = time.Millisecond, 4, 16
		w := newWheel(tick, size)
		timers := make([]*timer, ids)
		for i := range timers {
			timers[i] = newEntry(0)
		}
		index := func(tm *timer) int { return slices.Index(timers, tm) }
		type model struct {
			id  int
			due time.Duration // its deadline: it must fire at the first advance at or after it
		}
		var pending []model
		now := time.Duration(0)

		for i := 0; i+2 < len(ops); i += 3 {
			kind, id, arg := ops[i]%4, int(ops[i+1])%ids, time.Duration(ops[i+2])
			switch kind {
			case 0: // add, or reset if pending: a deadline from -1 to ~190 ticks ahead
				exp := now + (arg-1)*tick*3/4 + arg*time.Microsecond
				w.insert(timers[id], instant(exp))
				pending = slices.DeleteFunc(pending, func(m model) bool { return m.id == id })
				pending = append(pending, model{id, exp})
			case 1: // stop
				was := slices.IndexFunc(pending, func(m model) bool { return m.id == id }) >= 0
				if got := w.stop(timers[id]); got != was {
					t.Fatalf("stop %d: wheel says pending=%v, model %v", id, got, was)
				}
				pending = slices.DeleteFunc(pending, func(m model) bool { return m.id == id })
			default: // advance the clock by up to ~50 ticks, often mid-tick
				now += arg * tick / 5
				var got, want []int
				for _, tm := range w.poll(instant(now), nil) {
					got = append(got, index(tm.t))
				}
				for _, m := range pending {
					if m.due <= now {
						want = append(want, m.id)
					}
				}
				pending = slices.DeleteFunc(pending, func(m model) bool { return m.due <= now })
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("at %v the wheel fired %v, the model %v", now, got, want)
				}
			}
			if w.count != len(pending) {
				t.Fatalf("wheel holds %d timers, model %d", w.count, len(pending))
			}
		}
	})
}
