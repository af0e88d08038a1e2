//go:build purgatorycheck && !race

package sched

// race: the race detector is off (see Bound).
const race = false
