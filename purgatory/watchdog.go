package purgatory

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/cacheline"
	"github.com/purgatory-go/purgatory/internal/recovery"
	"github.com/purgatory-go/purgatory/internal/stuck"
)

// StuckAfter is how long an operation's OnComplete (with OnExpiration after
// it) may run before the purgatory logs it, at level Warn to [WithLogger]'s
// logger, naming the operation's type, its outcome and the call it holds up;
// at most one line a minute per purgatory. It is the wheel's
// [timingwheel.StuckAfter], for the same reasons.
//
// Callbacks must not block, since each runs inside the call that ended its
// operation and holds it up: CheckAndComplete, TryCompleteElseWatch,
// ForceComplete and ForceCompleteForKey on the caller's goroutine; Close's
// sweep (Shutdown's runs on a goroutine of its own, and is bounded by its
// context); a timing-wheel worker for Expired (no other timeout of the wheel
// fires once every worker is held); a context's AfterFunc goroutine for
// ContextDone; for a parked use (TryCompleteElsePark) that expired or saw its
// context done, the caller of Parked.Wait.
//
// The purgatory samples the callbacks running once a second while some run,
// and not at all otherwise (internal/stuck, as the wheel does): a callback
// costs an atomic compare-and-swap and a store on its P's own
// cache line, and no clock read.
const StuckAfter = stuck.After

// slotBlock is one P's slots for the callbacks that run now: one block of
// cacheline.Size bytes, written by that P's goroutines only.
type slotBlock [cacheline.Size / 8]atomic.Pointer[Op]

// slotsPerP is how many callbacks running at once on one P the watchdog can
// name; more run untracked (a line then says "at least").
const slotsPerP = len(slotBlock{})

// watchdog tracks the callbacks that run, and samples them while any do.
type watchdog struct {
	slots   []slotBlock // one per P at New; immutable slice
	sampler *stuck.Sampler

	mu   sync.Mutex // guards seen
	seen map[*Op]time.Time
}

func newWatchdog(c *core) *watchdog {
	d := &watchdog{slots: make([]slotBlock, max(runtime.GOMAXPROCS(0), 1)), seen: map[*Op]time.Time{}}
	d.sampler = stuck.New(c.look, d.quiet)
	return d
}

// track lists o as running a callback, on the slots of P p (procid.Hint's,
// the caller's P), and makes sure the watchdog samples. It returns the slot to
// clear, nil if every slot of the P is taken.
func (d *watchdog) track(o *Op, p int) *atomic.Pointer[Op] {
	if p >= len(d.slots) {
		p %= len(d.slots) // GOMAXPROCS grew since New; a modulo by a variable divides, so only then
	}
	var slot *atomic.Pointer[Op]
	for i := range d.slots[p] {
		if s := &d.slots[p][i]; s.Load() == nil && s.CompareAndSwap(nil, o) {
			slot = s
			break
		}
	}
	d.sampler.Wake()
	return slot
}

// ran is a callback that runs, with when a sample first saw it.
type ran struct {
	o     *Op
	since time.Time
}

// look is the purgatory's sample (stuck.Sampler): it logs the callbacks that
// an earlier sample saw and that still run StuckAfter later, and reports
// whether any runs.
func (c *core) look(now time.Time) (busy bool) {
	live := c.dog.sample(now)
	var late []ran
	for _, r := range live {
		if now.Sub(r.since) >= StuckAfter {
			late = append(late, r)
		}
	}
	if len(late) > 0 && c.dog.sampler.MayLog(now) {
		c.logStuck(late, now)
	}
	return len(live) > 0
}

// sample returns the callbacks that run, each with when a sample first saw
// it (now, for those it sees first), and remembers them.
func (d *watchdog) sample(now time.Time) []ran {
	d.mu.Lock()
	defer d.mu.Unlock()
	live := d.runningLocked(now)
	d.seen = make(map[*Op]time.Time, len(live))
	for _, r := range live {
		d.seen[r.o] = r.since
	}
	return live
}

// current returns the callbacks that run, as sample does, and leaves the
// sampler's memory as it is.
func (d *watchdog) current(now time.Time) []ran {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runningLocked(now)
}

func (d *watchdog) runningLocked(now time.Time) []ran {
	var live []ran
	for p := range d.slots {
		for i := range d.slots[p] {
			if o := d.slots[p][i].Load(); o != nil {
				since, ok := d.seen[o]
				if !ok {
					since = now
				}
				live = append(live, ran{o, since})
			}
		}
	}
	return live
}

// quiet reports whether no slot holds a callback: the sampler's idle.
func (d *watchdog) quiet() bool {
	for p := range d.slots {
		for i := range d.slots[p] {
			if d.slots[p][i].Load() != nil {
				return false
			}
		}
	}
	return true
}

// runsIn names the call an operation's callbacks run in, by its outcome. An
// outcome left for a try runs in the call that ran the try.
var runsIn = map[Outcome]string{
	Completed:   "the CheckAndComplete, HandOff, Advance or TryCompleteElseWatch that completed it",
	Forced:      "the ForceComplete or ForceCompleteForKey that ended it, or the call whose try it waited for",
	Expired:     "a timing-wheel worker (no timeout of the wheel fires once every worker is held), the Parked.Wait that timed it out, or the call whose try it waited for",
	ContextDone: "the goroutine of its context's AfterFunc, the Parked.Wait that saw its context done, or the call whose try it waited for",
	Closed:      "Close (or Shutdown's sweep, which its context bounds), or the call whose try it waited for",
	Shed:        "the TryCompleteElseWatch that shed it",
}

func (c *core) logStuck(late []ran, now time.Time) {
	count, list := c.describe(late, now)
	recovery.Logger(c.settings.logger).Warn(fmt.Sprintf("purgatory %q: %s operation callbacks (OnComplete, OnExpiration) have run longer than %v. "+
		"Callbacks must not block: answer through a buffered channel or hand slow work to a goroutine of your own", c.settings.name, count, StuckAfter),
		"running", list)
}

// describe names the callbacks rs, the longest running first, at most
// three: each operation's type, its outcome, how long it has run as the
// samples saw it, and the call it holds up. count is how many there are,
// "at least" that many if some P's slots were full.
func (c *core) describe(rs []ran, now time.Time) (count, list string) {
	slices.SortFunc(rs, func(a, b ran) int { return a.since.Compare(b.since) })
	var b strings.Builder
	for n, r := range rs {
		if n == 3 {
			fmt.Fprintf(&b, "; and %d more", len(rs)-n)
			break
		}
		if n > 0 {
			b.WriteString("; ")
		}
		age := "under " + stuck.Every.String() // not yet seen by a sample
		if d := now.Sub(r.since); d >= stuck.Every {
			age = d.Truncate(time.Second).String()
		}
		out := r.o.Outcome()
		fmt.Fprintf(&b, "%T (%v) for %s, holding up %s", r.o.impl, out, age, runsIn[out])
	}
	count = fmt.Sprint(len(rs))
	if c.dog.full() {
		count = "at least " + count
	}
	return count, b.String()
}

// full reports whether some P's slots are all taken, so that callbacks may
// run untracked.
func (d *watchdog) full() bool {
	for p := range d.slots {
		if d.slots[p][slotsPerP-1].Load() != nil {
			return true
		}
	}
	return false
}
