package purgatory

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A turn is held by one goroutine at a time, and a request made while it is
// held is served by a round that starts after the request: the last round
// sees every request made.
func TestTurnLosesNoRequest(t *testing.T) {
	var tn turn
	var posted, seen, inside atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5000 {
				posted.Add(1)
				if !tn.take(0, 0, 0) {
					continue // the holder goes round once more
				}
				for {
					require.EqualValues(t, 1, inside.Add(1), "one holder at a time")
					seen.Store(posted.Load())
					inside.Add(-1)
					if !tn.release() {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, posted.Load(), seen.Load(), "a round after every request")
	require.Zero(t, tn.Load(), "let go at the end")
}

// The turn keeps the other bits of its word: take changes nothing when a
// stop bit is set, and pass leaves keep's bits and sets set's.
func TestTurnKeepsTheWord(t *testing.T) {
	var tn turn
	tn.Store(0x1)
	require.False(t, tn.take(0x1, 0, 0), "a stop bit is set")
	require.EqualValues(t, 0x1, tn.Load())

	tn.Store(0x4)
	require.True(t, tn.take(0x1, 0, 0))
	require.False(t, tn.take(0x1, 0, 0), "held: asks for one more round")
	require.EqualValues(t, 0x4|turnHeld|turnAgain, tn.Load())
	require.False(t, tn.take(0x1, 0, 0), "asked already")
	require.False(t, tn.take(0, 0x4, 0), "a bit of mask is not as wanted")

	swapped, again := tn.letGo(tn.Load(), 0x4, 0x40)
	require.True(t, swapped)
	require.True(t, again, "one more round was asked for")
	require.True(t, tn.taken(), "so the holder keeps the turn")
	swapped, again = tn.letGo(tn.Load(), 0x4, 0x40)
	require.True(t, swapped)
	require.False(t, again)
	require.EqualValues(t, 0x4|0x40, tn.Load(), "let go: keep's bits, and set's")

	swapped, _ = tn.letGo(0x4, 0x4, 0) // a stale read
	require.False(t, swapped, "a stale word is not swapped")

	tn.Store(0)
	require.True(t, tn.take(0, 0, 0))
	require.False(t, tn.take(0, 0, 0), "asked during the round")
	require.True(t, tn.release(), "so the holder goes round again")
	require.True(t, tn.taken())
	require.False(t, tn.release(), "nobody asked during that round")
	require.Zero(t, tn.Load())
}
