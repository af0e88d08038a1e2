package purgatory_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// The wheel's policy: Stop hands back every timer still pending. With
// thousands scheduled, some fired, some stopped: fired + stopped + handed back
// accounts for every one, and nothing runs after Stop unless the caller runs it.
func TestWheelStopHandsBackEverything(t *testing.T) {
	for _, exec := range []timingwheel.Executor{timingwheel.PoolExecutor(4), timingwheel.InlineExecutor()} {
		synctest.Test(t, func(t *testing.T) {
			tw, err := timingwheel.New(timingwheel.WithExecutor(exec))
			require.NoError(t, err)
			const n = 10_000
			var ran atomic.Int64
			timers := make([]*timingwheel.Timer, n)
			for i := range timers {
				timers[i] = tw.AfterFunc(time.Duration(i)*time.Millisecond, func() { ran.Add(1) })
			}
			stopped := 0
			for i := 0; i < n; i += 7 {
				if timers[i].Stop() {
					stopped++
				}
			}
			time.Sleep(3 * time.Second) // about 3,000 come due
			synctest.Wait()
			handedBack := tw.Stop()
			beforeCaller := ran.Load()
			time.Sleep(time.Hour)
			synctest.Wait()
			require.Equal(t, beforeCaller, ran.Load(), "nothing runs after Stop")
			require.EqualValues(t, n, beforeCaller+int64(stopped)+int64(len(handedBack)))
			for _, f := range handedBack {
				f()
			}
			require.EqualValues(t, n-stopped, ran.Load())
			require.Zero(t, tw.Len())
		})
	}
}

// The purgatory's policy: Close ends every pending operation with Outcome
// Closed, running OnComplete but not OnExpiration, whatever it was waiting on.
func TestPurgatoryCloseEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := purgatory.New[int]("closing")
		require.NoError(t, err)
		const n = 10_000
		ops := make([]*testkit.Op, n)
		for i := range ops {
			ops[i] = testkit.NewOp(time.Duration(1+i%5) * time.Second)
			p.TryCompleteElseWatch(ops[i], i%100, (i+1)%100)
		}
		for i := 0; i < n; i += 3 {
			ops[i].Ready.Store(true)
		}
		for k := range 50 {
			p.CheckAndComplete(k) // some complete before Close
		}
		time.Sleep(1500 * time.Millisecond) // the 1 s timeouts expire
		synctest.Wait()
		before := p.Stats()
		p.Close()
		st := p.Stats()
		require.EqualValues(t, n, st.Added)
		require.Zero(t, st.Delayed)
		require.Zero(t, st.Watched)
		require.EqualValues(t, n, st.Completed+st.Expired+st.Closed, "every operation ended")
		require.EqualValues(t, before.Delayed, st.Closed, "Close ended exactly what was pending")
		require.Equal(t, before.Expired, st.Expired, "Close is not a timeout")
		for i, op := range ops {
			require.EqualValues(t, 1, op.Completed.Load(), "operation %d", i)
			require.Equal(t, op.Outcome() == purgatory.Expired, op.Expired.Load() == 1, "operation %d", i)
		}
	})
}

// A panicking OnExpiration among thousands: the others all expire, the wheel
// keeps running, and the panics reach the handler.
func TestOnExpirationPanicIsolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics atomic.Int64
		p, err := purgatory.New[int]("panics", purgatory.WithPanicHandler(func(any) { panics.Add(1) }))
		require.NoError(t, err)
		defer p.Close()
		const n = 5000
		ops := make([]*testkit.Op, n)
		for i := range ops {
			op := testkit.NewOp(time.Duration(1+i%10) * time.Millisecond)
			ops[i] = op
			if i%100 == 0 {
				p.TryCompleteElseWatch(&closingOp{Op: op, close: func() { panic("OnExpiration failed") }}, i%64)
				continue
			}
			p.TryCompleteElseWatch(op, i%64)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, n/100, panics.Load())
		for i, op := range ops {
			require.Equal(t, purgatory.Expired, op.Outcome(), "operation %d", i)
			require.EqualValues(t, 1, op.Expired.Load(), "operation %d", i)
		}
		late := testkit.NewOp(time.Millisecond)
		p.TryCompleteElseWatch(late, 1)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, late.Outcome(), "the wheel survived")
	})
}
