package metrics_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/metrics"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// drive takes p through two completions, one ForceComplete, one expiry, one
// context cancellation and one cancellation, and leaves one operation pending
// under two keys. In fake time each ending happens at a known elapsed time.
func drive(t *testing.T, p *purgatory.Purgatory[string]) {
	a, b := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
	p.TryCompleteElseWatch(a, "k1")
	p.TryCompleteElseWatch(b, "k1")
	forced, expiring, cancelled := testkit.NewOp(time.Hour), testkit.NewOp(50*time.Millisecond), testkit.NewOp(time.Hour)
	p.TryCompleteElseWatch(forced, "k2")
	p.TryCompleteElseWatch(expiring, "k3")
	p.TryCompleteElseWatch(cancelled, "k4")
	ctx, cancel := context.WithCancel(t.Context())
	withCtx := testkit.NewOp(time.Hour)
	withCtx.Context = ctx
	p.TryCompleteElseWatch(withCtx, "k5")
	p.TryCompleteElseWatch(testkit.NewOp(time.Hour), "k6", "k7") // stays pending

	time.Sleep(5 * time.Millisecond)
	a.Ready.Store(true)
	b.Ready.Store(true)
	require.Equal(t, 2, p.CheckAndComplete("k1"))
	purgatory.ForceComplete(forced)
	p.CancelForKey("k4")
	time.Sleep(500 * time.Millisecond)
	cancel()
	synctest.Wait()
}

func TestPurgatoryCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := metrics.NewPurgatoryObserver([]float64{0.01, 0.1, 1})
		p, err := purgatory.New[string]("produce", purgatory.WithObserver(obs))
		require.NoError(t, err)
		drive(t, p)

		c := metrics.NewPurgatoryCollector(p, metrics.WithDurationHistogram(obs)) // labelled with the name given to New
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP purgatory_delayed_operations Operations added and not yet ended (Kafka's NumDelayedOperations).
# TYPE purgatory_delayed_operations gauge
purgatory_delayed_operations{purgatory="produce"} 1
# HELP purgatory_operations_added_total Operations added with TryCompleteElseWatch.
# TYPE purgatory_operations_added_total counter
purgatory_operations_added_total{purgatory="produce"} 7
# HELP purgatory_operations_total Operations ended, by outcome.
# TYPE purgatory_operations_total counter
purgatory_operations_total{outcome="cancelled",purgatory="produce"} 1
purgatory_operations_total{outcome="closed",purgatory="produce"} 0
purgatory_operations_total{outcome="completed",purgatory="produce"} 2
purgatory_operations_total{outcome="context_done",purgatory="produce"} 1
purgatory_operations_total{outcome="expired",purgatory="produce"} 1
purgatory_operations_total{outcome="forced",purgatory="produce"} 1
purgatory_operations_total{outcome="shed",purgatory="produce"} 0
# HELP purgatory_watched_operations Operations watched, counted once per key they are watched under (Kafka's PurgatorySize).
# TYPE purgatory_watched_operations gauge
purgatory_watched_operations{purgatory="produce"} 2
`), "purgatory_delayed_operations", "purgatory_operations_added_total", "purgatory_operations_total", "purgatory_watched_operations"))

		// completed, forced and cancelled at 5 ms; expired at 50 ms; context done at 505 ms.
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP purgatory_operation_duration_seconds Time operations spent in the purgatory, from TryCompleteElseWatch to their end, by outcome.
# TYPE purgatory_operation_duration_seconds histogram
purgatory_operation_duration_seconds_bucket{outcome="cancelled",purgatory="produce",le="0.01"} 1
purgatory_operation_duration_seconds_bucket{outcome="cancelled",purgatory="produce",le="0.1"} 1
purgatory_operation_duration_seconds_bucket{outcome="cancelled",purgatory="produce",le="1"} 1
purgatory_operation_duration_seconds_bucket{outcome="cancelled",purgatory="produce",le="+Inf"} 1
purgatory_operation_duration_seconds_sum{outcome="cancelled",purgatory="produce"} 0.005
purgatory_operation_duration_seconds_count{outcome="cancelled",purgatory="produce"} 1
purgatory_operation_duration_seconds_bucket{outcome="closed",purgatory="produce",le="0.01"} 0
purgatory_operation_duration_seconds_bucket{outcome="closed",purgatory="produce",le="0.1"} 0
purgatory_operation_duration_seconds_bucket{outcome="closed",purgatory="produce",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="closed",purgatory="produce",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="closed",purgatory="produce"} 0
purgatory_operation_duration_seconds_count{outcome="closed",purgatory="produce"} 0
purgatory_operation_duration_seconds_bucket{outcome="completed",purgatory="produce",le="0.01"} 2
purgatory_operation_duration_seconds_bucket{outcome="completed",purgatory="produce",le="0.1"} 2
purgatory_operation_duration_seconds_bucket{outcome="completed",purgatory="produce",le="1"} 2
purgatory_operation_duration_seconds_bucket{outcome="completed",purgatory="produce",le="+Inf"} 2
purgatory_operation_duration_seconds_sum{outcome="completed",purgatory="produce"} 0.01
purgatory_operation_duration_seconds_count{outcome="completed",purgatory="produce"} 2
purgatory_operation_duration_seconds_bucket{outcome="context_done",purgatory="produce",le="0.01"} 0
purgatory_operation_duration_seconds_bucket{outcome="context_done",purgatory="produce",le="0.1"} 0
purgatory_operation_duration_seconds_bucket{outcome="context_done",purgatory="produce",le="1"} 1
purgatory_operation_duration_seconds_bucket{outcome="context_done",purgatory="produce",le="+Inf"} 1
purgatory_operation_duration_seconds_sum{outcome="context_done",purgatory="produce"} 0.505
purgatory_operation_duration_seconds_count{outcome="context_done",purgatory="produce"} 1
purgatory_operation_duration_seconds_bucket{outcome="expired",purgatory="produce",le="0.01"} 0
purgatory_operation_duration_seconds_bucket{outcome="expired",purgatory="produce",le="0.1"} 1
purgatory_operation_duration_seconds_bucket{outcome="expired",purgatory="produce",le="1"} 1
purgatory_operation_duration_seconds_bucket{outcome="expired",purgatory="produce",le="+Inf"} 1
purgatory_operation_duration_seconds_sum{outcome="expired",purgatory="produce"} 0.05
purgatory_operation_duration_seconds_count{outcome="expired",purgatory="produce"} 1
purgatory_operation_duration_seconds_bucket{outcome="forced",purgatory="produce",le="0.01"} 1
purgatory_operation_duration_seconds_bucket{outcome="forced",purgatory="produce",le="0.1"} 1
purgatory_operation_duration_seconds_bucket{outcome="forced",purgatory="produce",le="1"} 1
purgatory_operation_duration_seconds_bucket{outcome="forced",purgatory="produce",le="+Inf"} 1
purgatory_operation_duration_seconds_sum{outcome="forced",purgatory="produce"} 0.005
purgatory_operation_duration_seconds_count{outcome="forced",purgatory="produce"} 1
purgatory_operation_duration_seconds_bucket{outcome="shed",purgatory="produce",le="0.01"} 0
purgatory_operation_duration_seconds_bucket{outcome="shed",purgatory="produce",le="0.1"} 0
purgatory_operation_duration_seconds_bucket{outcome="shed",purgatory="produce",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="shed",purgatory="produce",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="shed",purgatory="produce"} 0
purgatory_operation_duration_seconds_count{outcome="shed",purgatory="produce"} 0
`), "purgatory_operation_duration_seconds"))

		p.Close()
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP purgatory_delayed_operations Operations added and not yet ended (Kafka's NumDelayedOperations).
# TYPE purgatory_delayed_operations gauge
purgatory_delayed_operations{purgatory="produce"} 0
# HELP purgatory_operations_total Operations ended, by outcome.
# TYPE purgatory_operations_total counter
purgatory_operations_total{outcome="cancelled",purgatory="produce"} 1
purgatory_operations_total{outcome="closed",purgatory="produce"} 1
purgatory_operations_total{outcome="completed",purgatory="produce"} 2
purgatory_operations_total{outcome="context_done",purgatory="produce"} 1
purgatory_operations_total{outcome="expired",purgatory="produce"} 1
purgatory_operations_total{outcome="forced",purgatory="produce"} 1
purgatory_operations_total{outcome="shed",purgatory="produce"} 0
`), "purgatory_delayed_operations", "purgatory_operations_total"), "a closed purgatory still scrapes; Close ended the pending one as closed")
	})
}

func TestTimingWheelCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := metrics.NewTimingWheelObserver([]float64{0.0005, 0.001})
		var panics atomic.Int32
		tw, err := timingwheel.New(timingwheel.WithShards(1), timingwheel.WithObserver(obs), timingwheel.WithPanicHandler(func(any) { panics.Add(1) })) // one shard: the driver's wake-ups do not depend on the P the test runs on
		require.NoError(t, err)
		tw.AfterFunc(time.Millisecond, func() {})
		tw.AfterFunc(2*time.Millisecond+200*time.Microsecond, func() { panic("boom") })
		tw.AfterFunc(time.Hour, func() {})
		time.Sleep(10 * time.Millisecond) // the driver wakes at 1 ms, at 2 ms (the bucket of 2.2 ms), at 2.2 ms: 3 wake-ups (the first AfterFunc's token came before it slept)
		synctest.Wait()

		c := metrics.NewTimingWheelCollector(tw, "main", metrics.WithLatenessHistogram(obs))
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP timingwheel_callback_panics_total Panics recovered from timer callbacks.
# TYPE timingwheel_callback_panics_total counter
timingwheel_callback_panics_total{wheel="main"} 1
# HELP timingwheel_driver_wakeups_total Wake-ups of the wheel's driver goroutine from its sleep: at a deadline, or woken for a sooner one.
# TYPE timingwheel_driver_wakeups_total counter
timingwheel_driver_wakeups_total{wheel="main"} 3
# HELP timingwheel_fired_total Timers whose time came and that were handed to the executor.
# TYPE timingwheel_fired_total counter
timingwheel_fired_total{wheel="main"} 2
# HELP timingwheel_pending_timers Timers waiting to fire.
# TYPE timingwheel_pending_timers gauge
timingwheel_pending_timers{wheel="main"} 1
# HELP timingwheel_rejected_timers_total Timers scheduled after the wheel was stopped; they never run.
# TYPE timingwheel_rejected_timers_total counter
timingwheel_rejected_timers_total{wheel="main"} 0
`), "timingwheel_callback_panics_total", "timingwheel_driver_wakeups_total", "timingwheel_fired_total", "timingwheel_pending_timers", "timingwheel_rejected_timers_total"))
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP timingwheel_lateness_seconds How long after its deadline each timer was handed to the executor.
# TYPE timingwheel_lateness_seconds histogram
timingwheel_lateness_seconds_bucket{wheel="main",le="0.0005"} 2
timingwheel_lateness_seconds_bucket{wheel="main",le="0.001"} 2
timingwheel_lateness_seconds_bucket{wheel="main",le="+Inf"} 2
timingwheel_lateness_seconds_sum{wheel="main"} 0
timingwheel_lateness_seconds_count{wheel="main"} 2
`), "timingwheel_lateness_seconds"))
		tw.Stop()
		tw.AfterFunc(time.Millisecond, func() {})
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP timingwheel_rejected_timers_total Timers scheduled after the wheel was stopped; they never run.
# TYPE timingwheel_rejected_timers_total counter
timingwheel_rejected_timers_total{wheel="main"} 1
`), "timingwheel_rejected_timers_total"), "a stopped wheel still scrapes and counts what it rejects")
	})
}

