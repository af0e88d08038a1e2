//go:build race && purgatorycheck

package purgatory

// raceEnabled: the tests run under the race detector. The interleaving
// checker's goroutines run one at a time, so the detector has little to
// see, at ten times the time: only a few of its scenarios run under it.
const raceEnabled = true
