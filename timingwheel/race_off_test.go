//go:build !race && purgatorycheck

package timingwheel

// raceEnabled: see race_on_test.go.
const raceEnabled = false