func TestLint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wobs := metrics.NewTimingWheelObserver(nil)
		tw, err := timingwheel.New(timingwheel.WithObserver(wobs))
		require.NoError(t, err)
		defer tw.Stop()
		obs := metrics.NewPurgatoryObserver(nil)
		p, err := purgatory.New[string]("lint", purgatory.WithObserver(obs), purgatory.WithTimingWheel(tw))
		require.NoError(t, err)
		defer p.Close()
		obs.OperationEnded(purgatory.Completed, time.Millisecond)
		wobs.TimerFired(time.Millisecond)
		for _, c := range []prometheus.Collector{
			metrics.NewPurgatoryCollector(p, metrics.WithDurationHistogram(obs)),
			metrics.NewTimingWheelCollector(tw, "lint", metrics.WithLatenessHistogram(wobs)),
		} {
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err)
			require.Empty(t, problems)
		}
	})
}

func TestTwoPurgatoriesOnOneRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		for _, name := range []string{"produce", "fetch"} {
			p, err := purgatory.New[string](name)
			require.NoError(t, err)
			defer p.Close()
			p.TryCompleteElseWatch(testkit.NewOp(time.Hour), "k")
			require.NoError(t, reg.Register(metrics.NewPurgatoryCollector(p)))
			require.NoError(t, reg.Register(metrics.NewTimingWheelCollector(p.TimingWheel(), name)))
		}
		require.Error(t, reg.Register(metrics.NewPurgatoryCollector(newPurgatoryStats{})),
			"a second collector with the same name is a duplicate")
		n, err := testutil.GatherAndCount(reg, "purgatory_delayed_operations")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		problems, err := testutil.GatherAndLint(reg)
		require.NoError(t, err)
		require.Empty(t, problems)
	})
}

