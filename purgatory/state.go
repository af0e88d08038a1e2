package purgatory

// The bits of Op.state, and every read and write of them: no other file
// tests a bit. What the states mean and who moves between them is the block
// at Op (operation.go); the try bits are a turn (turn.go).

const (
	// outcomeBits hold the use's Outcome; 0 is Pending. Set once per use,
	// by the one claim that wins (claim, claimAt, or settle claiming
	// Completed); no later move of the use changes them, and every path
	// reads the use as ended. Only bind's next use clears them.
	outcomeBits int64 = 0x0f
	// tryingBit is set while one goroutine runs TryComplete: taken by
	// acquire or hold (a turn's take), cleared only by its holder (settle,
	// abandon), even after another path has set an outcome. The turn's
	// other bit, turnAgain, is set only while tryingBit is: a try was asked
	// for during the running one, and the holder clears it and tries once
	// more before it lets go, so it is never left set.
	tryingBit = turnHeld
	// soloBit is set only by TryCompleteElseWatch's last settle, in the
	// compare-and-swap that clears tryingBit, for an operation watched
	// under one key; every later move of the use keeps it. While it is set
	// and tryingBit is not, only the key's walk tries the operation,
	// without the try bit (the steps at Op).
	soloBit int64 = 0x40
	// lockerBit is set by bind, before any try of the use, if Op.Locker is
	// set, so that a try reads nothing of Op but this word.
	lockerBit int64 = 0x80
	// recyclerBit is set by bind if the operation is a Recycler: the
	// purgatory calls its Recycle once it is done with each use.
	recyclerBit int64 = 0x100
	// boundBit is set by the first bind and never cleared: the operation
	// is the purgatory's (Op.core), and a TryCompleteElseWatch of it is
	// either its next use or a misuse.
	boundBit int64 = 0x200

	// The pins: while one is set on an ended use, something of that use may
	// still run, and the operation may not be used again. Each is set while
	// the use is pending (the ending pin by the claim itself) and cleared
	// once, by whoever knows that its part is over; the clear that leaves
	// none (release) finishes the use: see finish.
	//
	// armedBit: the use's timeout is armed, or being armed, and may fire.
	// Set by armTimer before it arms; cleared when a Stop prevents the
	// fire, or at the end of the fire (expire), or when the wheel refused
	// the timer.
	armedBit int64 = 0x400
	// ctxBit: the use's context callback may run. Set by watchContext
	// before it registers it; cleared when its stop prevents it, or at the
	// end of the callback (contextDone).
	ctxBit int64 = 0x800
	// endingBit: the winner of the claim is detaching the use and running
	// its callbacks. Set by the claim; cleared by complete (or withdraw,
	// or a Close that finds the use ended before bind) once they returned.
	endingBit int64 = 0x1000
	// walkedBit: the use ended while a walk of its one key may be trying it
	// without the try bit (solo): the walk clears it when it leaves the key
	// (deferFinish). Set only in the move that would otherwise finish the
	// use.
	walkedBit int64 = 0x2000
	pins            = armedBit | ctxBit | endingBit | walkedBit

	// The generation: the use's number, in the word's high half. bind
	// adds one for each use after the first; every other move keeps it.
	// A watch-list entry carries the generation it was made for, and is
	// stale, dead to every walk, once the operation has moved on.
	genShift       = 32
	genBits  int64 = -1 << genShift

	// withdrawn is the internal outcome of an operation whose
	// TryCompleteElseWatch was undone because TryComplete panicked. It ends
	// every later path like an outcome does; Outcome reports Pending.
	withdrawn = Outcome(outcomeBits)
)

// gen is a use's generation, as a watch-list entry carries it.
type gen uint32

func genOf(s int64) gen { return gen(uint64(s) >> genShift) }

// Outcome returns how the operation's last use ended, or Pending. Inside
// OnComplete it tells which path ended it.
func (o *Op) Outcome() Outcome {
	if out := Outcome(o.state.Load() & outcomeBits); out != withdrawn {
		return out
	}
	return Pending
}

// gen returns the current use's generation.
func (o *Op) gen() gen { return genOf(o.state.Load()) }

// ended reports whether the current use has an outcome (withdrawn
// included).
func (o *Op) ended() bool { return o.state.Load()&outcomeBits != 0 }

// live reports whether use g is the operation's current use and pending: an
// entry made for g is live. A stale entry (an earlier use) is dead.
func (o *Op) live(g gen) bool {
	s := o.state.Load()
	return s&outcomeBits == 0 && genOf(s) == g
}

