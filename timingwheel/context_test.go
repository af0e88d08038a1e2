package timingwheel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// WithTimeout's context behaves as context.WithTimeout's: done exactly at its
// deadline (not a nanosecond early) with DeadlineExceeded as Err and Cause.
func TestWithTimeoutExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		begin := time.Now()
		ctx, cancel := tw.WithTimeout(context.Background(), time.Second)
		defer cancel()
		want, cancelWant := context.WithTimeout(context.Background(), time.Second) // the standard library's, to compare
		defer cancelWant()
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		require.Equal(t, begin.Add(time.Second), dl)

		time.Sleep(time.Second - 1)
		synctest.Wait()
		require.NoError(t, ctx.Err(), "not done before its deadline")
		time.Sleep(time.Nanosecond) // the deadline itself
		synctest.Wait()
		<-ctx.Done()
		<-want.Done()
		require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		require.Equal(t, want.Err(), ctx.Err())
		require.Equal(t, context.Cause(want), context.Cause(ctx))
		require.Zero(t, tw.Len())
	})
}

// Cancelling first stops the wheel's timer and reports Canceled; a parent's
// end, and an earlier parent deadline, carry over as with the standard library.
func TestWithTimeoutCancelAndParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := testkit.Wheel(t)
		ctx, cancel := tw.WithTimeout(context.Background(), time.Hour)
		require.Equal(t, 1, tw.Len())
		cancel()
		require.Zero(t, tw.Len(), "cancel stops the timer at once")
		require.ErrorIs(t, ctx.Err(), context.Canceled)
		require.ErrorIs(t, context.Cause(ctx), context.Canceled)
		cancel() // idempotent

		boom := errors.New("shutting down")
		parent, stop := context.WithCancelCause(context.Background())
		child, cancelChild := tw.WithTimeout(parent, time.Hour)
		defer cancelChild()
		stop(boom)
		<-child.Done()
		require.ErrorIs(t, child.Err(), context.Canceled)
		require.ErrorIs(t, context.Cause(child), boom)

		soon, cancelSoon := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancelSoon()
		late, cancelLate := tw.WithTimeout(soon, time.Hour)
		defer cancelLate()
		dl, _ := late.Deadline()
		want, _ := soon.Deadline()
		require.Equal(t, want, dl, "the parent's earlier deadline wins")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.ErrorIs(t, late.Err(), context.DeadlineExceeded)

		past, cancelPast := tw.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancelPast()
		require.ErrorIs(t, past.Err(), context.DeadlineExceeded, "a deadline already passed is done at once")
	})
}

// ctxState is what a caller can see of a context.
type ctxState struct {
	Done     bool
	Err      error
	Cause    error
	Deadline time.Time
	HasDl    bool
	Value    any
}

type valueKey struct{}

func stateOf(ctx context.Context) ctxState {
	s := ctxState{Err: ctx.Err(), Cause: context.Cause(ctx), Value: ctx.Value(valueKey{})}
	s.Deadline, s.HasDl = ctx.Deadline()
	select {
	case <-ctx.Done():
		s.Done = true
	default:
	}
	return s
}

// pair is the same context built twice: by the standard library and on the
// wheel, with the same parent, and one child of each kind under each.
type pair struct {
	std, ours         context.Context
	stdStop, oursStop context.CancelFunc
	children          [][2]context.Context // [std child, our child]: same constructor
	cleanup           []context.CancelFunc
}

func (p *pair) compare(t *testing.T, step string) {
	t.Helper()
	require.Equal(t, stateOf(p.std), stateOf(p.ours), "after %s", step)
	for i, c := range p.children {
		require.Equal(t, stateOf(c[0]), stateOf(c[1]), "child %d, after %s", i, step)
	}
}

// TestContextsAsTheStandardLibrarys builds each wheel context beside the
// standard library's with the same arguments and the same parent, and then
// plays every order of the events that can end it (its deadline, its own
// cancel, its parent's cancel, with and without causes), comparing Done, Err,
// context.Cause, Deadline and Value of both, and of children of every kind
// under each, after every event.
func TestContextsAsTheStandardLibrarys(t *testing.T) {
	boom := errors.New("parent's cause")
	late := errors.New("deadline's cause")
	events := []string{"deadline", "cancel", "parent"}
	var orders [][]string // every order of every subset of events
	var permute func(prefix []string, rest []string)
	permute = func(prefix []string, rest []string) {
		orders = append(orders, append([]string(nil), prefix...))
		for i, e := range rest {
			others := append(append([]string(nil), rest[:i]...), rest[i+1:]...)
			permute(append(prefix, e), others)
		}
	}
	permute(nil, events)

	for _, parentCause := range []error{nil, boom} {
		for _, deadlineCause := range []error{nil, late} {
			for _, order := range orders {
				name := fmt.Sprintf("parentCause=%v/deadlineCause=%v/%v", parentCause, deadlineCause, order)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						tw := testkit.Wheel(t)
						root := context.WithValue(context.Background(), valueKey{}, "v")
						parent, cancelParent := context.WithCancelCause(root)
						defer cancelParent(nil)
						deadline := time.Now().Add(time.Second)
						p := newPair(tw, parent, deadline, deadlineCause)
						defer p.stop()
						p.compare(t, "creation")
						for _, e := range order {
							switch e {
							case "deadline":
								time.Sleep(time.Until(deadline))
							case "cancel":
								p.stdStop()
								p.oursStop()
							case "parent":
								cancelParent(parentCause)
							}
							synctest.Wait()
							p.compare(t, e)
						}
					})
				})
			}
		}
	}
}

