package purgatory

// A try: TryComplete, run under the use's try bit (or, for a solo use, under
// its key's walk), settled by the one settle loop, and abandoned if it
// panics; and TryCompleteElseWatch's own hold of the try bit, from bind to
// its last settle (firstTries).

// runTry runs TryComplete, under Op.Locker if one is set. The caller holds the
// try bit, or walks the key of a solo use.
func (o *Op) runTry(impl Operation) bool {
	if o.locked() {
		return o.runTryLocked(impl)
	}
	return impl.TryComplete()
}

func (o *Op) runTryLocked(impl Operation) bool {
	l := o.Locker
	if l == nil { // cleared after TryCompleteElseWatch, which its doc forbids
		return impl.TryComplete()
	}
	l.Lock()
	defer l.Unlock()
	return impl.TryComplete()
}

// tryHeld settles a try whose TryComplete returned ok, and tries again, for
// as long as others ask for another try and nothing was left for it; it
// returns how the last try settled and the outcome it set (Completed, an
// outcome left, or Pending), for the caller to complete, and that try's
// answer. The try bit is let go either way, setting the bits of set. If
// TryComplete panics, the caller still holds the try bit and must abandon it.
// It is the one settle loop: the walks and TryCompleteElseWatch all end their
// tries here.
func (o *Op) tryHeld(impl Operation, ok bool, set int64) (settled, Outcome, bool) {
	for {
		r, out := o.settle(ok, set)
		if r != settleRetry {
			return r, out, ok
		}
		ok = o.runTry(impl)
	}
}

// abandonTry lets go of the try bit after TryComplete panicked, and completes
// the use with an outcome left for the try meanwhile (or, with withdraw,
// withdraws it): nothing left for a try is lost to a panic.
func (o *Op) abandonTry(impl Operation, withdraw bool) {
	switch r, out := o.abandon(withdraw); r {
	case settleApplied:
		o.complete(impl, out)
	case settleWithdrawn:
		o.withdraw()
	}
}

// firstTries is TryCompleteElseWatch's hold of the try bit, from bind to its
// last settle: no other try of the operation runs in between.
type firstTries struct {
	o    *Op
	impl Operation
	held bool
}

func (t *firstTries) try() bool { return t.o.runTry(t.impl) }

// conclude lets go of the try bit, trying once more for each try asked for
// meanwhile, and completes the operation: Completed if a try passed (ok is the
// last one's answer), or with an outcome left for the tries. It reports
// whether it completed it.
func (t *firstTries) conclude(ok, solo bool) bool {
	var set int64
	if solo {
		set = soloBit
	}
	r, out, _ := t.o.tryHeld(t.impl, ok, set)
	t.held = false
	if r == settleWon || r == settleApplied {
		t.o.complete(t.impl, out)
	}
	return r == settleWon
}

// giveUp ends the tries with outcome and no try more: it leaves outcome for
// them (or keeps an outcome left already) and concludes with "no", which
// applies it.
func (t *firstTries) giveUp(outcome Outcome) {
	t.o.claim(outcome)
	t.conclude(false, false)
}

// undo, deferred, abandons the try bit if TryComplete panicked while it was
// held: the operation is withdrawn (nothing stays watched, armed or counted),
// unless an outcome was left for the try meanwhile, which then ends it.
func (t *firstTries) undo() {
	if t.held {
		t.held = false
		t.o.abandonTry(t.impl, true)
	}
}
