package purgatory

import (
	"fmt"

	"github.com/purgatory-go/purgatory/internal/sched"
)

// The two words the purgatory moves by compare-and-swap, whole: an
// operation's state (Op.state) and a key's walking word (watchList.walking).
// Each has a type of its own (int64 and walkWord, so that no move of one can
// take the other), every bit of both is in the two blocks below, every move
// of either is a pure function s → next in this file, tested against the
// table of moves (state_test.go), and no other file tests a bit. What the states mean to the
// rest of the purgatory is the block at Op (operation.go).
//
// Op.state:
//
//	 63                         18 17    14 13          10 9            6 5      4 3       0
//	+-----------------------------+--------+--------------+--------------+--------+---------+
//	|         generation          |  left  |     pins     |    flags     |  turn  | outcome |
//	+-----------------------------+--------+--------------+--------------+--------+---------+
//	                                        relay ending   bound recycler  again
//	                                        ctx armed      locker solo     held
//
// watchList.walking: the same turn, three flags of its own where an
// operation keeps its outcome, and the list's head where it keeps its flags:
//
//	 63                                                        6 5      4 3  2    1     0
//	+-----------------------------------------------------------+--------+--+----+------+-------+
//	|                            head                           |  turn  |  |all |relay |leveled|
//	+-----------------------------------------------------------+--------+--+----+------+-------+
//
// A turn is "one goroutine at a time, and nobody waits": held by whoever's
// turn it is; again, set by whoever wanted one meanwhile, so that the holder
// goes round once more before it lets go (Kafka 2.x's maybeTryComplete: a
// tryLock and a "try again" flag, in one word). An operation's turn is its try
// (one TryComplete at a time); a list's is its walk (one walk of a key at a
// time).

// walkWord is a key's walking word (watchList.walking), as its moves see it.
type walkWord int64

const (
	// listLeveled: lv's heap holds an operation waiting for a level. Set
	// and cleared under the shard's mutex.
	listLeveled walkWord = 1 << iota
	// listRelayed: lv.relayed holds solo uses whose outcome was left for
	// the walk (relay). Set under the shard's mutex by queueRelay, cleared
	// by whoever takes the queue.
	listRelayed
	// listAgainAll: a round was asked for by a walk that tries every
	// operation (CheckAndComplete, Advance), not only by hand-offs; set
	// only with wordAgain and cleared with it.
	listAgainAll
	_
	// wordHeld and wordAgain: the walk's turn, turnHeld and turnAgain of
	// the walking word (TestStateBits holds them at the same bits).
	wordHeld
	wordAgain
	wordTurn = wordHeld | wordAgain

	// listHeadShift: bits 6–63 of the walking word hold the list's head, how
	// many entries at the front of its array hand-offs passed and compacted
	// away (watchlist.go). Written only under the shard's mutex; the walks'
	// moves of the turn and the flags keep it, so it needs no word of its
	// own, and the list of an int key stays 64 bytes.
	listHeadShift = 6
	listLowBits   = walkWord(1)<<listHeadShift - 1
)

