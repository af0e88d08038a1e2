//go:build !race

package purgatory

// raceEnabled: see race_on_test.go.
const raceEnabled = false
