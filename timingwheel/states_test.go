package timingwheel

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/bucket"
)

// TestTimerStates walks a timer through the transitions of timer's state
// block, checking after each step its state, whether it is linked, and the
// wheel's count of pending timers.
func TestTimerStates(t *testing.T) {
	synctest.Test(t, testTimerStates)
}

func testTimerStates(t *testing.T) {
	tw, err := New(WithManualClock(), WithExecutor(InlineExecutor()), WithTick(time.Millisecond), WithWheelSize(4))
	require.NoError(t, err)
	defer tw.Stop()
	check := func(tm *Timer, want timerState, pending int, msg string) {
		t.Helper()
		sh := tm.t.lock()
		state, linked := tm.t.state, bucket.Linked(&tm.t)
		sh.mu.Unlock()
		require.Equal(t, want, state, msg)
		require.Equal(t, want == inLevel || want == inNear, linked, msg)
		require.Equal(t, pending, tw.Len(), msg)
	}

	var runs int
	tm := tw.NewTimer(func() { runs++ })
	check(tm, idle, 0, "a new timer is idle")
	tm.Reset(time.Hour)
	check(tm, inLevel, 1, "armed an hour ahead: in a level's bucket")
	require.True(t, tm.Stop())
	check(tm, idle, 0, "stopped")
	tm.Reset(0)
	check(tm, inNear, 1, "due in the current tick: near")
	require.True(t, tw.AdvanceClock(time.Second))
	check(tm, handed, 0, "fired: handed over")
	require.Equal(t, 1, runs)
	require.False(t, tm.Stop(), "a handed timer is not pending")
	check(tm, idle, 0, "Stop makes a handed timer idle")

	// A recurring timer is handed during its run; Stop there ends it.
	var rec *Timer
	rec = tw.ScheduleFunc(Every(time.Nanosecond), func() {
		sh := rec.t.lock()
		state := rec.t.state
		sh.mu.Unlock()
		require.Equal(t, handed, state, "handed while it runs")
		rec.Stop()
	})
	require.True(t, tw.AdvanceClock(time.Second))
	check(rec, idle, 0, "stopped during its run: not rearmed")

	tw.Stop()
	check(tm, idle, 0, "")
	require.False(t, tm.Reset(time.Second), "a stopped wheel refuses")
	check(tm, idle, 0, "refused: idle")
	require.True(t, tm.Rejected())
}
