package purgatory

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/internal/procid"
	"github.com/purgatory-go/purgatory/internal/recovery"
	"github.com/purgatory-go/purgatory/timingwheel"
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
// ContextDone.
//
// The purgatory looks through a runtime timer that samples the callbacks
// running once a second, armed only while some run: a callback costs an
// atomic compare-and-swap and a store on its P's own cache line, and no clock
// read.
const StuckAfter = timingwheel.StuckAfter

// slotsPerP is how many callbacks running at once on one P the watchdog can
// name; more run untracked (a line then says "at least").
const slotsPerP = 16

// running is one P's callbacks that run now, one cache line of it.
type running [slotsPerP]atomic.Pointer[Op]

// watchdog tracks the callbacks that run, and samples them while any do.
type watchdog struct {
	slots    []running // one per P at New; immutable slice
	watching atomic.Bool
	timer    *time.Timer // samples; armed while watching

	mu     sync.Mutex // guards the sampler's state below
	seen   map[*Op]time.Time
	logged time.Time
}

func newWatchdog() *watchdog {
	return &watchdog{slots: make([]running, max(runtime.GOMAXPROCS(0), 1)), seen: map[*Op]time.Time{}}
}

// enter lists o as running a callback, on its P's line, and makes sure the
// watchdog samples. It returns the slot to clear, nil if every slot of the P
// is taken.
func (c *core) enter(o *Op) *atomic.Pointer[Op] {
	d := c.dog
	p := procid.Hint() % len(d.slots)
	var slot *atomic.Pointer[Op]
	for i := range d.slots[p] {
		if s := &d.slots[p][i]; s.Load() == nil && s.CompareAndSwap(nil, o) {
			slot = s
			break
		}
	}
	if !d.watching.Load() && d.watching.CompareAndSwap(false, true) {
		d.arm(c)
	}
	return slot
}

func (d *watchdog) arm(c *core) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer == nil {
		d.timer = time.AfterFunc(time.Second, func() { c.sample() })
		return
	}
	d.timer.Reset(time.Second)
}

// sample looks at the callbacks running: one seen running at an earlier
// sample and still running StuckAfter later is stuck. It re-arms the timer
// while any callback runs.
func (c *core) sample() {
	d := c.dog
	now := time.Now()
	var stuck []*Op
	d.mu.Lock()
	live := map[*Op]time.Time{}
	for p := range d.slots {
		for i := range d.slots[p] {
			o := d.slots[p][i].Load()
			if o == nil {
				continue
			}
			since, ok := d.seen[o]
			if !ok {
				since = now
			}
			live[o] = since
			if now.Sub(since) >= StuckAfter {
				stuck = append(stuck, o)
			}
		}
	}
	d.seen = live
	logNow := len(stuck) > 0 && (d.logged.IsZero() || now.Sub(d.logged) >= time.Minute)
	if logNow {
		d.logged = now
	}
	ages := make([]time.Duration, len(stuck))
	for i, o := range stuck {
		ages[i] = now.Sub(live[o])
	}
	if len(live) > 0 {
		d.timer.Reset(time.Second)
	}
	d.mu.Unlock()
	if len(live) == 0 {
		d.watching.Store(false)
		if !d.idle() && d.watching.CompareAndSwap(false, true) {
			d.arm(c)
		}
		return
	}
	if logNow {
		c.logStuck(stuck, ages)
	}
}

// idle reports whether no slot holds a callback.
func (d *watchdog) idle() bool {
	for p := range d.slots {
		for i := range d.slots[p] {
			if d.slots[p][i].Load() != nil {
				return false
			}
		}
	}
	return true
}

// heldUp names the call an operation's callbacks run in, by its outcome.
var heldUp = map[Outcome]string{
	Completed:   "the CheckAndComplete or TryCompleteElseWatch that completed it",
	Forced:      "the ForceComplete or ForceCompleteForKey that ended it",
	Expired:     "a timing-wheel worker (no timeout of the wheel fires once every worker is held)",
	ContextDone: "the goroutine of its context's AfterFunc",
	Closed:      "Close (or Shutdown's sweep, which its context bounds)",
	Shed:        "the TryCompleteElseWatch that shed it",
}

func (c *core) logStuck(stuck []*Op, ages []time.Duration) {
	order := make([]int, len(stuck))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(ages[b] - ages[a]) })
	var b strings.Builder
	for n, i := range order {
		if n == 3 {
			fmt.Fprintf(&b, "; and %d more", len(order)-n)
			break
		}
		if n > 0 {
			b.WriteString("; ")
		}
		o := stuck[i]
		out := o.Outcome()
		fmt.Fprintf(&b, "%T (%v) for %v, holding up %s", o.impl, out, ages[i].Truncate(time.Second), heldUp[out])
	}
	count := fmt.Sprint(len(stuck))
	if c.dog.full() {
		count = "at least " + count
	}
	recovery.Logger(c.settings.logger).Warn(fmt.Sprintf("purgatory %q: %s operation callbacks (OnComplete, OnExpiration) have run longer than %v. "+
		"Callbacks must not block: answer through a buffered channel or hand slow work to a goroutine of your own", c.settings.name, count, StuckAfter),
		"running", b.String())
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
