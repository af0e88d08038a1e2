package main

import (
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunEndsEveryCallOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, err := run(t.Context(), config{calls: 500, failRate: 0.8, base: 10 * time.Millisecond, max: 200 * time.Millisecond, deadline: time.Second}, io.Discard)
		require.NoError(t, err)
		require.Equal(t, 500, res.succeeded+res.gaveUp)
		require.Zero(t, res.endedTwice)
		require.Greater(t, res.attempts, 500, "failures were retried")
	})
}

func TestAlwaysFailingCallsGiveUpAtTheirDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		res, err := run(t.Context(), config{calls: 50, failRate: 1, base: time.Millisecond, max: 50 * time.Millisecond, deadline: 300 * time.Millisecond}, io.Discard)
		require.NoError(t, err)
		require.Equal(t, 50, res.gaveUp)
		require.Less(t, time.Since(begin), 400*time.Millisecond, "cancellation stopped the waiting timers")
	})
}

func TestRejectsBadFlags(t *testing.T) {
	for _, c := range []config{
		{calls: 0, failRate: 0.5, base: time.Millisecond, max: time.Second, deadline: time.Second},
		{calls: 1, failRate: 1.5, base: time.Millisecond, max: time.Second, deadline: time.Second},
		{calls: 1, failRate: 0.5, base: time.Second, max: time.Millisecond, deadline: time.Second},
	} {
		_, err := run(t.Context(), c, io.Discard)
		require.Error(t, err)
	}
}
