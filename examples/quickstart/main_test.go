package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	if err := run(2000, 20*time.Millisecond, 0.5); err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		n        int
		maxDelay time.Duration
		answered float64
	}{{0, time.Second, 0.5}, {10, time.Millisecond, 0.5}, {10, time.Second, 1.5}} {
		if err := run(tc.n, tc.maxDelay, tc.answered); err == nil {
			t.Errorf("run(%d, %v, %v) accepted bad input", tc.n, tc.maxDelay, tc.answered)
		}
	}
}