// touch loads the cache line a try reads (Op's last word, and usually the
// embedding operation's first fields), so that a try soon after does not wait
// for memory. (An atomic load: the compiler keeps it.)
func (o *Op) touch() { o.state.Load() }

// walkOnly reports whether only a walk of the operation's one key may try use
// g now, without the try bit: solo is set, no try runs, and g is the current
// use, pending.
func (o *Op) walkOnly(g gen) bool {
	s := o.state.Load()
	return s&(soloBit|tryingBit|outcomeBits) == soloBit && genOf(s) == g
}

// claim makes outcome the current use's outcome if it has none yet, and
// reports whether it did; the claim pins the use (endingBit) until its
// winner has run complete. Exactly one claim per use succeeds. The try bits
// are left for their holder to clear. Only paths that own the current use
// claim with it: ForceComplete, the use's own timeout and context, and
// TryCompleteElseWatch; paths that reach the operation through a watch-list
// entry use claimAt.
func (o *Op) claim(outcome Outcome) bool {
	for {
		s := o.state.Load()
		if s&outcomeBits != 0 {
			return false
		}
		if o.state.CompareAndSwap(s, s|int64(outcome)|endingBit) {
			return true
		}
	}
}

// claimAt is claim for use g only: an entry's path, which must not end a
// later use.
func (o *Op) claimAt(g gen, outcome Outcome) bool {
	for {
		s := o.state.Load()
		if s&outcomeBits != 0 || genOf(s) != g {
			return false
		}
		if o.state.CompareAndSwap(s, s|int64(outcome)|endingBit) {
			return true
		}
	}
}

// acquire takes the try bit of use g and reports whether it did. If another
// goroutine holds it, acquire asks that goroutine for one more try and
// returns false; it also returns false if g has ended or is not the current
// use.
func (o *Op) acquire(g gen) bool {
	return o.state.take(outcomeBits, genBits, int64(g)<<genShift)
}

// check runs TryComplete, under Op.Locker if one is set. The caller holds the
// try bit, or the operation is walkOnly and the caller walks its key.
func (o *Op) check(impl Operation) bool {
	if o.state.Load()&lockerBit != 0 {
		return o.checkLocked(impl)
	}
	return impl.TryComplete()
}

func (o *Op) checkLocked(impl Operation) bool {
	l := o.Locker
	if l == nil { // cleared after TryCompleteElseWatch, which its doc forbids
		return impl.TryComplete()
	}
	l.Lock()
	defer l.Unlock()
	return impl.TryComplete()
}

// tryHeld settles a try whose TryComplete returned ok, and tries again, for
// as long as others ask for another try, until one passes or nobody asks; it
// reports whether it claimed the completion. Either way the try bit is let
// go, setting soloBit if solo. If TryComplete panics, the caller still holds
// the try bit and must abandon it. It is the one settle loop: the walks and
// TryCompleteElseWatch all end their tries here.
func (o *Op) tryHeld(impl Operation, ok, solo bool) bool {
	var set int64
	if solo {
		set = soloBit
	}
	for {
		won, retry := o.settle(ok, set)
		if !retry {
			return won
		}
		ok = o.check(impl)
	}
}

// settle ends a try whose TryComplete returned ok; the caller holds the try
// bit. If ok, it claims Completed and reports won. Otherwise it lets go of the
// try bit, setting the bits in set, unless another try was asked for
// meanwhile: then it keeps the bit and reports retry. If another path ended
// the use during the try, the letting go may finish it (finish).
func (o *Op) settle(ok bool, set int64) (won, retry bool) {
	for {
		s := o.state.Load()
		switch {
		case s&outcomeBits != 0: // another path ended it during the try
			if o.state.CompareAndSwap(s, s&^turnBits) {
				o.finishIfFree(s &^ turnBits)
				return false, false
			}
		case ok:
			if o.state.CompareAndSwap(s, s&^turnBits|int64(Completed)|endingBit) {
				return true, false
			}
		default:
			if swapped, again := o.state.letGo(s, ^turnBits, set); swapped {
				return false, again
			}
		}
	}
}

// abandon lets go of the try bit after TryComplete panicked. With withdraw,
// it also claims the withdrawn outcome if no other path has ended the use,
// and reports whether it did.
func (o *Op) abandon(withdraw bool) bool {
	for {
		s := o.state.Load()
		next := s &^ turnBits
		switch {
		case s&outcomeBits != 0:
			if o.state.CompareAndSwap(s, next) {
				o.finishIfFree(next)
				return false
			}
			continue
		case withdraw:
			next |= int64(withdrawn) | endingBit
		}
		if o.state.CompareAndSwap(s, next) {
			return withdraw
		}
	}
}