const (
	_ int64 = 1 << iota // bits 0–3: the outcome (outcomeBits)
	_
	_
	_
	// turnHeld: a goroutine holds the turn. On an operation: it runs
	// TryComplete, and only it lets go (settle, abandon), even after
	// another path has left an outcome (left). On a list: a walk reads its
	// entries, and only it lets go (leave).
	turnHeld
	// turnAgain: a turn was asked for while held; set only while turnHeld
	// is, and cleared only by the holder, who goes round once more.
	turnAgain
	// soloBit (bits 6–63 of the walking word: its head, listHeadShift):
	// watched under one key, and TryCompleteElseWatch has let go
	// of its tries: only that key's walk tries the use, without the try
	// bit (the steps at Op.relay). Set by TryCompleteElseWatch's last
	// settle, in the move that lets go of the try bit; kept until the next
	// use.
	soloBit
	// lockerBit: Op.Locker was set at bind, so a try takes it. Set by bind.
	lockerBit
	// recyclerBit: the operation is a Recycler; its Recycle runs once the
	// use is over. Set by bind.
	recyclerBit
	// boundBit: a TryCompleteElseWatch took the operation (Op.core is
	// set); never cleared. A state without it and not zero is an operation
	// ended by ForceComplete before it was ever added.
	boundBit
	// The pins: while one is set something of the use may still run, and
	// the operation may not be used again. Each is set once per use and
	// cleared once (unpinMove panics on a second clear), by whoever knows
	// its part is over; the clear that leaves none makes the use over.
	//
	// armedBit: the timeout may be armed and fire. Set by bind, for a use
	// with a timeout on the wheel (before armTimer arms it) and for a
	// parked one (whose waiter times it); cleared, as Op.timing says, when
	// detach finds nothing armed, when a Stop prevents the fire, at the
	// end of the fire (expire), or when the parked waiter leaves.
	armedBit
	// ctxBit: the context's callback may run. Set by watchContext before
	// it registers it; cleared when its stop prevents it, or at the end of
	// the callback (contextDone).
	ctxBit
	// endingBit: the use has its outcome, and its winner is detaching it
	// and running its callbacks. Set in the move that sets the outcome;
	// cleared by complete (or withdraw) once they have returned.
	endingBit
	// relayBit: a claim left its outcome on a solo use and relays it to
	// the walk of its key (relay.go). Set in that claim's move; cleared by
	// the relay once it has read Op.first and handed the use on or ended
	// it. A ForceComplete (or an entry's path: Close, CancelForKey,
	// ForceCompleteForKey) holds no other pin: without this one the use
	// could end by a walk, be recycled and be added again while its relay
	// reads Op.first, which the next use's watch writes.
	relayBit
	// leftLow is bits 14–17: an outcome left for the try under way (a
	// timeout, ForceComplete, a context, Close, CancelForKey or
	// ForceCompleteForKey that met a try). Set only on a pending use that
	// a try holds, or a solo one; the try applies it at its first "no" or
	// drops it when it passes (Completed wins).
	leftLow
	_
	_
	_
	// genLow is bits 18–63: the use's generation. bind adds one for each
	// use after the first; no other move changes it. A watch-list entry
	// carries the generation it was made for, and is stale, dead to every
	// walk, once the operation has moved on. It wraps after 2^46 uses of
	// one operation, 81 days at one use per 100 ns (the quickest a use
	// can be), and an entry lives only until its list is next walked or
	// compacted.
	genLow
)

const (
	// outcomeBits, bits 0–3 of Op.state, hold the use's Outcome; 0 is
	// Pending. Set once per use, by the one move that ends it (claimMove,
	// settleMove, soloMove, applyMove, abandonMove); only the next bind
	// clears them.
	outcomeBits int64 = 0xf
	turnBits          = turnHeld | turnAgain
	pins              = armedBit | ctxBit | endingBit | relayBit
	leftShift         = 14
	leftBits          = outcomeBits << leftShift
	genShift          = 18
	genBits     int64 = -1 << genShift

	// withdrawn is the internal outcome of a use whose TryCompleteElseWatch
	// was undone because TryComplete panicked (abandonMove). It ends the
	// use as an outcome does; Outcome reports Pending.
	withdrawn = Outcome(outcomeBits)
)

// The invariants every state holds; the moves panic on a state that breaks
// one (impossible):
//
//	I1 an outcome has no try and nothing left: outcome ≠ 0 ⇒ turn = 0, left = 0
//	I2 again only while held: again ⇒ held
//	I3 an outcome is left only for a try: left ≠ 0 ⇒ outcome = 0, held or solo
//	I4 ending only with an outcome: ending ⇒ outcome ≠ 0

