//go:build !race && purgatorycheck

package purgatory

// raceEnabled: see race_on_test.go.
const raceEnabled = false
