//go:build race

package purgatory

// raceEnabled: the tests run under the race detector, which makes the
// interleaving checker, one goroutine of pure steps, about seven times slower
// for nothing to find.
const raceEnabled = true
