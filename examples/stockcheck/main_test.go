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

func TestReconciliation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := run(config{orders: 5000, stock: 8000, paid: 0.7, recheck: 30 * time.Minute, scale: 1}, io.Discard)
		require.NoError(t, err)
		require.Equal(t, r.initial, r.available+r.sold)
		require.EqualValues(t, r.reserved, r.checkedOnce)
		require.NotZero(t, r.outOfStock, "8000 units cannot cover 5000 orders of 1-3")
		require.NotZero(t, r.compensated)
		require.NotZero(t, r.latePays, "some payments arrive after the re-check")
	})
}

func TestRejectsBadFlags(t *testing.T) {
	for _, c := range []config{
		{orders: 0, stock: 1, paid: 0.5, recheck: time.Minute, scale: 1},
		{orders: 1, stock: 1, paid: 2, recheck: time.Minute, scale: 1},
		{orders: 1, stock: 1, paid: 0.5, recheck: 0, scale: 1},
	} {
		_, err := run(c, io.Discard)
		require.Error(t, err)
	}
}