// The moves, from → to, and who makes them. g is the use's generation; a
// path that reaches the use through a watch-list entry (a walk, Close,
// CancelForKey, ForceCompleteForKey) makes its move only if g is current.
//
//	from                  to                        who                                         function
//	zero                  bound|held|flags          TryCompleteElseWatch, the first use (bind)    bindMove
//	over                  gen+1|bound|held|flags    TryCompleteElseWatch, a later use (bind)      bindMove
//	pending               outcome|ending            a claim: ForceComplete, a timeout, a context, claimMove
//	                                                Close, CancelForKey, ForceCompleteForKey, Shed
//	pending|held          pending|held|left         a claim that meets a try                      claimMove
//	pending|solo          pending|solo|left|relay   a claim of a solo use                         claimMove
//	pending|solo|left     left|ending               that claimer, if no walk holds the key;       applyMove
//	                                                else the walk it relayed the use to
//	pending               pending|held              a walk (acquire)                              acquireMove
//	pending|held          pending|held|again        a walk that meets a try (acquire)             acquireMove
//	pending|held(|left)   Completed|ending          the holder: its try passed                    settleMove
//	pending|held|left     left|ending               the holder: its try said no                   settleMove
//	pending|held|again    pending|held              the holder: no, and try again                 settleMove
//	pending|held          pending(|solo)            the holder: no, and let go                    settleMove
//	pending|held(|left)   left|ending, withdrawn|ending or pending   the holder: TryComplete panicked   abandonMove
//	pending|solo(|left)   Completed|ending          the key's walk: its try passed                soloMove
//	pending|solo|left     left|ending               the key's walk: its try said no               soloMove
//	pending               pending|armed, |ctx       arming the timeout, tying the context         pinMove
//	…|pin                 …                         whoever's part of the use is over             unpinMove
//
// A use is over when it has an outcome and no pin; only unpinMove leaves it
// so (every move that sets an outcome sets ending too), so exactly one
// caller recycles it.
//
// The walking word:
//
//	free                  held                      a walk enters the list                        takeMove
//	held                  held|again(|all)          a walk that finds the list walked             takeMove
//	held|again(|all)      held                      the walk leaves: it goes round once more      leaveMove
//	held                  free                      the walk leaves                               leaveMove

// gen is a use's generation, as a watch-list entry carries it.
type gen uint64

func genOf(s int64) gen           { return gen(uint64(s) >> genShift) }
func outcomeOf(s int64) Outcome   { return Outcome(s & outcomeBits) }
func leftOf(s int64) Outcome      { return Outcome(s & leftBits >> leftShift) }
func leaving(out Outcome) int64   { return int64(out) << leftShift }
func pending(s int64) bool        { return s&(outcomeBits|leftBits) == 0 }
func ended(s int64) bool          { return s&outcomeBits != 0 }
func over(s int64) bool           { return ended(s) && s&pins == 0 }
func endedWith(out Outcome) int64 { return int64(out) | endingBit }
func bound(s int64) bool          { return s&boundBit != 0 }
func armed(s int64) bool          { return s&armedBit != 0 }

// impossible is the panic of a move that meets a state breaking an
// invariant, which only a bug in this package can make. (A value, not a
// message made at the panic site, so that the moves stay small enough to
// inline into their loops.)
type impossible struct {
	what  string
	state int64
}

func (e impossible) Error() string {
	return fmt.Sprintf("purgatory: internal error: %s (state %#x); please report it", e.what, e.state)
}

// mustHoldTry panics unless a try holds the use in state s, pending (I1).
func mustHoldTry(s int64) {
	if s&(turnHeld|outcomeBits) != turnHeld {
		panic(impossible{"a try bit let go while not held, or an outcome set under a try", s})
	}
}

// bindResult is how bindMove found the operation.
type bindResult uint8

const (
	bindFresh  bindResult = iota // its first use, started
	bindReused                   // a later use, started
	bindEnded                    // ended by ForceComplete before it was ever added
	bindInUse                    // pending: still in a use, or being passed on another goroutine
	bindBusy                     // its last use has ended and is not over
)

// bindMove starts the operation's next use with the bits of set (its flags,
// and the try bit that TryCompleteElseWatch holds from here).
func bindMove(s, set int64) (int64, bindResult) {
	switch {
	case s == 0:
		return boundBit | set, bindFresh
	case s&boundBit == 0:
		return s, bindEnded
	case !ended(s):
		return s, bindInUse
	case !over(s):
		return s, bindBusy
	}
	return s&genBits + genLow | boundBit | set, bindReused // the generation wraps (genLow)
}

// claimed is what claimMove did.
type claimed uint8

