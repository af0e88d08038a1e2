package purgatory_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/purgatory"
)

// The one table of outcomes gives each its name, its place in Outcomes and its
// field in Stats.
func TestOutcomeTable(t *testing.T) {
	require.Equal(t, []purgatory.Outcome{purgatory.Completed, purgatory.Forced, purgatory.Expired,
		purgatory.ContextDone, purgatory.Cancelled, purgatory.Closed, purgatory.Shed}, slices.Collect(purgatory.Outcomes()))
	names := map[purgatory.Outcome]string{
		purgatory.Pending: "pending", purgatory.Completed: "completed", purgatory.Forced: "forced",
		purgatory.Expired: "expired", purgatory.ContextDone: "context_done",
		purgatory.Cancelled: "cancelled", purgatory.Closed: "closed", purgatory.Shed: "shed", -1: "unknown", 99: "unknown",
	}
	for o, name := range names {
		require.Equal(t, name, o.String())
	}
	s := purgatory.Stats{Completed: 1, Forced: 2, Expired: 3, ContextDone: 4, Cancelled: 5, Closed: 6, Shed: 7}
	for o := range purgatory.Outcomes() {
		require.EqualValues(t, o, s.Ended(o), "Ended(%v)", o)
	}
	require.Zero(t, s.Ended(purgatory.Pending))
	require.Zero(t, s.Ended(99))
	for range purgatory.Outcomes() {
		break // stopping early is allowed
	}
}
