package purgatory_test

import (
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