const (
	claimLost     claimed = iota // use g had ended, or has an outcome left already: no change
	claimEnded                   // ended: the claimer completes it
	claimLeftTo                  // left for the try under way, whose holder ends the use
	claimLeftSolo                // left on a solo use: the claimer applies it or hands it to the key's walk
)

// claimMove ends use g with outcome, or, if a try holds it or it is solo,
// leaves outcome for the try.
func claimMove(s int64, g gen, outcome Outcome) (int64, claimed) {
	switch {
	case !pending(s) || genOf(s) != g:
		return s, claimLost
	case s&turnHeld != 0:
		return s | leaving(outcome), claimLeftTo
	case s&soloBit != 0:
		return s | leaving(outcome) | relayBit, claimLeftSolo
	}
	return s | endedWith(outcome), claimEnded
}

// applyMove ends use g with the outcome left for it, if it has one and no try
// holds it; it returns that outcome, or Pending for no change.
func applyMove(s int64, g gen) (int64, Outcome) {
	out := leftOf(s)
	if out == Pending || genOf(s) != g || s&turnHeld != 0 {
		return s, Pending
	}
	return s&^leftBits | endedWith(out), out
}

// acquired is what acquireMove did.
type acquired uint8

const (
	acquireTaken  acquired = iota // the caller holds the try bit
	acquirePassed                 // use g has ended or moved on, or its holder was asked to try again
	acquireLeft                   // a solo use with an outcome left: the walk applies it
)

// acquireMove takes the try bit of use g; if another goroutine holds it, it
// asks that goroutine to try once more.
func acquireMove(s int64, g gen) (int64, acquired) {
	switch {
	case ended(s) || genOf(s) != g:
		return s, acquirePassed
	case s&turnHeld != 0:
		return s | turnAgain, acquirePassed
	case s&leftBits != 0:
		return s, acquireLeft
	}
	return s | turnHeld, acquireTaken
}

// settled is how a try ended.
type settled uint8

const (
	settleLetGo     settled = iota // it said no: the try bit is let go (or, without it, nothing changed)
	settleWon                      // it passed: Completed, for the caller to complete
	settleApplied                  // it said no and an outcome was left: now the use's, for the caller to complete
	settleRetry                    // it said no and another try was asked for: the caller tries once more
	settleWithdrawn                // TryComplete panicked in TryCompleteElseWatch: the call is undone
)

// settleMove ends the holder's try, which returned ok: Completed if it
// passed, else the outcome left meanwhile, else another try if one was asked
// for, else it lets go of the try bit, setting the bits of set.
func settleMove(s int64, ok bool, set int64) (int64, settled) {
	mustHoldTry(s)
	out, r := leftOf(s), settleApplied
	if ok {
		out, r = Completed, settleWon
	}
	switch {
	case out != Pending:
		return s&^(turnBits|leftBits) | endedWith(out), r
	case s&turnAgain != 0:
		return s &^ turnAgain, settleRetry
	}
	return s&^turnHeld | set, settleLetGo
}

// abandonMove lets go of the try bit after TryComplete panicked: it applies
// an outcome left meanwhile, or, with withdraw, withdraws the use.
func abandonMove(s int64, withdraw bool) (int64, settled) {
	mustHoldTry(s)
	out, r := leftOf(s), settleApplied
	if out == Pending && withdraw {
		out, r = withdrawn, settleWithdrawn
	}
	if out == Pending {
		return s &^ turnBits, settleLetGo
	}
	return s&^(turnBits|leftBits) | endedWith(out), r
}

// soloMove ends the walk's try of solo use g, made without the try bit, which
// returned ok: Completed if it passed, else the outcome left meanwhile, else
// nothing changes. Nothing else can end a solo use while its walk tries it
// (the steps at Op.relay).
func soloMove(s int64, g gen, ok bool) (int64, settled) {
	if s&(outcomeBits|turnHeld) != 0 || s&soloBit == 0 || genOf(s) != g {
		panic(impossible{"a solo use changed under its walk's try", s})
	}
	switch {
	case ok:
		return s&^leftBits | endedWith(Completed), settleWon
	case s&leftBits != 0:
		return s&^leftBits | endedWith(leftOf(s)), settleApplied
	}
	return s, settleLetGo
}

