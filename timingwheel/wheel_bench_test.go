package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var benchSizes = []int{16, 64, 256, 512, 1024, 4096}

// BenchmarkWheelSize compares wheel sizes on the pure wheel, so that no clock,
// lock or goroutine blurs the data structure's own cost; DefaultWheelSize comes
// from it. Each op of "workload=W1" schedules a timer with a delay in
// [1 ms, 1 s) and, amortized, expires it with every cascade on the way (the
// driver's whole job for W1); "workload=W2" adds a timer at 30 s and removes
// it with a million timers parked at 30 min.
func BenchmarkWheelSize(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("workload=W1/size=%d", size), func(b *testing.B) {
			const batch = 100_000
			rng := rand.New(rand.NewPCG(1, 2))
			timers := make([]timer, batch)
			for b.Loop() {
				w := newWheel(time.Millisecond, size)
				for i := range timers {
					w.insert(&timers[i], instant(time.Millisecond)+instant(rng.Int64N(int64(999*time.Millisecond))))
				}
				drain(w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/timer")
		})
	}
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("workload=W2/size=%d", size), func(b *testing.B) {
			w := newWheel(time.Millisecond, size)
			parked := make([]timer, 1_000_000)
			for i := range parked {
				w.insert(&parked[i], instant(30*time.Minute))
			}
			var t timer
			now := time.Duration(0)
			for b.Loop() {
				now += 100 * time.Nanosecond // the clock moves as requests arrive
				w.insert(&t, instant(now+30*time.Second))
				w.stop(&t)
				if now%time.Millisecond == 0 {
					w.poll(instant(now), nil) // the driver keeps up
				}
			}
		})
	}
}

// drain drives w until every timer has been handed out, as the driver would.
func drain(w *wheel) {
	var due []job
	for {
		next, ok := w.next() // the next bucket's tick, or the next exact deadline
		if !ok {
			return
		}
		due = w.poll(next, due[:0])
	}
}
