package purgatory_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// No operation hangs because a wheel stopped, in whatever order a service
// shuts down: a purgatory whose wheel stops first closes itself, ending the
// operations already parked and every one added afterwards with Outcome
// Closed, and each use is over (recycled). Each order is played with parked operations (with and without a
// timeout) and one added after the first step.
func TestEveryShutdownOrderEndsEveryOperation(t *testing.T) {
	orders := map[string]func(tw *timingwheel.TimingWheel, p *purgatory.Purgatory[string]){
		"wheel Stop, then Close": func(tw *timingwheel.TimingWheel, p *purgatory.Purgatory[string]) {
			tw.Stop()
		},
		"wheel Shutdown, then Close": func(tw *timingwheel.TimingWheel, p *purgatory.Purgatory[string]) {
			_, err := tw.Shutdown(context.Background())
			require.NoError(t, err)
		},
		"Close, then wheel Stop": func(tw *timingwheel.TimingWheel, p *purgatory.Purgatory[string]) {
			p.Close()
		},
		"purgatory Shutdown, then wheel Shutdown": func(tw *timingwheel.TimingWheel, p *purgatory.Purgatory[string]) {
			require.NoError(t, p.Shutdown(context.Background()))
		},
	}
	for name, first := range orders {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw, err := timingwheel.New()
				require.NoError(t, err)
				p, err := purgatory.New[string]("orders", purgatory.WithTimingWheel(tw))
				require.NoError(t, err)
				parked := []*testkit.Op{testkit.NewOp(time.Hour), testkit.NewOp(purgatory.NoTimeout)}
				for _, op := range parked {
					require.False(t, p.TryCompleteElseWatch(op, "k"))
				}

				first(tw, p)
				synctest.Wait() // an AfterStop runs on a goroutine of its own
				late := testkit.NewOp(time.Second)
				require.False(t, p.TryCompleteElseWatch(late, "k"))
				synctest.Wait()
				for i, op := range append(parked, late) {
					require.EqualValues(t, 1, op.Completed.Load(), "operation %d ended once", i)
					require.Equal(t, purgatory.Closed, op.Seen, "operation %d", i)
					require.EqualValues(t, 1, op.Recycled.Load(), "operation %d recycled: its use is over, no pin left (a timeout the stopped wheel drained lets go of its own)", i)
				}
				require.Zero(t, p.Delayed())
				require.Zero(t, p.Watched())

				p.Close()
				_, err = tw.Shutdown(context.Background())
				require.NoError(t, err)
				require.NoError(t, p.Shutdown(context.Background()))
				s := p.Stats()
				require.EqualValues(t, 3, s.Closed)
				require.Equal(t, s.Added, s.Closed, "nothing else ended them")
			})
		})
	}
}

// A purgatory's own wheel, stopped by hand, closes it too.
func TestOwnWheelStoppedClosesThePurgatory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		_, err := p.TimingWheel().Shutdown(context.Background())
		require.NoError(t, err, "the wheel's Shutdown waits for the purgatory to close")
		require.Equal(t, purgatory.Closed, op.Seen)
		require.Zero(t, p.Delayed())
	})
}

// blocking is an operation whose OnExpiration waits until released.
type blocking struct {
	*testkit.Op
	release chan struct{}
}

func (b blocking) OnExpiration() {
	b.Op.OnExpiration()
	<-b.release
}

// Close does not wait for expiry callbacks that have started; Shutdown does,
// until its context is done, like the wheel's.
func TestShutdownWaitsForExpiryCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := purgatory.New[string]("waits")
		require.NoError(t, err)
		op := blocking{testkit.NewOp(time.Second), make(chan struct{})}
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		time.Sleep(time.Second)
		synctest.Wait() // OnExpiration runs, blocked
		require.EqualValues(t, 1, op.Expired.Load())

		p.Close() // returns although the callback still runs
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.ErrorIs(t, p.Shutdown(ctx), context.DeadlineExceeded)
		close(op.release)
		require.NoError(t, p.Shutdown(context.Background()))
		require.ErrorIs(t, p.TimingWheel().Err(), timingwheel.ErrStopped)
	})
}

// shutsDown calls Shutdown on its purgatory from OnExpiration.
type shutsDown struct {
	*testkit.Op
	p   *purgatory.Purgatory[string]
	got chan error
}

func (s shutsDown) OnExpiration() { s.got <- s.p.Shutdown(context.Background()) }

// Shutdown from a callback it would wait for returns ErrShutdownInCallback at
// once, having closed the purgatory, instead of waiting for itself forever.
func TestShutdownFromAnExpiryCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		op := shutsDown{testkit.NewOp(time.Second), p, make(chan error, 1)}
		other := testkit.NewOp(time.Hour)
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		require.False(t, p.TryCompleteElseWatch(other, "k"))
		begin := time.Now()
		require.ErrorIs(t, <-op.got, purgatory.ErrShutdownInCallback)
		require.Equal(t, time.Second, time.Since(begin))
		require.Equal(t, purgatory.Closed, other.Seen, "closed all the same")
	})
}

// The misuses a newcomer met, each with a message that says what to do.
func TestMessagesThatSayWhatToDo(t *testing.T) {
	_, err := purgatory.New[string]("")
	require.ErrorIs(t, err, purgatory.ErrInvalidOption)
	require.ErrorContains(t, err, "empty name")

	p, err := purgatory.New[any]("any")
	require.NoError(t, err)
	defer p.Close()
	for name, call := range map[string]func(){
		"TryCompleteElseWatch": func() { p.TryCompleteElseWatch(testkit.NewOp(time.Second), []int{1}) },
		"CheckAndComplete":     func() { p.CheckAndComplete([]int{1}) },
		"CancelForKey":         func() { p.CancelForKey([]int{1}) },
	} {
		t.Run(name, func(t *testing.T) {
			testkit.Misuse(t, "purgatory: ", "key []int{1} cannot be used: runtime error: hash of unhashable type []int; use keys whose dynamic types are comparable", call)
		})
	}

	q := newPurgatory(t)
	own := &ownFields{Timeout: time.Second, Context: context.Background()}
	testkit.Misuse(t, "purgatory: ", "*purgatory_test.ownFields has a field Timeout of its own, which hides the embedded purgatory.Op's: set op.Op.Timeout (or rename yours); *purgatory_test.ownFields has a field Context of its own",
		func() { q.TryCompleteElseWatch(own, "k") })
	own.Op.Timeout = time.Second
	require.False(t, q.TryCompleteElseWatch(own, "k"), "set where the message says, it works")
}

// ownFields has fields of its own that hide Op's.
type ownFields struct {
	purgatory.Op
	Timeout time.Duration
	Context context.Context
}

func (*ownFields) TryComplete() bool { return false }
func (*ownFields) OnComplete()       {}
func (*ownFields) OnExpiration()     {}