// pinMove sets pin, the timeout's or the context's, on a pending use, and
// reports whether it did. (The ending pin comes with the outcome.)
func pinMove(s, pin int64) (int64, bool) {
	switch {
	case pin&^(armedBit|ctxBit) != 0 || pin == 0:
		panic(impossible{"a pin set other than the timeout's or the context's", s})
	case !pending(s):
		return s, false
	case s&pin != 0:
		panic(impossible{"a pin set twice", s})
	}
	return s | pin, true
}

// unpinMove clears pin, which must be set.
func unpinMove(s, pin int64) int64 {
	if s&pin != pin {
		panic(impossible{"a pin released twice", s})
	}
	return s &^ pin
}

// step is what a walk does with an entry, by its use's state.
type step uint8

const (
	stepSolo    step = iota // try it without the try bit: it is solo and pending
	stepDead                // pass it: use g has ended or moved on
	stepApply               // apply the outcome left on the solo use
	stepAcquire             // take the try bit (acquire)
)

// walkStep is what a walk of the key does with an entry of use g.
func walkStep(s int64, g gen) step {
	switch {
	case s&(soloBit|turnHeld|outcomeBits|leftBits) == soloBit && genOf(s) == g:
		return stepSolo // first: the walk's commonest case
	case ended(s) || genOf(s) != g:
		return stepDead
	case s&leftBits != 0 && s&turnHeld == 0: // solo, by I3
		return stepApply
	}
	return stepAcquire
}

// takeMove is a walk's take of a list's turn; if another walk holds it, the
// walk asks it to go round once more, over every operation (all) or as a
// hand-off.
func takeMove(s walkWord, all bool) (walkWord, bool) {
	if s&wordHeld == 0 {
		return s | wordHeld, true
	}
	if all {
		return s | wordAgain | listAgainAll, false
	}
	return s | wordAgain, false
}

// leaveMove is the walk's leaving of the list: if another round was asked
// for, it keeps the turn and reports again (and all, if a walk that tries
// every operation asked); otherwise it lets go.
func leaveMove(s walkWord) (next walkWord, again, all bool) {
	switch {
	case s&wordHeld == 0:
		panic(impossible{"a walk let go of a list it did not hold", int64(s)})
	case s&wordAgain != 0:
		return s &^ (wordAgain | listAgainAll), true, s&listAgainAll != 0
	}
	return s &^ wordHeld, false, false
}

// The moves' compare-and-swap loops, each on the word it moves. A loop whose
// move changes nothing returns without a write.
//
// Every access to either word goes through load and cas (word, casWord,
// orWord and andWord for the walking word). Each load is a scheduling point
// of the interleaving checker (internal/sched), so that the checker can run
// another goroutine before any access; in a normal build the points are
// nothing. A loop's compare-and-swap is not one: the loop is one atomic
// read-modify-write of the word, which takes effect at its successful
// compare-and-swap, and the checker runs it as one step from its load (a
// failed compare-and-swap only goes round again). orWord and andWord, each
// a read-modify-write of its own, are points.

func (o *Op) load() int64 {
	sched.At("state")
	return o.state.Load()
}

func (o *Op) cas(s, next int64) bool { return o.state.CompareAndSwap(s, next) }

func (l *watchList[K]) word() walkWord {
	sched.At("walking word")
	return walkWord(l.walking.Load())
}

func (l *watchList[K]) casWord(s, next walkWord) bool {
	return l.walking.CompareAndSwap(int64(s), int64(next))
}

func (l *watchList[K]) orWord(bits walkWord) {
	sched.At("walking or")
	l.walking.Or(int64(bits))
}

func (l *watchList[K]) andWord(bits walkWord) {
	sched.At("walking and")
	l.walking.And(int64(bits))
}

// bindState starts the operation's next use with the bits of set (bind), and
// returns the state it left: the new use's, if it started one.
func (o *Op) bindState(set int64) (bindResult, int64) {
	for {
		s := o.load()
		next, r := bindMove(s, set)
		if next == s || o.cas(s, next) {
			return r, next
		}
	}
}