// A second purgatory, or wheel, of a name already registered is refused by
// Register with an error that names it and says what to do, and wraps
// prometheus.AlreadyRegisteredError; the first one's series are untouched;
// MustRegister panics with the same error. A name unique in each of two
// registries is fine.
func TestRegisterNamesTheDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		p, err := purgatory.New[string]("produce")
		require.NoError(t, err)
		defer p.Close()
		require.NoError(t, metrics.Register(reg, metrics.NewPurgatoryCollector(p), metrics.NewTimingWheelCollector(p.TimingWheel(), "produce")))

		err = metrics.Register(reg, metrics.NewPurgatoryCollector(newPurgatoryStats{}))
		require.EqualError(t, err, `metrics: a purgatory named "produce" is registered already; give each purgatory a name of its own (purgatory.New's first argument), or each a registry: duplicate metrics collector registration attempted`)
		var dup prometheus.AlreadyRegisteredError
		require.ErrorAs(t, err, &dup)
		err = metrics.Register(reg, metrics.NewTimingWheelCollector(p.TimingWheel(), "produce"))
		require.ErrorContains(t, err, `metrics: a wheel named "produce" is registered already`)
		require.PanicsWithError(t, `metrics: a purgatory named "produce" is registered already; give each purgatory a name of its own (purgatory.New's first argument), or each a registry: duplicate metrics collector registration attempted`,
			func() { metrics.MustRegister(reg, metrics.NewPurgatoryCollector(newPurgatoryStats{})) })
		n, err := testutil.GatherAndCount(reg, "purgatory_delayed_operations")
		require.NoError(t, err)
		require.Equal(t, 1, n)

		other := prometheus.NewPedanticRegistry()
		require.NoError(t, metrics.Register(other, metrics.NewPurgatoryCollector(newPurgatoryStats{})))
	})
}

// newPurgatoryStats is a second purgatory named "produce".
type newPurgatoryStats struct{}

func (newPurgatoryStats) Stats() purgatory.Stats { return purgatory.Stats{} }
func (newPurgatoryStats) Name() string           { return "produce" }

// fanOut is a user's observer that feeds two others.
type fanOut []purgatory.Observer

