package purgatory

import (
	"sync/atomic"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// The bell: how a broadcast reaches a key's parked waiters with one close of
// a channel (issue 72). A use parked under one plain key
// (TryCompleteElsePark with one key) is tried by its own waiter, on its own
// goroutine, not by the walks that broadcast: CheckAndComplete and Advance
// ring the key's bell, one close(ch) for all the key's parked waiters, and
// pass their entries by; each waiter wakes, takes its use's try bit and
// tries it, as a goroutine woken by a condition variable re-checks its
// condition. HandOff still tries them in its walk, so that a hand-off stays
// first come, first served.
//
// Why no event is missed, step by step, for a parked use of key k (park.go's
// rule 7):
//
//  1. The use is never solo: a walk that tries it (HandOff's) and its waiter
//     both take the try bit, so the two never try it at once, and a try
//     asked for while another runs is made by the one running (turnAgain).
//     Its entry carries ringsMark, so that the walks that ring pass it.
//  2. Its add listens first: it takes the bell's channel under the shard's
//     mutex as it links the use (watchAt), and only then tries it the second
//     time. A walk of k rings under that mutex as it enters (enter), before
//     it reads anything. So an event whose walk rang before the listen is
//     seen by that second try, and one whose walk rings after it closes the
//     channel the waiter listens to (or a later one, each of which was made
//     after a ring and is closed by the next).
//  3. A waiter woken by the bell reads the rings so far (rung), tries, and,
//     if the use is still its to wait for, listens again and reads rung once
//     more: if another ring came meanwhile it tries again. A ring counts
//     before it takes the channel, so a ring that the second read misses
//     takes, and closes, the channel the waiter has just listened to (or a
//     later one). That is an event count: nothing is missed, and a waiter
//     woken and satisfied makes no channel.
//  4. Everything else about the use is a watched use's: a claim that meets
//     the waiter's try leaves its outcome for it, a claim that meets none
//     ends it at once and sends the token (rule 2), and Close,
//     CancelForKey and ForceCompleteForKey end it through its entry, with the
//     mark taken off (use).
//
// CheckAndComplete and Advance do not count the uses their bell wakes: those
// end in their waiters' own tries, on the waiters' goroutines.

// bell is a key's: its rings, and the channel its parked waiters listen to.
// A key's list makes it with its levelState, under the shard's mutex, at the
// first parked use linked there (heard), and keeps it for the list's life.
type bell struct {
	rung atomic.Uint64 // rings so far (step 3)
	// ch holds a chan struct{}: nil until a waiter listens, and a ring takes
	// it and closes it. (An atomic.Value holds a channel without a cell of
	// its own: a ring that woke someone costs the key one allocation, the
	// channel, as Consul's close-and-replace does.)
	ch atomic.Value
}

// newBell returns a bell nobody listens to.
func newBell() *bell {
	b := new(bell)
	b.ch.Store(none)
	return b
}

var none chan struct{} // what bell.ch holds while nobody listens

// ring wakes every waiter listening (step 3's order: count, then take).
func (b *bell) ring() {
	sched.At("bell count")
	b.rung.Add(1)
	sched.At("bell take")
	if c := b.ch.Swap(none).(chan struct{}); c != nil {
		close(c)
	}
}

// listen returns the channel the next ring closes, made if nobody listens
// yet.
func (b *bell) listen() <-chan struct{} {
	for {
		sched.At("bell listen")
		if c := b.ch.Load().(chan struct{}); c != nil {
			return c
		}
		c := make(chan struct{})
		if b.ch.CompareAndSwap(none, c) {
			return c
		}
	}
}

// rings returns how many times the bell has rung.
func (b *bell) rings() uint64 {
	sched.At("bell rings")
	return b.rung.Load()
}

// ringsMark marks the entry of a use whose waiter tries it (step 1): above
// every generation, so that a walk's generation check passes it by unless
// it takes the mark off.
const ringsMark gen = 1 << 63

// use is the generation the entry was made for, without the mark.
func (e entry) use() gen { return e.gen &^ ringsMark }

// rung is a walk's step for the entry of a use whose waiter tries it, whose
// state is s: a hand-off tries it, in its turn; the walks that rang pass it.
func (w *tryWalk[K]) rung(s int64, e entry) (step, entry) {
	e.gen = e.use()
	if !w.handOff {
		return stepDead, e
	}
	return walkStep(s, e.gen), e
}

// heard returns the list's bell, made if need be, for a parked use being
// linked there. The caller holds the shard's mutex.
func (l *watchList[K]) heard() *bell {
	lv := l.levelsMade()
	if lv.bell == nil {
		lv.bell = newBell()
	}
	return lv.bell
}

// ring rings the list's bell, if a parked use was ever linked there. The
// caller holds the shard's mutex.
func (l *watchList[K]) ring() {
	if lv := l.lv; lv != nil && lv.bell != nil {
		lv.bell.ring()
	}
}

// wake is a waiter's turn after a ring (step 3): it tries its use, and
// returns the channel to listen to next, nil if the try ended the use.
func (w Parked) wake(pk *parking) <-chan struct{} {
	b := pk.bell
	for {
		n := b.rings()
		if w.tryHere(pk) {
			return nil
		}
		c := b.listen()
		if b.rings() == n {
			return c
		}
	}
}

// tryHere is the waiter's own try of its use, under the try bit, as a walk
// makes it: it reports whether it ended the use. A use it ends it takes
// back from its parking first (took), so that complete sends it no token,
// as rule 1's shortcut does.
func (w Parked) tryHere(pk *parking) (ended bool) {
	var out Outcome
	switch w.o.acquire(w.g) {
	case acquirePassed:
		return false // ended, or its holder tries it once more
	case acquireLeft:
		out = w.o.apply(w.g)
	default:
		out = w.tried()
	}
	if out == Pending {
		return false
	}
	pk.took = pk.casUse(w.g)
	w.o.complete(w.impl, out)
	return true
}

// tried runs TryComplete with the try bit held, settles it, and returns the
// outcome to complete the use with: Completed, one left for the try, or
// Pending if the use goes on. If TryComplete panics, the use is withdrawn as
// TryCompleteElsePark's own is (unless an outcome was left for the try,
// which then ends it), and the panic reaches Wait's caller.
func (w Parked) tried() Outcome {
	o, impl := w.o, w.impl
	held := true
	defer func() {
		if held {
			o.abandonTry(impl, true)
		}
	}()
	r, out, _ := o.tryHeld(impl, o.runTry(impl), 0)
	held = false
	if r == settleWon || r == settleApplied {
		return out
	}
	return Pending
}
