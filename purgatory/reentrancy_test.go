package purgatory_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// Case 4: TryComplete calls CheckAndComplete on its own key. Before the try
// bit this deadlocked on the operation's own mutex; now the inner call asks
// for one more try and returns, with or without a shared Locker.
func TestTryCompleteMayCheckItsOwnKey(t *testing.T) {
	for _, shared := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			p := newPurgatory(t)
			op := testkit.NewOp(time.Second)
			if shared {
				op.Locker = &sync.Mutex{}
			}
			inner := 0
			op.OnTry = func() {
				if op.Tries.Load() <= 4 {
					inner += p.CheckAndComplete("k")
				}
			}
			require.False(t, p.TryCompleteElseWatch(op, "k"))
			require.Equal(t, 1, p.Watched())
			op.Ready.Store(true)
			require.Equal(t, 1, p.CheckAndComplete("k"))
			require.Zero(t, inner, "the inner calls never complete it themselves")
			require.Equal(t, purgatory.Completed, op.Outcome())
			require.EqualValues(t, 1, op.Completed.Load())
		})
	}
}

// TryComplete may add another operation, and force-complete its own.
func TestTryCompleteMayAddAndForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		child := testkit.NewOp(time.Second)
		parent := testkit.NewOp(time.Second)
		parent.OnTry = func() {
			if parent.Tries.Load() == 2 {
				p.TryCompleteElseWatch(child, "k")
				purgatory.ForceComplete(parent)
			}
		}
		require.False(t, p.TryCompleteElseWatch(parent, "k"))
		require.Equal(t, purgatory.Forced, parent.Outcome())
		require.Equal(t, purgatory.Pending, child.Outcome())
		require.Equal(t, purgatory.Stats{Watched: 1, Delayed: 1, Added: 2, Forced: 1}, p.Stats())
	})
}

// No completion is missed: an event that lands while another goroutine is in
// the middle of a try (and has already seen "not yet") does not wait for it,
// and the goroutine trying makes one more try before it lets go.
func TestEventDuringATryIsNotMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := &readFirst{Op: testkit.NewOp(time.Hour)}
		require.False(t, p.TryCompleteElseWatch(op, "k"))

		sawNotYet, eventSent := make(chan struct{}), make(chan struct{})
		op.afterRead = func() {
			if op.Tries.Load() == 3 { // the first try of the CheckAndComplete below
				close(sawNotYet)
				<-eventSent
			}
		}
		var outer int
		done := make(chan struct{})
		go func() {
			defer close(done)
			outer = p.CheckAndComplete("k")
		}()
		<-sawNotYet
		// TryComplete has read completable (false) and is still running.
		op.Ready.Store(true)
		require.Zero(t, p.CheckAndComplete("k"), "returns at once: the goroutine trying will try again")
		close(eventSent)
		<-done
		require.Equal(t, 1, outer, "the goroutine trying made one more try and completed it")
		require.EqualValues(t, 4, op.Tries.Load())
		require.Equal(t, purgatory.Completed, op.Outcome())
	})
}

// OnComplete and OnExpiration may call anything, Close included, and
// TryCompleteElseWatch on a new operation.
func TestCallbacksMayCallThePurgatory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		next := testkit.NewOp(time.Second)
		op := &callbackOp{Op: testkit.NewOp(time.Millisecond), onExpire: func() {
			assert.False(t, p.TryCompleteElseWatch(next, "k"))
			assert.Zero(t, p.CheckAndComplete("k"))
			assert.Len(t, p.CancelForKey("k"), 1)
		}}
		p.TryCompleteElseWatch(op, "k")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, op.Outcome())
		require.Equal(t, purgatory.Cancelled, next.Outcome())
	})
}

type callbackOp struct {
	*testkit.Op
	onExpire func()
}

func (o *callbackOp) OnExpiration() {
	o.Op.OnExpiration()
	o.onExpire()
}

// readFirst reads its condition, then runs afterRead, then answers: a
// TryComplete that is slow after it has looked.
type readFirst struct {
	*testkit.Op
	afterRead func()
}

func (o *readFirst) TryComplete() bool {
	o.Tries.Add(1)
	ok := o.Ready.Load()
	if o.afterRead != nil {
		o.afterRead()
	}
	return ok
}

// A CheckAndComplete that finds its key being walked does not wait for the
// walk: it asks it for one more pass and returns 0, and the walk completes
// what the event made ready before it ends. A TryComplete that blocks holds up
// its own key's walk, never a caller, nor another key.
func TestEventDuringAWalkIsNotMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		quick, slow, other := testkit.NewOp(time.Hour), testkit.NewOp(time.Hour), testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(quick, "k")) // tried first in a walk of k
		require.False(t, p.TryCompleteElseWatch(slow, "k"))
		require.False(t, p.TryCompleteElseWatch(other, "j"))
		release := make(chan struct{})
		slow.OnTry = func() { <-release }

		outer := make(chan int, 1)
		go func() { outer <- p.CheckAndComplete("k") }()
		synctest.Wait() // the walk has tried quick (not ready) and is blocked in slow's TryComplete

		quick.Ready.Store(true)
		require.Zero(t, p.CheckAndComplete("k"), "returns at once: the walk under way passes again")
		other.Ready.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("j"), "another key is not held up")
		require.Equal(t, purgatory.Pending, quick.Outcome())

		close(release)
		require.Equal(t, 1, <-outer, "the walk's second pass completed quick")
		require.Equal(t, purgatory.Completed, quick.Outcome())
		slow.OnTry = nil
		require.Zero(t, p.CheckAndComplete("k"), "the key is free again")
	})
}
