//go:build purgatorycheck && race

package sched

// race: the race detector is on (see Bound).
const race = true
