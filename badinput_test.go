package purgatory_test

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

func purgatoryFor(t *testing.T) *purgatory.Purgatory[string] {
	p, err := purgatory.New[string]("bad-input")
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// TestBadInput is the reliability issue's table: every bad input gets a clear
// error or a documented misuse panic with the package prefix; none hangs (each
// row runs in a synctest bubble, where a hang is reported as a deadlock),
// drops work silently or crashes deep inside.
func TestBadInput(t *testing.T) {
	rows := []struct {
		name string
		test func(t *testing.T)
	}{
		{"zero, negative and most negative delays run as soon as possible", func(t *testing.T) {
			tw := testkit.Wheel(t)
			var ran atomic.Int32
			for _, d := range []time.Duration{0, -time.Second, math.MinInt64} {
				tw.AfterFunc(d, func() { ran.Add(1) })
			}
			synctest.Wait()
			require.EqualValues(t, 3, ran.Load())
		}},
		{"MaxInt64 delay stays pending and can be stopped and reset", func(t *testing.T) {
			tw := testkit.Wheel(t)
			tm := tw.AfterFunc(math.MaxInt64, func() { t.Error("ran") })
			time.Sleep(24 * time.Hour)
			synctest.Wait()
			require.Equal(t, 1, tw.Len())
			require.True(t, tm.Reset(math.MaxInt64))
			require.True(t, tm.Stop())
		}},
		{"zero operation timeout is a forgotten field: it panics before anything changes", func(t *testing.T) {
			p := purgatoryFor(t)
			op := testkit.NewOp(0)
			testkit.Misuse(t, "purgatory: Op.Timeout is zero", "", func() { p.TryCompleteElseWatch(op, "k") })
			require.Equal(t, purgatory.Stats{}, p.Stats())
			op.Timeout = time.Second
			require.False(t, p.TryCompleteElseWatch(op, "k"), "the same op can then be added")
		}},
		{"negative and MaxInt64 (NoTimeout) operation timeouts", func(t *testing.T) {
			p := purgatoryFor(t)
			ops := []*testkit.Op{testkit.NewOp(-time.Hour), testkit.NewOp(math.MaxInt64)}
			for i, op := range ops {
				require.False(t, p.TryCompleteElseWatch(op, fmt.Sprint(i)))
			}
			time.Sleep(time.Hour)
			synctest.Wait()
			require.Equal(t, purgatory.Expired, ops[0].Outcome())
			require.Equal(t, purgatory.Pending, ops[1].Outcome())
			require.Equal(t, 1, p.Delayed())
			require.Zero(t, p.TimingWheel().Len(), "NoTimeout arms no timer")
		}},
		{"tick below 1µs or not positive", func(t *testing.T) {
			for _, d := range []time.Duration{0, -1, time.Nanosecond, 999 * time.Nanosecond} {
				_, err := timingwheel.New(timingwheel.WithTick(d))
				require.ErrorIs(t, err, timingwheel.ErrInvalidOption, "tick %v", d)
				require.Contains(t, err.Error(), "timingwheel: ")
			}
		}},
		{"wheel size 0, 1, negative, huge", func(t *testing.T) {
			for _, n := range []int{0, 1, -1, math.MinInt, timingwheel.MaxWheelSize + 1, math.MaxInt} {
				_, err := timingwheel.New(timingwheel.WithWheelSize(n))
				require.ErrorIs(t, err, timingwheel.ErrInvalidOption, "size %d", n)
			}
		}},
		{"pool of zero or negative workers", func(t *testing.T) {
			for _, n := range []int{0, -1} {
				_, err := timingwheel.New(timingwheel.WithExecutor(timingwheel.PoolExecutor(n)))
				require.ErrorIs(t, err, timingwheel.ErrInvalidOption)
			}
		}},
		{"zero or negative shards", func(t *testing.T) {
			for _, n := range []int{0, -1} {
				_, err := purgatory.New[string]("x", purgatory.WithShards(n))
				require.ErrorIs(t, err, purgatory.ErrInvalidOption)
			}
		}},
		{"nil callback", func(t *testing.T) {
			tw := testkit.Wheel(t)
			testkit.Misuse(t, "timingwheel: ", "", func() { tw.AfterFunc(time.Second, nil) })
			testkit.Misuse(t, "timingwheel: ", "", func() { tw.ScheduleFunc(timingwheel.Every(time.Second), nil) })
			testkit.Misuse(t, "timingwheel: ", "", func() { tw.ScheduleFunc(nil, func() {}) })
			testkit.Misuse(t, "timingwheel: ", "", func() { timingwheel.Every(-time.Second) })
			require.Zero(t, tw.Len())
		}},
		{"nil operation", func(t *testing.T) {
			p := purgatoryFor(t)
			testkit.Misuse(t, "purgatory: ", "", func() { p.TryCompleteElseWatch(nil, "k") })
			testkit.Misuse(t, "purgatory: ", "", func() { purgatory.ForceComplete(nil) })
		}},
		{"zero keys", func(t *testing.T) {
			p := purgatoryFor(t)
			op := testkit.NewOp(time.Hour)
			testkit.Misuse(t, "purgatory: ", "", func() { p.TryCompleteElseWatch(op) })
			testkit.Misuse(t, "purgatory: ", "", func() { p.TryCompleteElseWatch(op, []string{}...) })
			require.Zero(t, p.Delayed(), "a rejected call adds nothing")
		}},
		{"duplicate keys in one watch are watched once", func(t *testing.T) {
			p := purgatoryFor(t)
			op := testkit.NewOp(time.Hour)
			p.TryCompleteElseWatch(op, "k", "k", "k")
			require.Equal(t, 1, p.Watched())
			op.Ready.Store(true)
			require.Equal(t, 1, p.CheckAndComplete("k"))
			require.EqualValues(t, 1, op.Completed.Load())
		}},
		{"the same operation added twice", func(t *testing.T) {
			p := purgatoryFor(t)
			op := testkit.NewOp(time.Hour)
			p.TryCompleteElseWatch(op, "k")
			testkit.Misuse(t, "purgatory: ", "", func() { p.TryCompleteElseWatch(op, "j") })
			require.Equal(t, 1, p.Delayed())
		}},
		{"Stop and Reset on a nil or zero Timer", func(t *testing.T) {
			var nilTimer *timingwheel.Timer
			var zero timingwheel.Timer
			require.False(t, nilTimer.Stop())
			require.False(t, nilTimer.Reset(time.Second))
			require.False(t, zero.Stop())
			require.False(t, zero.Reset(time.Second))
		}},
		{"every wheel call after Stop", func(t *testing.T) {
			tw, err := timingwheel.New()
			require.NoError(t, err)
			tm := tw.AfterFunc(time.Hour, func() { t.Error("ran") })
			require.Len(t, tw.Stop(), 1)
			require.Nil(t, tw.Stop(), "Stop twice")
			require.ErrorIs(t, tw.Start(), timingwheel.ErrStopped)
			late := tw.AfterFunc(time.Millisecond, func() { t.Error("ran after Stop") })
			rec := tw.ScheduleFunc(timingwheel.Every(time.Millisecond), func() { t.Error("ran after Stop") })
			require.False(t, late.Stop())
			require.False(t, rec.Stop())
			require.False(t, tm.Stop())
			require.False(t, tm.Reset(time.Millisecond))
			require.True(t, late.Rejected() && rec.Rejected() && tm.Rejected(), "each refused timer says so")
			require.False(t, tw.AdvanceClock(time.Second))
			require.Zero(t, tw.Len())
			require.EqualValues(t, 3, tw.Stats().Rejected, "what was refused is counted, not dropped silently")
			time.Sleep(time.Hour)
			synctest.Wait()
		}},
		{"every purgatory call after Close, and Close twice", func(t *testing.T) {
			p, err := purgatory.New[string]("closed")
			require.NoError(t, err)
			pending := testkit.NewOp(time.Hour)
			p.TryCompleteElseWatch(pending, "k")
			p.Close()
			p.Close()
			require.Equal(t, purgatory.Closed, pending.Outcome())
			late := testkit.NewOp(time.Hour)
			require.False(t, p.TryCompleteElseWatch(late, "k"))
			require.Equal(t, purgatory.Closed, late.Outcome(), "added after Close: ended at once, not dropped")
			require.EqualValues(t, 1, late.Completed.Load())
			require.Zero(t, late.Expired.Load())
			require.Zero(t, p.CheckAndComplete("k"))
			require.Empty(t, p.CancelForKey("k"))
			require.False(t, purgatory.ForceComplete(late))
			require.Zero(t, p.Delayed())
			require.Zero(t, p.Watched())
			require.Equal(t, purgatory.Stats{Added: 2, Closed: 2}, p.Stats())
		}},
		{"Stop from inside a callback, with either executor", func(t *testing.T) {
			for _, exec := range []timingwheel.Executor{timingwheel.InlineExecutor(), timingwheel.PoolExecutor(2)} {
				tw, err := timingwheel.New(timingwheel.WithExecutor(exec))
				require.NoError(t, err)
				handedBack := make(chan int)
				tw.AfterFunc(time.Hour, func() {})
				tw.AfterFunc(time.Millisecond, func() { handedBack <- len(tw.Stop()) })
				require.Equal(t, 1, <-handedBack)
				tw.Stop()
			}
		}},
		{"Close from inside OnComplete and OnExpiration", func(t *testing.T) {
			p, err := purgatory.New[string]("reentrant")
			require.NoError(t, err)
			closer := &closingOp{Op: testkit.NewOp(time.Millisecond), close: p.Close}
			other := testkit.NewOp(time.Hour)
			p.TryCompleteElseWatch(closer, "a")
			p.TryCompleteElseWatch(other, "b")
			time.Sleep(time.Millisecond)
			synctest.Wait()
			require.Equal(t, purgatory.Expired, closer.Outcome())
			require.Equal(t, purgatory.Closed, other.Outcome(), "Close from a callback ended the rest")
			p.Close()
		}},
		{"AdvanceClock on a started wheel", func(t *testing.T) {
			tw := testkit.Wheel(t)
			testkit.Misuse(t, "timingwheel: ", "", func() { tw.AdvanceClock(0) })
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, row.test)
		})
	}
}

type closingOp struct {
	*testkit.Op
	close func()
}

func (o *closingOp) OnExpiration() {
	o.Op.OnExpiration()
	o.close()
}
