//go:build race

// Package race tells tests whether the race detector is on: a sync.Pool
// drops a share of what is put in it then, on purpose, so a test that counts
// the allocations of pooled work counts only without it.
package race

// Enabled is true in a build with -race.
const Enabled = true
