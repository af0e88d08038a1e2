// Package testkit holds what the module's tests share: a running wheel, an
// operation that counts its callbacks, the misuse assertion and the outcome
// tally. It is for tests only.
//
// The naive reference purgatory is not here, on purpose: purgatory's
// benchmarks and bench/'s W5 each keep a concrete copy, because one shared
// behind an interface measured about half again slower per try
// (BenchmarkCheckWalk), which would flatter the library in every comparison.
package testkit

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// Wheel returns a running wheel, stopped when the test ends.
func Wheel(t testing.TB, opts ...timingwheel.Option) *timingwheel.TimingWheel {
	t.Helper()
	tw, err := timingwheel.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { tw.Stop() })
	return tw
}

// Purgatory returns a purgatory named name, closed when the test ends.
func Purgatory[K comparable](t testing.TB, name string, opts ...purgatory.Option) *purgatory.Purgatory[K] {
	t.Helper()
	p, err := purgatory.New[K](name, opts...)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// Op is Kafka's MockDelayedOperation: it completes once Ready is set, counts
// its callbacks, and records the outcome OnComplete saw. It can be told to
// call a hook in TryComplete, or to panic once in one of its callbacks. It is
// a purgatory.Recycler that counts its recycled uses, and may be passed again
// once a use is recycled (its counts run on across uses).
type Op struct {
	purgatory.Op
	Ready     atomic.Bool
	Tries     atomic.Int32
	Completed atomic.Int32
	Expired   atomic.Int32
	Seen      purgatory.Outcome // recorded by OnComplete
	OnTry     func()            // if set, called inside TryComplete
	PanicIn   atomic.Int32      // a callback that panics once: PanicTry, PanicComplete or PanicExpire
	trying    atomic.Int32      // TryComplete calls running now
	Overlaps  atomic.Int32      // TryComplete calls that began while another ran: must stay 0
	Recycled  atomic.Int32      // uses the purgatory is done with (Recycle)
}

// Callbacks an Op can be told to panic in, once, after it has counted the call.
const (
	PanicTry = 1 + iota
	PanicComplete
	PanicExpire
)

// Injected is the value of every panic an Op injects.
const Injected = "injected panic"

// NewOp returns an Op with the given timeout.
func NewOp(timeout time.Duration) *Op { return &Op{Op: purgatory.Op{Timeout: timeout}} }

func (o *Op) maybePanic(in int32) {
	if o.PanicIn.CompareAndSwap(in, 0) {
		panic(Injected)
	}
}

func (o *Op) TryComplete() bool {
	if o.trying.Add(1) > 1 {
		o.Overlaps.Add(1)
	}
	defer o.trying.Add(-1)
	o.Tries.Add(1)
	if o.OnTry != nil {
		o.OnTry()
	}
	o.maybePanic(PanicTry)
	return o.Ready.Load()
}

func (o *Op) OnComplete() {
	o.Completed.Add(1)
	o.Seen = o.Outcome()
	o.maybePanic(PanicComplete)
}

func (o *Op) OnExpiration() {
	o.Expired.Add(1)
	o.maybePanic(PanicExpire)
}

// Recycle counts the uses the purgatory is done with (purgatory.Recycler).
func (o *Op) Recycle() { o.Recycled.Add(1) }

// Misuse requires f to panic with a message that starts with the package
// prefix (such as "purgatory: ") and contains want.
func Misuse(t testing.TB, prefix, want string, f func()) {
	t.Helper()
	r := Recovered(f)
	require.NotNil(t, r, "expected a misuse panic containing %q", want)
	msg := fmt.Sprint(r)
	require.True(t, strings.HasPrefix(msg, prefix), "panic %q lacks the package prefix %q", msg, prefix)
	require.Contains(t, msg, want)
}

// PanickedInjected runs f and reports whether it panicked; a panic other
// than Injected fails the test (from any goroutine: it is reported, not fatal).
func PanickedInjected(t testing.TB, f func()) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != Injected {
				t.Errorf("unexpected panic: %v", r)
			}
			panicked = true
		}
	}()
	f()
	return false
}

// Recovered runs f and returns what it panicked with, or nil.
func Recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// Tally checks that every operation has ended exactly once, with the
// callbacks its outcome calls for (OnComplete once unless Cancelled,
// OnExpiration once if Expired, OnComplete seeing the final outcome), and
// returns the outcomes counted as a purgatory's Stats would count them
// (Added, Watched, Delayed and Panics left zero).
func Tally(t testing.TB, ops []*Op) purgatory.Stats {
	t.Helper()
	var s purgatory.Stats
	for i, op := range ops {
		out := op.Outcome()
		switch out {
		case purgatory.Completed:
			s.Completed++
		case purgatory.Forced:
			s.Forced++
		case purgatory.Expired:
			s.Expired++
		case purgatory.ContextDone:
			s.ContextDone++
		case purgatory.Cancelled:
			s.Cancelled++
		case purgatory.Closed:
			s.Closed++
		case purgatory.Shed:
			s.Shed++
		default:
			require.Failf(t, "an operation did not end", "operation %d was left %v", i, out)
		}
		wantCompleted, wantExpired := int32(1), int32(0)
		if out == purgatory.Cancelled {
			wantCompleted = 0
		}
		if out == purgatory.Expired {
			wantExpired = 1
		}
		require.Zero(t, op.Overlaps.Load(), "operation %d: TryComplete never runs concurrently with itself", i)
		require.Equal(t, wantCompleted, op.Completed.Load(), "operation %d (%v): OnComplete runs once", i, out)
		require.Equal(t, wantExpired, op.Expired.Load(), "operation %d (%v): OnExpiration", i, out)
		if wantCompleted == 1 {
			require.Equal(t, out, op.Seen, "operation %d: OnComplete saw its final outcome", i)
		}
	}
	return s
}
