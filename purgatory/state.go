package purgatory

// The bits of Op.state, and every read and write of them: no other file
// tests a bit. What the states mean and who moves between them is the block
// at Op (operation.go); the try bits are a turn (turn.go).

const (
	// outcomeBits hold the Outcome; 0 is Pending. Set once, by the one
	// claim that wins (claim, or settle claiming Completed); after that no
	// move changes them, and every path reads the operation as ended.
	outcomeBits int32 = 0x0f
	// tryingBit is set while one goroutine runs TryComplete: taken by
	// acquire or hold (a turn's take), cleared only by its holder (settle,
	// abandon), even after another path has set an outcome. The turn's
	// other bit, turnAgain, is set only while tryingBit is: a try was asked
	// for during the running one, and the holder clears it and tries once
	// more before it lets go, so it is never left set.
	tryingBit = turnHeld
	// soloBit is set only by TryCompleteElseWatch's last settle, in the
	// compare-and-swap that clears tryingBit, for an operation watched
	// under one key; every later move keeps it but an outcome's (kept).
	// While it is set and tryingBit is not, only the key's walk tries the
	// operation, without the try bit (the steps at Op).
	soloBit int32 = 0x40
	// lockerBit is set by bind, before any try, if Op.Locker is set, so
	// that a try reads nothing of Op but this word; every later move keeps
	// it but an outcome's (kept).
	lockerBit int32 = 0x80

	// kept are the bits a try leaves as they are when it lets go.
	kept = soloBit | lockerBit

	// withdrawn is the internal outcome of an operation whose
	// TryCompleteElseWatch was undone because TryComplete panicked. It ends
	// every later path like an outcome does; Outcome reports Pending.
	withdrawn = Outcome(outcomeBits)
)

// Outcome returns how the operation ended, or Pending. Inside OnComplete it
// tells which path ended the operation.
func (o *Op) Outcome() Outcome {
	if out := Outcome(o.state.Load() & outcomeBits); out != withdrawn {
		return out
	}
	return Pending
}

// ended reports whether the operation has an outcome (withdrawn included):
// its entries in the watch lists are dead.
func (o *Op) ended() bool { return o.state.Load()&outcomeBits != 0 }

// touch loads the cache line a try reads (Op's last word, and usually the
// embedding operation's first fields), so that a try soon after does not wait
// for memory. (An atomic load: the compiler keeps it.)
func (o *Op) touch() { o.state.Load() }

// untouched reports whether nothing has moved the state since the operation
// was made: bind's check that it has not ended (ForceComplete) already.
func (o *Op) untouched() bool { return o.state.Load() == int32(Pending) }

// markLocker records in the state that Op.Locker is set, so that a try need
// not read Locker's cache line. bind calls it, before any try.
func (o *Op) markLocker() { o.state.Or(lockerBit) }

// walkOnly reports whether only a walk of the operation's one key may try it
// now, without the try bit: solo is set, no try runs and it has not ended.
func (o *Op) walkOnly() bool {
	return o.state.Load()&(soloBit|tryingBit|outcomeBits) == soloBit
}

// claim makes outcome the operation's outcome if it has none yet, and reports
// whether it did. Exactly one claim per operation succeeds. The try bits are
// left for their holder to clear.
func (o *Op) claim(outcome Outcome) bool {
	for {
		s := o.state.Load()
		if s&outcomeBits != 0 {
			return false
		}
		if o.state.CompareAndSwap(s, s|int32(outcome)) {
			return true
		}
	}
}

// acquire takes the try bit and reports whether it did. If another goroutine
// holds it, acquire asks that goroutine for one more try and returns false; it
// also returns false if the operation has ended.
func (o *Op) acquire() bool { return o.state.take(outcomeBits) }

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
	var set int32
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
// meanwhile: then it keeps the bit and reports retry.
func (o *Op) settle(ok bool, set int32) (won, retry bool) {
	for {
		s := o.state.Load()
		switch {
		case s&outcomeBits != 0: // another path ended it during the try
			o.state.And(outcomeBits)
			return false, false
		case ok:
			if o.state.CompareAndSwap(s, int32(Completed)) {
				return true, false
			}
		default:
			if swapped, again := o.state.letGo(s, kept, set); swapped {
				return false, again
			}
		}
	}
}

// abandon lets go of the try bit after TryComplete panicked. With withdraw,
// it also claims the withdrawn outcome if no other path has ended the
// operation, and reports whether it did.
func (o *Op) abandon(withdraw bool) bool {
	for {
		s := o.state.Load()
		if s&outcomeBits != 0 {
			o.state.And(outcomeBits)
			return false
		}
		next := s & kept
		if withdraw {
			next = int32(withdrawn)
		}
		if o.state.CompareAndSwap(s, next) {
			return withdraw
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

// hold takes the try bit for TryCompleteElseWatch; ok is false if the
// operation has ended meanwhile (ForceComplete).
func (o *Op) hold(impl Operation) (t firstTries, ok bool) {
	ok = o.acquire()
	return firstTries{o, impl, ok}, ok
}

func (t *firstTries) check() bool { return t.o.check(t.impl) }

// conclude lets go of the try bit, trying once more for each try asked for
// meanwhile, and completes the operation if a try passed (ok is the last
// one's result); it reports whether it did.
func (t *firstTries) conclude(ok, solo bool) bool {
	won := t.o.tryHeld(t.impl, ok, solo)
	t.held = false
	if won {
		t.o.complete(t.impl, Completed)
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
