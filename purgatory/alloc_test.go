package purgatory_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
)

// lean is an operation that allocates nothing of its own.
type lean struct {
	purgatory.Op
	ready atomic.Bool
}

func (l *lean) TryComplete() bool { return l.ready.Load() }
func (*lean) OnComplete()         {}
func (*lean) OnExpiration()       {}

// An operation watched under one key with a timeout costs one allocation, its
// own: the timeout's Timer and the first key's place are part of its Op.
func TestOneAllocationPerOperation(t *testing.T) {
	p := newPurgatory(t)
	allocs := testing.AllocsPerRun(1000, func() {
		op := &lean{}
		op.Timeout = time.Hour
		if p.TryCompleteElseWatch(op, "k") {
			t.Fatal("completed at once")
		}
		op.ready.Store(true)
		if p.CheckAndComplete("k") != 1 {
			t.Fatal("not completed")
		}
	})
	require.EqualValues(t, 1, allocs)
}

// recycled is lean, put back on a free list of one once the purgatory is
// done with it.
type recycled struct {
	lean
	free chan *recycled
}

func (r *recycled) Recycle() { r.free <- r }

// A reused operation allocates nothing per use, watched under two keys as
// under one: what a use under further keys needs (Op.more, and the array of
// their lists) is kept for the next.
func TestReusedOperationAllocatesNothing(t *testing.T) {
	for _, keys := range [][]string{{"a"}, {"a", "b"}} {
		t.Run(fmt.Sprint(len(keys), " keys"), func(t *testing.T) {
			p := newPurgatory(t)
			free := make(chan *recycled, 1)
			free <- &recycled{free: free}
			allocs := testing.AllocsPerRun(1000, func() {
				op := <-free
				op.ready.Store(false)
				op.Timeout = time.Hour
				if p.TryCompleteElseWatch(op, keys...) {
					t.Fatal("completed at once")
				}
				op.ready.Store(true)
				if p.CheckAndComplete(keys[0]) != 1 {
					t.Fatal("not completed")
				}
			})
			require.Zero(t, allocs)
			require.Zero(t, p.Watched())
		})
	}
}