// newPair builds the pair and children of every kind under each: standard
// library cancel children (with and without cause), timeout children later
// and earlier than the deadline, and wheel children beside their standard
// library twins.
func newPair(tw *timingwheel.TimingWheel, parent context.Context, deadline time.Time, cause error) *pair {
	p := &pair{}
	p.std, p.stdStop = context.WithDeadlineCause(parent, deadline, cause)
	p.ours, p.oursStop = tw.WithDeadlineCause(parent, deadline, cause)
	p.cleanup = append(p.cleanup, p.stdStop, p.oursStop)
	add := func(std, ours context.Context, s1, s2 context.CancelFunc) {
		p.children = append(p.children, [2]context.Context{std, ours})
		p.cleanup = append(p.cleanup, s1, s2)
	}
	c1, s1 := context.WithCancel(p.std)
	c2, s2 := context.WithCancel(p.ours)
	add(c1, c2, s1, s2)
	c1, s1 = context.WithTimeout(p.std, time.Hour)
	c2, s2 = context.WithTimeout(p.ours, time.Hour)
	add(c1, c2, s1, s2)
	c1, s1 = context.WithTimeout(p.std, time.Hour)
	c2, s2 = tw.WithTimeout(p.ours, time.Hour)
	add(c1, c2, s1, s2)
	c1, s1 = context.WithTimeout(p.std, time.Second/2) // before the deadline
	c2, s2 = tw.WithTimeout(p.ours, time.Second/2)
	add(c1, c2, s1, s2)
	cc1, cs1 := context.WithCancelCause(p.std)
	cc2, cs2 := context.WithCancelCause(p.ours)
	add(cc1, cc2, func() { cs1(nil) }, func() { cs2(nil) })
	return p
}

func (p *pair) stop() {
	for _, f := range p.cleanup {
		f()
	}
}

// Deadlines that the wheel cannot represent as they are (before its start,
// beyond its range) and deadlines already passed are reported as given, and
// end the context when the standard library's ends, on a running wheel and on
// a stopped one.
func TestContextDeadlinesAsGiven(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopped=%v", stopped), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				created := time.Now()
				time.Sleep(time.Second)
				tw := testkit.Wheel(t)
				if stopped {
					tw.Stop()
				}
				for _, deadline := range []time.Time{
					created,                                     // before the wheel's start, and passed
					time.Now(),                                  // now: passed
					time.Now().Add(time.Millisecond),            // soon
					time.Now().AddDate(300, 0, 0),               // beyond 292 years
					time.Now().Add(math.MaxInt64),               // saturates in time.Time's own way
					time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), // no monotonic reading, future in the bubble
				} {
					p := newPair(tw, context.Background(), deadline, nil)
					p.compare(t, "creation of "+deadline.String())
					time.Sleep(time.Millisecond)
					synctest.Wait()
					p.compare(t, "a millisecond")
					p.stop()
					p.compare(t, "cancel")
				}
			})
		})
	}
}

// A wheel context's children cost no goroutine while they wait, whether they
// are the standard library's or the wheel's, and ending a parent with
// thousands of children ends every child (under -race, whose limit is 8,128
// live goroutines, a goroutine per child would not survive it).
func TestContextChildrenCostNoGoroutine(t *testing.T) {
	const n = 9000
	tw := testkit.Wheel(t)
	for _, parentKind := range []string{"wheel", "stdlib"} {
		t.Run(parentKind, func(t *testing.T) {
			var parent context.Context
			var cancel context.CancelFunc
			if parentKind == "wheel" {
				parent, cancel = tw.WithTimeout(context.Background(), time.Hour)
			} else {
				parent, cancel = context.WithCancel(context.Background())
			}
			before := runtime.NumGoroutine()
			children := make([]context.Context, 0, 2*n)
			for i := range n {
				var c context.Context
				var stop context.CancelFunc
				if parentKind == "wheel" || i%2 == 0 {
					c, stop = context.WithCancel(parent) // a standard-library child
				} else {
					c, stop = tw.WithTimeout(parent, time.Hour) // a wheel child
				}
				defer stop()
				children = append(children, c)
				w, stopW := tw.WithTimeout(c, time.Hour) // a wheel grandchild
				defer stopW()
				children = append(children, w)
			}
			require.LessOrEqual(t, runtime.NumGoroutine()-before, 10, "no goroutine per child")
			cancel()
			for _, c := range children {
				<-c.Done()
				require.ErrorIs(t, c.Err(), context.Canceled)
			}
		})
	}
}
