// Package cacheline holds the project's one rule for keeping what different
// cores write apart in memory, and its one constant.
//
// The rule: a value that the goroutines of one P write on a hot path (a
// timing-wheel shard, a purgatory's counter stripe or watch-list shard, a
// P's slots of running callbacks) is a whole number of Size-byte blocks, and
// such values are laid out side by side in an array, so that no two of them
// share a block. A word written by one goroutine and read by all (the
// driver's sleepUntil) gets Size bytes of padding on each side. Each padded
// type's size is pinned by a layout test beside it.
//
// Size is two 64-byte cache lines, not one: x86's spatial prefetcher fetches
// lines in adjacent pairs, so two cores writing neighbouring lines still pass
// a pair between them (Intel's optimization manual: the L2 spatial
// prefetcher completes each line to its 128-byte aligned pair). sync.Pool
// pads its per-P pools to 128 bytes for the same reason.
package cacheline

// Size is the block that values written by different cores never share.
const Size = 128