// claim ends the current use with outcome, or leaves it for the try
// (claimMove); it returns the use's generation with the verdict.
func (o *Op) claim(outcome Outcome) (claimed, gen) {
	for {
		s := o.load()
		next, r := claimMove(s, genOf(s), outcome)
		if next == s || o.cas(s, next) {
			return r, genOf(s)
		}
	}
}

// claimAt is claim for use g only: an entry's path, which must not end a
// later use.
func (o *Op) claimAt(g gen, outcome Outcome) claimed {
	for {
		s := o.load()
		next, r := claimMove(s, g, outcome)
		if next == s || o.cas(s, next) {
			return r
		}
	}
}

// apply ends use g with the outcome left for it (applyMove), and returns it;
// Pending if another path applied it first, or the try passed.
func (o *Op) apply(g gen) Outcome {
	for {
		s := o.load()
		next, out := applyMove(s, g)
		if next == s || o.cas(s, next) {
			return out
		}
	}
}

// acquire takes the try bit of use g (acquireMove).
func (o *Op) acquire(g gen) acquired {
	for {
		s := o.load()
		next, r := acquireMove(s, g)
		if next == s || o.cas(s, next) {
			return r
		}
	}
}

// settle ends the holder's try (settleMove), and returns the outcome it set.
func (o *Op) settle(ok bool, set int64) (settled, Outcome) {
	for {
		s := o.load()
		next, r := settleMove(s, ok, set)
		if o.cas(s, next) {
			return r, outcomeOf(next)
		}
	}
}

// abandon lets go of the try bit after TryComplete panicked (abandonMove), and
// returns the outcome it set.
func (o *Op) abandon(withdraw bool) (settled, Outcome) {
	for {
		s := o.load()
		next, r := abandonMove(s, withdraw)
		if o.cas(s, next) {
			return r, outcomeOf(next)
		}
	}
}

// soloTried ends the walk's try of solo use g (soloMove), and returns the
// outcome it set.
func (o *Op) soloTried(g gen, ok bool) (settled, Outcome) {
	for {
		s := o.load()
		next, r := soloMove(s, g, ok)
		if next == s || o.cas(s, next) {
			return r, outcomeOf(next)
		}
	}
}

// pin sets pin on the use if it is pending, and reports whether it did.
func (o *Op) pin(pin int64) bool {
	for {
		s := o.load()
		next, ok := pinMove(s, pin)
		if next == s || o.cas(s, next) {
			return ok
		}
	}
}

// unpin clears pin, which the caller set or inherited, and recycles the use
// if that leaves it over.
func (o *Op) unpin(pin int64) {
	if next := o.unpinned(pin); over(next) {
		o.recycle(next)
	}
}

// unpinned clears pin, as unpin, and returns the state it left, for the
// caller to recycle if it is over.
func (o *Op) unpinned(pin int64) int64 {
	for {
		s := o.load()
		next := unpinMove(s, pin)
		if o.cas(s, next) {
			return next
		}
	}
}

// lockedIn reports whether a use in state s takes Op.Locker for its tries.
func lockedIn(s int64) bool { return s&lockerBit != 0 }

// relayedIn reports whether a walking word w has uses handed to its walk.
func relayedIn(w walkWord) bool { return w&listRelayed != 0 }

// recycle ends a use the purgatory is done with, s its state once over: its
// Recycle runs, if the operation is a Recycler and the use was a real one
// (not withdrawn), unless its parked waiter waits to run it (park.go, rule
// 6), which it then wakes.
func (o *Op) recycle(s int64) {
	if pk := o.parked(); pk != nil && pk.handOver(s) {
		return
	}
	o.recycleHere(s)
}

// recycleHere is recycle on the caller's goroutine.
func (o *Op) recycleHere(s int64) {
	if s&recyclerBit != 0 && outcomeOf(s) != withdrawn {
		o.impl.(Recycler).Recycle()
	}
}

// Reads of the state.

// parkedOn reports whether use g is current and its parked waiter has not
// let go of it (park.go: the waiter holds the timeout's pin until it leaves).
func (o *Op) parkedOn(g gen) bool {
	s := o.load()
	return genOf(s) == g && s&armedBit != 0
}

