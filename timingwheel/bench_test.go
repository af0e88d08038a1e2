package timingwheel_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

const parked = 1_000_000

func noop() {}

// stdlib adapts time.AfterFunc to the same shape as the wheel, the reference
// every number here is a ratio to.
type stdlib struct{}

func (stdlib) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	return time.AfterFunc(d, f)
}

type wheel struct{ *timingwheel.TimingWheel }

func (w wheel) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	return w.TimingWheel.AfterFunc(d, f)
}

type scheduler interface {
	AfterFunc(d time.Duration, f func()) interface{ Stop() bool }
}

func systems(b *testing.B, run func(b *testing.B, s scheduler)) {
	b.Run("system=wheel", func(b *testing.B) {
		tw, err := timingwheel.New()
		if err != nil {
			b.Fatal(err)
		}
		defer tw.Stop()
		run(b, wheel{tw})
	})
	b.Run("system=stdlib", func(b *testing.B) { run(b, stdlib{}) })
}

// BenchmarkAfterFuncStop is workload W2 of DESIGN.md in miniature: with a
// million timers parked at 30 minutes, each op schedules a timer at 30 seconds
// and stops it, as a request handler does with its timeout.
func BenchmarkAfterFuncStop(b *testing.B) {
	systems(b, func(b *testing.B, s scheduler) {
		defer park(s)()
		b.ReportAllocs()
		defer reportGC(b)()
		for b.Loop() {
			s.AfterFunc(30*time.Second, noop).Stop()
		}
	})
}

// record is a caller's value with its own timeout Timer, for
// BenchmarkOwnedResetStop: it is its Timer's Handler.
type record struct {
	timeout timingwheel.Timer
	fired   bool
}

func (r *record) Fire() { r.fired = true }

// BenchmarkOwnedResetStop is W2 with timers the caller owns: a million records
// parked at 30 minutes, each embedding its Timer, and each op arms one more
// record's Timer at 30 seconds and stops it, allocating nothing.
func BenchmarkOwnedResetStop(b *testing.B) {
	tw, err := timingwheel.New()
	if err != nil {
		b.Fatal(err)
	}
	defer tw.Stop()
	records := make([]record, parked+1)
	for i := range records {
		tw.InitTimer(&records[i].timeout, &records[i])
	}
	for i := range parked {
		records[i].timeout.Reset(30 * time.Minute)
	}
	r := &records[parked]
	b.ReportAllocs()
	defer reportGC(b)()
	for b.Loop() {
		r.timeout.Reset(30 * time.Second)
		r.timeout.Stop()
	}
}

// BenchmarkOwnedResetStopParallel is BenchmarkOwnedResetStop from GOMAXPROCS
// goroutines at once (run it with -cpu 1,2 to compare), each with a record
// of its own: the wheel's shards keep them from contending (W7 in bench/).
func BenchmarkOwnedResetStopParallel(b *testing.B) {
	tw, err := timingwheel.New()
	if err != nil {
		b.Fatal(err)
	}
	defer tw.Stop()
	records := make([]record, parked)
	for i := range records {
		tw.InitTimer(&records[i].timeout, &records[i])
		records[i].timeout.Reset(30 * time.Minute)
	}
	b.RunParallel(func(pb *testing.PB) {
		r := new(record)
		tw.InitTimer(&r.timeout, r)
		for pb.Next() {
			r.timeout.Reset(30 * time.Second)
			r.timeout.Stop()
		}
	})
}

// reportGC returns a function that reports the garbage collector's CPU time
// per op (gc-ns/op) since reportGC was called, as the runtime estimates it.
func reportGC(b *testing.B) func() {
	sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(sample)
	before := sample[0].Value.Float64()
	return func() {
		runtime.GC() // the estimate is brought up to date at each cycle
		metrics.Read(sample)
		b.ReportMetric((sample[0].Value.Float64()-before)*1e9/float64(b.N), "gc-ns/op")
	}
}

// BenchmarkAfterFuncStopParallel is W2p: the same pairs from GOMAXPROCS
// goroutines at once.
func BenchmarkAfterFuncStopParallel(b *testing.B) {
	systems(b, func(b *testing.B, s scheduler) {
		defer park(s)()
		b.ReportAllocs()
		defer reportGC(b)()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.AfterFunc(30*time.Second, noop).Stop()
			}
		})
	})
}

// park schedules a million timers at 30 minutes and returns a function that
// stops them.
func park(s scheduler) (unpark func()) {
	timers := make([]interface{ Stop() bool }, parked)
	for i := range timers {
		timers[i] = s.AfterFunc(30*time.Minute, noop)
	}
	return func() {
		for _, t := range timers {
			t.Stop()
		}
	}
}

