package purgatory_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

type ending struct {
	outcome purgatory.Outcome
	elapsed time.Duration
}

type endings struct {
	mu sync.Mutex
	es []ending
}

func (e *endings) OperationEnded(o purgatory.Outcome, d time.Duration) {
	e.mu.Lock()
	e.es = append(e.es, ending{o, d})
	e.mu.Unlock()
}

func TestObserverSeesEveryEnding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &endings{}
		p := newPurgatory(t, purgatory.WithObserver(obs))
		done, expiring, cancelled := testkit.NewOp(time.Hour), testkit.NewOp(30*time.Millisecond), testkit.NewOp(time.Hour)
		p.TryCompleteElseWatch(done, "a")
		p.TryCompleteElseWatch(expiring, "b")
		p.TryCompleteElseWatch(cancelled, "c")
		time.Sleep(10 * time.Millisecond)
		done.Ready.Store(true)
		p.CheckAndComplete("a")
		time.Sleep(10 * time.Millisecond)
		p.CancelForKey("c")
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, []ending{
			{purgatory.Completed, 10 * time.Millisecond},
			{purgatory.Cancelled, 20 * time.Millisecond},
			{purgatory.Expired, 30 * time.Millisecond},
		}, obs.es)
	})
}
