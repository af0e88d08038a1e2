//go:build purgatorycheck

package purgatory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purgatory-go/purgatory/internal/sched"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// cworld is one run of a checker scenario: a purgatory on a wheel of its
// own, one operation, and what the paths share.
type cworld struct {
	p      *Purgatory[string]
	tw     *timingwheel.TimingWheel
	op     *checked
	keys   []string
	level  int64        // the add watches at this level of its key (0: a plain watch)
	items  atomic.Int64 // pushed and not yet taken
	hands  bool         // tries take items; else they answer each way the checker chooses
	panics bool         // a try may panic, as a third way
	locker sync.Locker  // the operation's Op.Locker, if the scenario gives it one

	recycled     chan struct{} // closed at the first Recycle (the next use may start), or by stop
	recycledOnce sync.Once
	stopping     atomic.Bool

	mu   sync.Mutex
	errs []string // violations met inside the run, in order

	fillers    []*filler   // watched before the paths start (cscenario.fillers)
	keysOf     [2][]string // the keys each use is watched under
	second     atomic.Bool // the reuse has begun: the next use is the second
	cancelKeys []string    // the keys the scenario's CancelForKey paths cancel
}

// ctimeout is a timed use's timeout, and the clock's step.
const ctimeout = time.Millisecond

func newWorld(t *testing.T, sc *cscenario) *cworld {
	tw, err := timingwheel.New(timingwheel.WithShards(1), timingwheel.WithWheelSize(timingwheel.MinWheelSize))
	if err != nil {
		t.Fatal(err)
	}
	opts := []Option{WithShards(1), WithTimingWheel(tw)}
	if sc.own {
		tw.Stop()
		opts = opts[:1] // its own wheel, which Close and Shutdown stop
	}
	p, err := New[string]("check", opts...)
	if err != nil {
		t.Fatal(err)
	}
	tw = p.TimingWheel()
	w := &cworld{p: p, tw: tw, keys: sc.keys, level: sc.level, hands: sc.handOff, panics: sc.panics, recycled: make(chan struct{})}
	if sc.locker {
		w.locker = new(sched.Mutex) // a checker's mutex: its holder may wait at a point
	}
	w.op = &checked{w: w}
	w.keysOf = [2][]string{sc.keys, sc.keys}
	if sc.reuseOnB {
		w.keysOf[1] = sc.keys[1:]
	}
	for _, k := range sc.paths {
		switch {
		case k == pCancel:
			w.cancelKeys = append(w.cancelKeys, sc.keys[0])
		case k == pCancel|onB:
			w.cancelKeys = append(w.cancelKeys, sc.keys[1])
		}
	}
	for range sc.fillers {
		f := &filler{}
		f.Timeout = NoTimeout
		w.fillers = append(w.fillers, f)
		p.TryCompleteElseWatch(f, sc.keys[0])
	}
	return w
}

// filler is an operation watched before the checked one under its first
// key, whose try always says no: it lengthens the list, so that a path
// that forces fillers (pFillers) makes it mostly dead, and a drop compacts
// it, while a walk may be reading it.
type filler struct{ Op }

func (*filler) TryComplete() bool { return false }
func (*filler) OnComplete()       {}
func (*filler) OnExpiration()     {}

// fail records a violation met inside the run: Check reports the first.
func (w *cworld) fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, msg)
}

// answer is a try's: each way the checker chooses (a panic too, where the
// scenario lets tries panic), or, for hand-offs, whether it took an item.
func (w *cworld) answer() bool {
	if !w.hands {
		ways := 2
		if w.panics {
			ways = 3
		}
		switch sched.Choose("answer", ways) {
		case 0:
			return false
		case 1:
			return true
		}
		panic(errInjected)
	}
	for n := w.items.Load(); n > 0; n = w.items.Load() {
		if w.items.CompareAndSwap(n, n-1) {
			return true
		}
	}
	return false
}

// prepare sets the operation up for a use: its timeout, its context.
func (w *cworld) prepare(timed bool, ctx context.Context) {
	w.op.Timeout = NoTimeout
	if timed {
		w.op.Timeout = ctimeout
	}
	w.op.Context = ctx
	w.op.Locker = w.locker
}

// check is the invariants after every step, read from the words: I1–I4 on
// the operation's state, and the violations the run met.
func (w *cworld) check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 {
		return errors.New(w.errs[0])
	}
	if s := w.op.state.Load(); s != 0 {
		if err := invariants(s); err != nil {
			return fmt.Errorf("state %#x: %w", s, err)
		}
	}
	return nil
}

// final is what holds once nobody can go on: each use ended once as its
// record says, every list at rest with its walk let go and nothing relayed,
// and no item left beside a pending use (a hand-off lost).
func (w *cworld) final() error {
	if err := w.check(); err != nil {
		return err
	}
	s := w.op.state.Load()
	for g := range min(int(genOf(s))+1, 2) {
		if !bound(s) {
			break
		}
		if g == int(genOf(s)) && !ended(s) {
			if w.items.Load() > 0 && w.hands {
				return fmt.Errorf("use %d waits while %d items wait for it: a hand-off lost", g, w.items.Load())
			}
			if w.op.uses[g].forced {
				return fmt.Errorf("use %d: ForceComplete decided it, yet it never ended", g)
			}
			continue // a use with no timeout, not ended: Stop closes it
		}
		if err := w.op.check(&w.op.uses[g], g); err != nil {
			return err
		}
	}
	return w.restingLists()
}

// restingLists checks each list the purgatory holds: its walk let go,
// nothing relayed to it, and ListsAtRest's count and crowding.
func (w *cworld) restingLists() error {
	sh := &w.p.watchers.all[0]
	for k, l := range sh.lists {
		if !restingWord(walkWord(l.walking.Load())) {
			return fmt.Errorf("list %s at rest with walking word %#x", k, l.walking.Load())
		}
		if l.lv != nil && len(l.lv.relayed) > 0 {
			return fmt.Errorf("list %s at rest with %d uses relayed to no walk", k, len(l.lv.relayed))
		}
	}
	return w.p.ListsAtRest()
}

// stop ends what is left: the purgatory, its wheel, and a path that waits
// for a Recycle that never came.
func (w *cworld) stop() {
	w.stopping.Store(true)
	w.recycledOnce.Do(func() { close(w.recycled) })
	w.p.Close()
	w.tw.Stop()
}