// BenchmarkParkedHeap reports the live heap each parked timer costs
// (heap-B/timer), parking a million timers at 30 minutes per op.
func BenchmarkParkedHeap(b *testing.B) {
	systems(b, func(b *testing.B, s scheduler) {
		var perTimer float64
		timers := make([]interface{ Stop() bool }, parked)
		for b.Loop() {
			before := testkit.LiveHeap()
			for i := range timers {
				timers[i] = s.AfterFunc(30*time.Minute, noop)
			}
			after := testkit.LiveHeap()
			perTimer = float64(after-before) / parked
			for _, t := range timers {
				t.Stop()
			}
			clear(timers)
		}
		b.ReportMetric(perTimer, "heap-B/timer")
	})
}

type noopObserver struct{}

func (noopObserver) TimerFired(time.Duration) {}

// BenchmarkFire measures the firing path: each op is one timer that is due at
// once and run inline by AdvanceClock, with no observer and with one that does
// nothing (the cost of the hook itself).
func BenchmarkFire(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []timingwheel.Option
	}{{"none", nil}, {"noop", []timingwheel.Option{timingwheel.WithObserver(noopObserver{})}}} {
		b.Run("observer="+tc.name, func(b *testing.B) {
			tw, err := timingwheel.New(append(tc.opts, timingwheel.WithExecutor(timingwheel.InlineExecutor()), timingwheel.WithManualClock())...)
			if err != nil {
				b.Fatal(err)
			}
			defer tw.Stop()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				tw.AfterFunc(0, noop)
				if n++; n%1000 == 0 {
					tw.AdvanceClock(0)
				}
			}
			tw.AdvanceClock(0)
		})
	}
}

var sink *timingwheel.Timer

// BenchmarkFloor measures what any never-early schedule+stop pair must pay on
// this machine, apart from the wheel: one monotonic clock read (the deadline),
// one Timer allocation, and two uncontended lock round trips (schedule, stop).
func BenchmarkFloor(b *testing.B) {
	b.Run("part=clock", func(b *testing.B) {
		start := time.Now()
		var d time.Duration
		for b.Loop() {
			d += time.Since(start)
		}
		_ = d
	})
	b.Run("part=alloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = &timingwheel.Timer{}
		}
	})
	b.Run("part=locks", func(b *testing.B) {
		var mu sync.Mutex
		for b.Loop() { // empty critical sections: the round trips are the point
			mu.Lock()
			//lint:ignore SA2001 the lock round trip is what is measured
			mu.Unlock()
			mu.Lock()
			//lint:ignore SA2001 the lock round trip is what is measured
			mu.Unlock()
		}
	})
}

// BenchmarkContextTimeout: with a million request contexts live (deadline in
// 30 minutes), each op creates one with a 30-second timeout and cancels it
// before its deadline, as a request handler does: tw.WithTimeout against
// context.WithTimeout.
func BenchmarkContextTimeout(b *testing.B) {
	for _, sys := range []string{"wheel", "stdlib"} {
		b.Run("system="+sys, func(b *testing.B) {
			withTimeout := context.WithTimeout
			if sys == "wheel" {
				tw, err := timingwheel.New()
				if err != nil {
					b.Fatal(err)
				}
				defer tw.Stop()
				withTimeout = tw.WithTimeout
			}
			cancels := make([]context.CancelFunc, parked)
			for i := range cancels {
				_, cancels[i] = withTimeout(context.Background(), 30*time.Minute)
			}
			defer func() {
				for _, c := range cancels {
					c()
				}
			}()
			b.ReportAllocs()
			for b.Loop() {
				_, cancel := withTimeout(context.Background(), 30*time.Second)
				cancel()
			}
		})
	}
}

// BenchmarkIdleWheel measures what an idle wheel holds: the live heap per
// wheel, b.N wheels alive at once (run it with -benchtime 50x), with one
// shard, two and eight.
func BenchmarkIdleWheel(b *testing.B) {
	for _, shards := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			wheels := make([]*timingwheel.TimingWheel, 0, b.N)
			before := testkit.LiveHeap()
			for range b.N {
				tw, err := timingwheel.New(timingwheel.WithShards(shards))
				if err != nil {
					b.Fatal(err)
				}
				wheels = append(wheels, tw)
			}
			b.ReportMetric(float64(testkit.LiveHeap()-before)/float64(b.N)/1024, "KiB/wheel")
			for _, tw := range wheels {
				tw.Stop()
			}
		})
	}
}
