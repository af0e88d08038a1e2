package timingwheel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// drainer counts its fires and its drains.
type drainer struct{ fired, drained atomic.Int32 }

func (d *drainer) Fire()  { d.fired.Add(1) }
func (d *drainer) Drain() { d.drained.Add(1) }

// The wheel's Stop tells a Drainer's pending timer that it will not fire,
// instead of handing back its Fire; a Reset that the stopped wheel refuses
// tells it too; a timer that fired or was stopped is not told.
func TestStopDrainsADrainer(t *testing.T) {
	tw, err := timingwheel.New()
	require.NoError(t, err)
	var pending, stopped, plain drainer
	var tp, ts timingwheel.Timer
	tw.InitTimer(&tp, &pending)
	tw.InitTimer(&ts, &stopped)
	tp.Reset(time.Hour)
	ts.Reset(time.Hour)
	require.True(t, ts.Stop())
	other := tw.AfterFunc(time.Hour, func() {})
	handed := tw.Stop()
	require.Len(t, handed, 1, "the AfterFunc's callback handed back; the Drainer's not")
	require.EqualValues(t, 1, pending.drained.Load(), "the pending Drainer told it will not fire")
	require.EqualValues(t, 0, stopped.drained.Load(), "a stopped timer is not told")
	require.False(t, tp.Stop(), "drained: no longer pending")
	require.False(t, other.Stop())

	var tr timingwheel.Timer
	tw.InitTimer(&tr, &plain)
	require.False(t, tr.Reset(time.Millisecond))
	require.True(t, tr.Rejected())
	require.EqualValues(t, 1, plain.drained.Load(), "a Reset refused by the stopped wheel tells its Drainer")
	require.Zero(t, pending.fired.Load()+stopped.fired.Load()+plain.fired.Load())
}

// panickyDrainer is a Drainer whose Drain panics.
type panickyDrainer struct{ drainer }

func (p *panickyDrainer) Drain() { p.drained.Add(1); panic("drain") }

// A Drain that panics is a call into user code like any other: the panic
// reaches the goroutine of the Stop or of the Reset, the wheel's locks are
// not held, every other Drainer is still told, and the AfterStop functions
// still start.
func TestDrainPanics(t *testing.T) {
	tw, err := timingwheel.New()
	require.NoError(t, err)
	var bad panickyDrainer
	var good drainer
	var tb, tg, tg2 timingwheel.Timer
	tw.InitTimer(&tb, &bad)
	tw.InitTimer(&tg, &good)
	tw.InitTimer(&tg2, &good)
	tg2.Reset(30 * time.Minute) // one told before the panic, whatever the order
	tb.Reset(time.Hour)
	tg.Reset(2 * time.Hour) // and one after it
	hooked := make(chan struct{})
	tw.AfterStop(func() { close(hooked) })
	require.PanicsWithValue(t, "drain", func() { tw.Stop() })
	require.EqualValues(t, 1, bad.drained.Load())
	require.EqualValues(t, 2, good.drained.Load(), "the other Drainers are told all the same")
	<-hooked // the AfterStop function started
	require.Zero(t, tw.Len())

	require.PanicsWithValue(t, "drain", func() { tb.Reset(time.Millisecond) }, "a refused Reset tells the Drainer on its caller's goroutine")
	require.EqualValues(t, 2, bad.drained.Load())
	require.False(t, tg.Reset(time.Millisecond), "no lock is left held: the next Reset is refused, not stuck")
	require.EqualValues(t, 3, good.drained.Load())
	require.Empty(t, tw.Stop(), "a second Stop hands back nothing")
}