// Outcome returns how the operation's last use ended, or Pending. Inside
// OnComplete it tells which path ended it.
func (o *Op) Outcome() Outcome {
	if out := outcomeOf(o.load()); out != withdrawn {
		return out
	}
	return Pending
}

// gen returns the current use's generation.
// Only the use's own paths call it, while the use cannot end and be used
// again (under the try bit, or holding the ending pin): the generation
// changes only at bind, so the read needs no scheduling point.
func (o *Op) gen() gen { return genOf(o.state.Load()) }

// decided reports whether the current use has an outcome or one left for its
// try: nothing need attach to it any more.
func (o *Op) decided() bool { return !pending(o.load()) }

// live reports whether use g is the operation's current use and has no
// outcome: an entry made for g is live. A stale entry (an earlier use) is
// dead.
func (o *Op) live(g gen) bool {
	s := o.load()
	return !ended(s) && genOf(s) == g
}

// touch loads the cache line a try reads (Op's last word, and usually the
// embedding operation's first fields), so that a try soon after does not wait
// for memory. (An atomic load: the compiler keeps it.)
func (o *Op) touch() { o.state.Load() } // no point: only a prefetch

// locked reports whether a try takes Op.Locker.
// The bit is set at bind and kept for the use: the read needs no scheduling
// point.
func (o *Op) locked() bool { return lockedIn(o.state.Load()) }

// The walking word's loops and reads.

// take takes the list's turn for a walk, or asks the walk under way for
// another round (all: over every operation), and reports whether it took it.
func (l *watchList[K]) take(all bool) bool {
	for {
		s := l.word()
		next, took := takeMove(s, all)
		if next == s || l.casWord(s, next) {
			return took
		}
	}
}

// letGo is the walk's leaving of the list (leaveMove).
func (l *watchList[K]) letGo() (again, all bool) {
	for {
		s := l.word()
		next, again, all := leaveMove(s)
		if l.casWord(s, next) {
			return again, all
		}
	}
}

// walked reports whether a walk holds the list.
func (l *watchList[K]) walked() bool { return l.word()&wordHeld != 0 }

// leveled reports whether lv's heap holds a waiting operation.
// Its bit is written under the shard's mutex, which its readers hold or
// which a compaction it prompts takes: the read needs no scheduling point.
func (l *watchList[K]) leveled() bool { return walkWord(l.walking.Load())&listLeveled != 0 }

// setLeveled records whether lv's heap holds a waiting operation. The caller
// holds the shard's mutex.
func (l *watchList[K]) setLeveled(on bool) {
	if on {
		l.orWord(listLeveled)
	} else {
		l.andWord(^listLeveled)
	}
}

// relayedAny reports whether uses wait in lv.relayed.
func (l *watchList[K]) relayedAny() bool { return relayedIn(l.word()) }

// setRelayed records whether uses wait in lv.relayed. The caller holds the
// shard's mutex.
func (l *watchList[K]) setRelayed(on bool) {
	if on {
		l.orWord(listRelayed)
	} else {
		l.andWord(^listRelayed)
	}
}

// restingWord reports whether w is a walking word with no walk under way and
// nothing relayed: the state a list rests in.
func restingWord(w walkWord) bool { return w&listLowBits&^listLeveled == 0 }

// head returns the list's head. The caller holds the shard's mutex.
// The head is written only under that mutex: the read needs no scheduling
// point.
func (l *watchList[K]) head() int { return int(walkWord(l.walking.Load()) >> listHeadShift) }

// setHead sets the list's head, keeping the turn and the flags that walks
// move meanwhile. The caller holds the shard's mutex.
func (l *watchList[K]) setHead(h int) {
	for {
		s := walkWord(l.walking.Load()) // the head bits are the mutex holder's; the walks' bits, kept, commute
		next := withHead(s, h)
		if next == s || l.casWord(s, next) {
			return
		}
	}
}

// withHead is the walking word s with head h.
func withHead(s walkWord, h int) walkWord { return s&listLowBits | walkWord(h)<<listHeadShift }