// release clears pin, which the caller set or inherited, and finishes the
// use if that leaves it free (exactly one move leaves a use free, so exactly
// one caller finishes it). noSoloTry says that no walk can be trying the use
// without the try bit: the caller is that walk, or the use was never solo.
// Otherwise a solo use whose key a walk holds is handed to that walk, in the
// same move (walkedBit), and the walk finishes it when it leaves the key.
func (o *Op) release(pin int64, noSoloTry bool) {
	for {
		s := o.state.Load()
		next := s &^ pin
		if free(next) && !noSoloTry && next&soloBit != 0 && o.first != nil && o.first.walked() {
			next |= walkedBit
		}
		if !o.state.CompareAndSwap(s, next) {
			continue
		}
		if next&walkedBit != 0 && s&walkedBit == 0 {
			o.first.deferFinish(o) // clears walkedBit, now or when the walk leaves
			return
		}
		o.finishIfFree(next)
		return
	}
}

// free reports whether a use in state s is over: ended, no try held, no pin.
func free(s int64) bool { return s&outcomeBits != 0 && s&(turnBits|pins) == 0 }

// finishIfFree finishes the use if s, the state the caller's move left, is
// free.
func (o *Op) finishIfFree(s int64) {
	if free(s) {
		o.finish(s)
	}
}

// finish ends a use the purgatory is done with: its Recycle runs, if the
// operation is a Recycler and the use was a real one (not withdrawn).
func (o *Op) finish(s int64) {
	if s&recyclerBit != 0 && Outcome(s&outcomeBits) != withdrawn {
		o.impl.(Recycler).Recycle()
	}
}

// bindState moves an operation to its next use, with the bits of set (the
// flags, and the try bit, which TryCompleteElseWatch holds from here), and
// reports how: fresh (its first), reused (a later one, with the new
// generation), or why not.
func (o *Op) bindState(set int64) bindResult {
	for {
		s := o.state.Load()
		var next int64
		switch {
		case s == 0:
			next = boundBit | set
		case s&boundBit == 0:
			return bindEnded // ForceComplete before it was ever added
		case s&outcomeBits == 0:
			return bindPending
		case !free(s):
			return bindBusy
		default:
			next = (s&genBits + 1<<genShift) | boundBit | set
		}
		if o.state.CompareAndSwap(s, next) {
			if s == 0 {
				return bindFresh
			}
			return bindReused
		}
	}
}

type bindResult int

const (
	bindFresh   bindResult = iota // the operation's first use
	bindReused                    // a later use
	bindEnded                     // ended by ForceComplete before it was ever added
	bindPending                   // added before and still pending: a misuse
	bindBusy                      // its last use is not over: a misuse
)

// armOn sets pin on the current use if it is still pending, and reports
// whether it did: a pin is only ever set on a pending use.
func (o *Op) armOn(pin int64) bool {
	for {
		s := o.state.Load()
		if s&outcomeBits != 0 {
			return false
		}
		if o.state.CompareAndSwap(s, s|pin) {
			return true
		}
	}
}

// firstTries is TryCompleteElseWatch's hold of the try bit, from its first
// try to its last settle: no other try of the operation runs in between.
type firstTries struct {
	o    *Op
	impl Operation
	held bool
}

// hold is TryCompleteElseWatch's hold of the try bit, which bind took with
// the use; ok is false if the use has ended meanwhile (ForceComplete): the
// bit is let go then.
func (o *Op) hold(impl Operation) (t firstTries, ok bool) {
	if o.ended() {
		o.abandon(false)
		return firstTries{}, false
	}
	return firstTries{o, impl, true}, true
}

func (t *firstTries) check() bool { return t.o.check(t.impl) }

// conclude lets go of the try bit, trying once more for each try asked for
// meanwhile, and completes the operation if a try passed (ok is the last
// one's result); it reports whether it did.
func (t *firstTries) conclude(ok, solo bool) bool {
	won := t.o.tryHeld(t.impl, ok, solo)
	t.held = false
	if won {
		t.o.complete(t.impl, Completed, true)
	}
	return won
}

// undo, deferred, withdraws the operation if TryComplete panicked while the
// try bit was held: nothing stays watched, armed or counted.
func (t *firstTries) undo() {
	if t.held && t.o.abandon(true) {
		t.o.withdraw()
	}
}
