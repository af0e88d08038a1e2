//go:build purgatorycheck

package sched

import (
	"sync"
	"testing"
)

// goid reads the ID runtime.Stack prints, on every goroutine.
func TestGoid(t *testing.T) {
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if a, b := goid(), stackGoid(); a != b {
				t.Errorf("goid %d, the stack says %d (offset %d)", a, b, goidOffset())
			}
		})
	}
	wg.Wait()
}
