package purgatory

// The try protocol. An operation's state word holds its Outcome in the low
// bits and two more bits: trying, held by the one goroutine running
// TryComplete, and again, set by anyone who asks for a try meanwhile. Whoever
// holds trying tries once more before it lets go if again is set, so a
// completion event that lands during a try is never missed, and nobody ever
// waits: a TryComplete that calls CheckAndComplete on its own key (or a second
// goroutine checking the same operation) only sets again and moves on. This is
// Kafka 2.x's maybeTryComplete (a tryLock plus a "try again" flag), with the
// flag and the lock in one word, which is all a try touches besides the user's
// own fields.
//
// One more bit spares most tries the try bit. solo is set as
// TryCompleteElseWatch lets go of the try bit for the last time, if it watched
// the operation under one key only. From then on nothing can try the operation
// but a walk of that key, and a key has one walk at a time (the walking bit
// of watchList.walk), so the walk tries it without the try bit: a failed try
// costs a load and the call, not two compare-and-swaps. A walk that read the
// state before solo was set may still take the try bit the usual way; letting
// go keeps solo.
//
// Lock order: the try bit (or a key's walk), then Op.Locker (if set), then
// Op.book, then a shard's mutex. No library lock is held while user code
// runs; the try bit and Op.Locker are, during TryComplete only, and a key's
// walk during the callbacks it runs (operation.go says why none is waited on).

const (
	outcomeBits int32 = 0x0f
	tryingBit   int32 = 0x10
	againBit    int32 = 0x20
	soloBit     int32 = 0x40
	lockerBit   int32 = 0x80 // Op.Locker is set (bind): check takes it

	// kept are the bits a try leaves as they are when it lets go.
	kept = soloBit | lockerBit

	// withdrawn is the internal outcome of an operation whose
	// TryCompleteElseWatch was undone because TryComplete panicked. It ends
	// every later path like an outcome does; Outcome reports Pending.
	withdrawn = Outcome(outcomeBits)
)

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
func (o *Op) acquire() bool {
	for {
		s := o.state.Load()
		switch {
		case s&outcomeBits != 0:
			return false
		case s&tryingBit == 0:
			if o.state.CompareAndSwap(s, s|tryingBit) {
				return true
			}
		case s&againBit != 0:
			return false // already asked
		default:
			if o.state.CompareAndSwap(s, s|againBit) {
				return false
			}
		}
	}
}

// check runs TryComplete, under Op.Locker if one is set. The caller holds the
// try bit.
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

// settle ends a try whose TryComplete returned ok; the caller holds the try
// bit. If ok, it claims Completed and reports won. Otherwise it lets go of the
// try bit, setting the bits in set (soloBit, or none), unless another try was
// asked for meanwhile: then it keeps the bit and reports retry, and the caller
// must check again and settle again.
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
		case s&againBit != 0:
			if o.state.CompareAndSwap(s, s&^againBit) {
				return false, true
			}
		default:
			if o.state.CompareAndSwap(s, s&kept|set) {
				return false, false
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

// tryHeld settles a try whose TryComplete returned ok, and tries again, for
// as long as others ask for another try, until one passes or nobody asks; it
// reports whether it claimed the completion. Either way the try bit is let
// go, setting the bits in set. If TryComplete panics, the caller still holds
// the try bit and must abandon it. It is the one settle loop:
// CheckAndComplete's walk and TryCompleteElseWatch both end their tries here.
func (o *Op) tryHeld(impl Operation, ok bool, set int32) bool {
	for {
		won, retry := o.settle(ok, set)
		if !retry {
			return won
		}
		ok = o.check(impl)
	}
}
