package purgatory_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// Case 5: an unhashable key in a Purgatory[any] panics with a message that
// names it, before anything is bound, watched or locked.
func TestUnhashableKeyChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := purgatory.New[any]("any")
		require.NoError(t, err)
		defer p.Close()
		op := testkit.NewOp(time.Second)
		testkit.Misuse(t, "purgatory: ", "key []int{1} cannot be used", func() { p.TryCompleteElseWatch(op, "ok", []int{1}) })
		require.Equal(t, purgatory.Stats{}, p.Stats())
		require.Zero(t, p.CheckAndComplete("ok"), "nothing watched, nothing locked")
		op.Ready.Store(true)
		require.True(t, p.TryCompleteElseWatch(op, "ok"), "the operation is still usable")

		type pair struct{ a, b any }
		q, err := purgatory.New[pair]("pairs")
		require.NoError(t, err)
		defer q.Close()
		testkit.Misuse(t, "purgatory: ", "cannot be used", func() { q.TryCompleteElseWatch(testkit.NewOp(time.Second), pair{1, map[int]int{}}) })
		require.Equal(t, purgatory.Stats{}, q.Stats())
	})
}

// nilPtrOp embeds a pointer to Op, which may be nil.
type nilPtrOp struct{ *purgatory.Op }

func (nilPtrOp) TryComplete() bool { return false }
func (nilPtrOp) OnComplete()       {}
func (nilPtrOp) OnExpiration()     {}

// Case 6: typed-nil operations get the package's message, not a nil
// dereference from deep inside.
func TestTypedNilOperation(t *testing.T) {
	p := newPurgatory(t)
	var typedNil *testkit.Op
	testkit.Misuse(t, "purgatory: ", "nil pointer as its Operation", func() { p.TryCompleteElseWatch(typedNil, "k") })
	testkit.Misuse(t, "purgatory: ", "nil pointer as its Operation", func() { purgatory.ForceComplete(typedNil) })
	testkit.Misuse(t, "purgatory: ", "embed purgatory.Op by value", func() { p.TryCompleteElseWatch(nilPtrOp{}, "k") })
	require.Equal(t, purgatory.Stats{}, p.Stats())
}

// innerOp embeds Op by value; outerOp reaches it through a pointer, nil here.
type innerOp struct{ purgatory.Op }

func (*innerOp) TryComplete() bool { return false }
func (*innerOp) OnComplete()       {}
func (*innerOp) OnExpiration()     {}

type outerOp struct{ *innerOp }

// TestNilOpFurtherIn: an operation whose Op lies behind a nil pointer further
// in than its own panics with the runtime's nil dereference (opOf says why
// not the package's message), before anything is counted or bound.
func TestNilOpFurtherIn(t *testing.T) {
	p := newPurgatory(t)
	for _, call := range []func(){
		func() { p.TryCompleteElseWatch(&outerOp{}, "k") },
		func() { purgatory.ForceComplete(&outerOp{}) },
	} {
		func() {
			defer func() {
				err, ok := recover().(runtime.Error)
				require.True(t, ok, "want the runtime's nil dereference")
				require.Contains(t, err.Error(), "nil pointer dereference")
			}()
			call()
		}()
	}
	require.Equal(t, purgatory.Stats{}, p.Stats())
}

// Case 7: a zero Purgatory says it must be created with New, every time (it
// used to divide by zero); a nil Option is an error, not a nil dereference.
func TestZeroPurgatoryAndNilOption(t *testing.T) {
	var p purgatory.Purgatory[string]
	const msg = "purgatory: Purgatory must be created with New"
	for range 2 {
		require.PanicsWithValue(t, msg, func() { p.TryCompleteElseWatch(testkit.NewOp(time.Second), "k") })
		require.PanicsWithValue(t, msg, func() { p.CheckAndComplete("k") })
		require.PanicsWithValue(t, msg, func() { p.CancelForKey("k") })
		require.PanicsWithValue(t, msg, func() { p.Close() })
	}
	_, err := purgatory.New[string]("nil option", nil)
	require.ErrorIs(t, err, purgatory.ErrInvalidOption)
	require.ErrorContains(t, err, "option 0 is nil")
	_, err = purgatory.New[string]("nil wheel", purgatory.WithTimingWheel(nil))
	require.ErrorIs(t, err, purgatory.ErrInvalidOption)
}

// Case 8: a stopped wheel is refused; a wheel that was never started is
// started, so its operations do time out.
func TestWithTimingWheelMustRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stopped, err := timingwheel.New()
		require.NoError(t, err)
		stopped.Stop()
		_, err = purgatory.New[string]("stopped", purgatory.WithTimingWheel(stopped))
		require.ErrorIs(t, err, timingwheel.ErrStopped)
		require.ErrorContains(t, err, "has been stopped")

		idle, err := timingwheel.New()
		require.NoError(t, err)
		defer idle.Stop()
		p, err := purgatory.New[string]("idle", purgatory.WithTimingWheel(idle))
		require.NoError(t, err)
		defer p.Close()
		op := testkit.NewOp(time.Second)
		p.TryCompleteElseWatch(op, "k")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, op.Outcome())
	})
}

// Case 8: a zero Timeout is a forgotten field unless the Context has a
// deadline, which then bounds the wait; NoTimeout waits without a timer.
func TestTimeoutRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		testkit.Misuse(t, "purgatory: ", "Op.Timeout is zero", func() { p.TryCompleteElseWatch(testkit.NewOp(0), "k") })
		withCancel := testkit.NewOp(0)
		withCancel.Context = t.Context()
		testkit.Misuse(t, "purgatory: ", "Op.Timeout is zero", func() { p.TryCompleteElseWatch(withCancel, "k") })
		require.Equal(t, purgatory.Stats{}, p.Stats())

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bounded := testkit.NewOp(0)
		bounded.Context = ctx
		forever := testkit.NewOp(purgatory.NoTimeout)
		p.TryCompleteElseWatch(bounded, "k")
		p.TryCompleteElseWatch(forever, "k")
		require.Zero(t, p.TimingWheel().Len(), "neither arms a timer on the wheel")
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, purgatory.ContextDone, bounded.Outcome(), "the context's deadline ended it")
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		require.Equal(t, purgatory.Pending, forever.Outcome())
		forever.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k"))
	})
}