func (f fanOut) OperationEnded(o purgatory.Outcome, d time.Duration) {
	for _, obs := range f {
		obs.OperationEnded(o, d)
	}
}

// A histogram behind an observer of the user's own (fanning out to it) is
// exported all the same, because the collector is told what to export; the
// panics recovered on the library's goroutines are exported too.
func TestExplicitHistogramAndPanics(t *testing.T) {
	log := logcapture.Capture(t)
	synctest.Test(t, func(t *testing.T) {
		obs := metrics.NewPurgatoryObserver([]float64{1})
		var seen atomic.Int32
		p, err := purgatory.New[string]("wrapped", purgatory.WithObserver(fanOut{obs, counting{&seen}}))
		require.NoError(t, err)
		defer p.Close()
		p.TryCompleteElseWatch(&panicky{Op: *testkit.NewOp(time.Millisecond)}, "k")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 1, seen.Load())

		c := metrics.NewPurgatoryCollector(p, metrics.WithDurationHistogram(obs))
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP purgatory_callback_panics_total Panics recovered from operations' callbacks on the library's goroutines (timeouts, contexts, Close).
# TYPE purgatory_callback_panics_total counter
purgatory_callback_panics_total{purgatory="wrapped"} 1
# HELP purgatory_operation_duration_seconds Time operations spent in the purgatory, from TryCompleteElseWatch to their end, by outcome.
# TYPE purgatory_operation_duration_seconds histogram
purgatory_operation_duration_seconds_bucket{outcome="cancelled",purgatory="wrapped",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="cancelled",purgatory="wrapped",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="cancelled",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_count{outcome="cancelled",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_bucket{outcome="closed",purgatory="wrapped",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="closed",purgatory="wrapped",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="closed",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_count{outcome="closed",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_bucket{outcome="completed",purgatory="wrapped",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="completed",purgatory="wrapped",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="completed",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_count{outcome="completed",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_bucket{outcome="context_done",purgatory="wrapped",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="context_done",purgatory="wrapped",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="context_done",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_count{outcome="context_done",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_bucket{outcome="expired",purgatory="wrapped",le="1"} 1
purgatory_operation_duration_seconds_bucket{outcome="expired",purgatory="wrapped",le="+Inf"} 1
purgatory_operation_duration_seconds_sum{outcome="expired",purgatory="wrapped"} 0.001
purgatory_operation_duration_seconds_count{outcome="expired",purgatory="wrapped"} 1
purgatory_operation_duration_seconds_bucket{outcome="forced",purgatory="wrapped",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="forced",purgatory="wrapped",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="forced",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_count{outcome="forced",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_bucket{outcome="shed",purgatory="wrapped",le="1"} 0
purgatory_operation_duration_seconds_bucket{outcome="shed",purgatory="wrapped",le="+Inf"} 0
purgatory_operation_duration_seconds_sum{outcome="shed",purgatory="wrapped"} 0
purgatory_operation_duration_seconds_count{outcome="shed",purgatory="wrapped"} 0
`), "purgatory_callback_panics_total", "purgatory_operation_duration_seconds"))
	})
	require.Contains(t, log.String(), "expired")
	require.Panics(t, func() { metrics.WithDurationHistogram(nil) })
	require.Panics(t, func() { metrics.WithLatenessHistogram(nil) })
	require.Panics(t, func() { metrics.NewTimingWheelCollector(nil, "") })
}

type counting struct{ n *atomic.Int32 }

func (c counting) OperationEnded(purgatory.Outcome, time.Duration) { c.n.Add(1) }

// panicky panics in OnExpiration.
type panicky struct{ testkit.Op }

func (*panicky) OnExpiration() { panic("expired, and panicked") }

// The lateness histogram holds the time from each timer's deadline to its
// hand-off: a manual wheel advanced 200 ms after a 10 ms deadline puts one
// observation of 0.19 s in the +Inf bucket (issue 31: it was 0).
func TestLatenessHistogramIsTrue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := metrics.NewTimingWheelObserver([]float64{0.001, 0.1})
		tw, err := timingwheel.New(timingwheel.WithManualClock(), timingwheel.WithObserver(obs))
		require.NoError(t, err)
		defer tw.Stop()
		tw.AfterFunc(10*time.Millisecond, func() {})
		time.Sleep(200 * time.Millisecond)
		require.True(t, tw.AdvanceClock(0))
		c := metrics.NewTimingWheelCollector(tw, "manual", metrics.WithLatenessHistogram(obs))
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP timingwheel_lateness_seconds How long after its deadline each timer was handed to the executor.
# TYPE timingwheel_lateness_seconds histogram
timingwheel_lateness_seconds_bucket{wheel="manual",le="0.001"} 0
timingwheel_lateness_seconds_bucket{wheel="manual",le="0.1"} 0
timingwheel_lateness_seconds_bucket{wheel="manual",le="+Inf"} 1
timingwheel_lateness_seconds_sum{wheel="manual"} 0.19
timingwheel_lateness_seconds_count{wheel="manual"} 1
`), "timingwheel_lateness_seconds"))
	})
}

// The executor's gauges and the start lateness, inline: two callbacks due at
// 1 ms, the first taking 0.5 s, start 0 s and 0.5 s late; at 1 s one blocks,
// and the one due with it waits; looked at 3 s, one is busy and one queued
// 2 s past its deadline. The three that started did so 0, 0.5 and 0 s late.
func TestExecutorGaugesAndStartLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := metrics.NewTimingWheelObserver([]float64{0.001, 1})
		tw, err := timingwheel.New(timingwheel.WithObserver(obs), timingwheel.WithExecutor(timingwheel.InlineExecutor()))
		require.NoError(t, err)
		defer tw.Stop()
		release := make(chan struct{})
		tw.AfterFunc(time.Millisecond, func() { time.Sleep(500 * time.Millisecond) })
		tw.AfterFunc(time.Millisecond, func() {})
		tw.AfterFunc(time.Second, func() { <-release })
		tw.AfterFunc(time.Second, func() {})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		c := metrics.NewTimingWheelCollector(tw, "inline", metrics.WithLatenessHistogram(obs))
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP timingwheel_busy_callbacks Callbacks running now.
# TYPE timingwheel_busy_callbacks gauge
timingwheel_busy_callbacks{wheel="inline"} 1
# HELP timingwheel_queued_callbacks Callbacks handed to the executor and not yet started.
# TYPE timingwheel_queued_callbacks gauge
timingwheel_queued_callbacks{wheel="inline"} 1
# HELP timingwheel_oldest_queued_seconds How long past its deadline the next queued callback is; 0 if none is queued.
# TYPE timingwheel_oldest_queued_seconds gauge
timingwheel_oldest_queued_seconds{wheel="inline"} 2
# HELP timingwheel_start_lateness_seconds How long after its deadline each timer's callback started to run.
# TYPE timingwheel_start_lateness_seconds histogram
timingwheel_start_lateness_seconds_bucket{wheel="inline",le="0.001"} 2
timingwheel_start_lateness_seconds_bucket{wheel="inline",le="1"} 3
timingwheel_start_lateness_seconds_bucket{wheel="inline",le="+Inf"} 3
timingwheel_start_lateness_seconds_sum{wheel="inline"} 0.5
timingwheel_start_lateness_seconds_count{wheel="inline"} 3
`), "timingwheel_busy_callbacks", "timingwheel_queued_callbacks", "timingwheel_oldest_queued_seconds", "timingwheel_start_lateness_seconds"))
		close(release)
		synctest.Wait()
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP timingwheel_queued_callbacks Callbacks handed to the executor and not yet started.
# TYPE timingwheel_queued_callbacks gauge
timingwheel_queued_callbacks{wheel="inline"} 0
`), "timingwheel_queued_callbacks"))
	})
}
