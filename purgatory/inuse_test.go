package purgatory_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// Issue 44, item 6: two goroutines that pass one operation to
// TryCompleteElseWatch at the same moment. Exactly one of them binds it; the
// other panics with the purgatory's message that the operation is in use
// (never the wheel's InitTimer message), and neither call races with the
// other's writes (run with -race: bind once wrote Op's fields before its
// compare-and-swap, and the reused branch wrote o.first outside Op.book).
func TestPassedTwiceAtOnce(t *testing.T) {
	for _, reused := range []bool{false, true} {
		t.Run(fmt.Sprintf("reused=%v", reused), func(t *testing.T) {
			p := newPurgatory(t)
			for i := range 300 {
				op := testkit.NewOp(time.Hour)
				if reused { // its first use over: the race is for its second
					op.Ready.Store(true)
					require.True(t, p.TryCompleteElseWatch(op, "k"))
					op.Ready.Store(false)
				}
				var start sync.WaitGroup
				start.Add(1)
				panics := make([]any, 2)
				var wg sync.WaitGroup
				for g := range 2 {
					wg.Go(func() {
						start.Wait()
						panics[g] = testkit.Recovered(func() { p.TryCompleteElseWatch(op, fmt.Sprint("k", i)) })
					})
				}
				start.Done()
				wg.Wait()
				bound := 0
				for _, r := range panics {
					if r == nil {
						bound++
						continue
					}
					msg := fmt.Sprint(r)
					require.Contains(t, msg, "purgatory: operation passed to TryCompleteElseWatch while it is in use", "pair %d", i)
				}
				require.Equal(t, 1, bound, "pair %d: exactly one call binds the operation (panics: %v)", i, panics)
				require.True(t, purgatory.ForceComplete(op), "pair %d: the one bound is pending", i)
			}
		})
	}
}
