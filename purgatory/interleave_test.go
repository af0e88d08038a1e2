package purgatory

import (
	"fmt"
	"hash/maphash"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The interleaving checker (issue 49, item 1): every interleaving of a few
// paths over one operation watched under one key or two, each path a
// sequence of atomic steps, the states visited hashed. The moves of the two words are
// state.go's own pure functions, called through movesTable so that the
// mutation test can swap in faulty ones; the steps around them (a mutex
// section, a load, a try, the callbacks) are modelled here, each named after
// the function it mirrors. A step is atomic where the code's is: one
// compare-and-swap loop's winning iteration, one load, or one critical
// section whose only shared access is under its mutex (the shard mutex is
// held across queueRelay's two, so it is a lock of the model's own), or a
// read of fields that nothing writes meanwhile (detach's, relay's of
// Op.first: the model checks who wrote them). The model's waits are steps not enabled, so a step that
// changes nothing is a fault of the model, and fails.
//
// Modelled (one operation, its uses 0 and 1, under key A, or A and B, when
// its use is never solo and every walk takes its try bit):
// TryCompleteElseWatch (bind, the first try, watch, the second try, arming the timeout and the
// context, conclude: purgatory.add, tryElseWatch, armTimer, watchContext,
// and its two looks at Purgatory.closed); a walk over every operation
// (CheckAndComplete) and a hand-off (HandOff) (walkKey, tryWalk.run,
// tryEach, try, trySolo, leave, takeRelayed); the timeout's fire (expire)
// and the context's callback (contextDone); ForceComplete; CancelForKey and
// ForceCompleteForKey (remove, which takes the key's list out of the map and
// leaves a walk the old one, then endAt of each entry); Close (closed, then
// endAt of each entry); the relay of a solo use's outcome to a walk (relay,
// queueRelay, applyRelayed); complete (detach, the callbacks, finish); a
// second use that starts once the first is recycled, met by a stale entry of
// the first; and a parked use (TryCompleteElsePark, then Parked.Wait: its
// token, its own timer's claim by generation, its leave); and, where a
// scenario asks, tries that panic (firstTries.undo and tryWalk.unwind:
// abandonTry, withdraw); and a use watched at a level the key has not
// reached, in the key's heap, tried only by CheckAndComplete until an
// Advance reaches it (linkAt, reach, walkable); and each list's count and
// compaction (watchList.count, link's add, detach's drops, drop's compact
// unless a walk holds the list, a walk's leave reading the count after it
// lets go, tidy, compactFront, a hand-off's trimFront, remove's zeroed
// count), with ListsAtRest's count and crowding checked in every state no
// path can leave. Not yet: Locker, Shed, the shard's sweep and its empty
// count, more than two keys, and more than one operation.

// movesTable is the moves the model makes, state.go's unless a test swaps
// one for a fault.
type movesTable struct {
	bind    func(s, set int64) (int64, bindResult)
	claim   func(s int64, g gen, out Outcome) (int64, claimed)
	apply   func(s int64, g gen) (int64, Outcome)
	acquire func(s int64, g gen) (int64, acquired)
	settle  func(s int64, ok bool, set int64) (int64, settled)
	abandon func(s int64, withdraw bool) (int64, settled)
	solo    func(s int64, g gen, ok bool) (int64, settled)
	pin     func(s, pin int64) (int64, bool)
	unpin   func(s, pin int64) int64
	step    func(s int64, g gen) step
	take    func(s walkWord, all bool) (walkWord, bool)
	leave   func(s walkWord) (walkWord, bool, bool)
}

var stateMoves = movesTable{bindMove, claimMove, applyMove, acquireMove, settleMove, abandonMove, soloMove,
	pinMove, unpinMove, walkStep, takeMove, leaveMove}

// pathKind is what a path does.
type pathKind uint8

const (
	pAdd      pathKind = iota // TryCompleteElseWatch of use 0
	pReuse                    // TryCompleteElseWatch of use 1, once use 0 is recycled
	pCheck                    // CheckAndComplete
	pHandOff                  // HandOff
	pPushHand                 // an item pushed, then HandOff
	pForce                    // ForceComplete
	pTimeout                  // the timer's fire, whenever it is set
	pContext                  // the context's callback, once registered
	pPark                     // TryCompleteElsePark of use 0, then Parked.Wait, its own timer firing whenever
	pCancel                   // CancelForKey
	pForceKey                 // ForceCompleteForKey
	pClose                    // Close
	pAdvance                  // Advance to level 1: reach, then a walk of the entries
)

var pathNames = [...]string{"add", "reuse", "check", "handoff", "push+handoff", "force", "timeout", "context", "park", "cancel", "forcekey", "close", "advance"}

// The subroutines' first steps, shared by every path.
const (
	pcComplete  = 100 // complete(out) of use g, then retC
	pcApplyAll  = 110 // applyRelayed(work), then retA
	pcRelay     = 120 // relay of use g, its pin let go last (pcRelay+5), then retH
	pcDrop      = 130 // detach's drops of use g, one per list it was linked to, then complete's callbacks
	pcDone      = 250
	maxEntries  = 4
	noPath      = 0xff
	timerIdle   = 0
	timerSet    = 1
	timerFired  = 2
	timerStoped = 3
	// The context's callback (context.AfterFunc), as the timer.
	ctxNone       = 0
	ctxRegistered = 1
	ctxFired      = 2
	ctxStopped    = 3
)

// path is one goroutine of the model: where it is, and its locals.
type path struct {
	kind             pathKind
	pc               uint8
	g                gen // the use it works on
	ok, no, solo     bool
	handOff, armedAt bool
	ctxStop          bool // detach found Op.more.stopCtx
	won              bool // the add's try passed: TryCompleteElsePark returns done
	out              Outcome
	unpin            int64
	ops              [maxEntries]gen // a walk's round
	nops, next       uint8
	work             [maxEntries]gen // applyRelayed's
	nwork            uint8
	list             int8  // the list a walk holds, or a relay's
	key              uint8 // the key a walk, CancelForKey or ForceCompleteForKey is of
	linked           uint8 // keys the add has watched
	retC, retA, retH uint8
	drop             uint8 // detach's drops: the next of the use's lists
	nextAll          bool  // leave, again: the next round is over every operation
	counted, sawDead bool  // fault countBeforeLetGo: leave read the count before letting go, and what it saw
}

// useObs is what happened to one use.
type useObs struct {
	outcome                Outcome // set by the move that ended it
	onComplete, expiration uint8
	completedWith          Outcome
	passed                 bool  // a try returned true
	decided                uint8 // claims that decided the use (Op.end's true)
	decidedWith            Outcome
	recycled               uint8   // Recycle ran
	trying                 uint8   // the path whose try runs, + 1
	lists                  [2]int8 // the lists its watch linked it to (Op.first, Op.more.places), for detach's drops
	nlists                 uint8
}

// world is the model's whole state: comparable, so that visited states hash.
type world struct {
	state   int64        // Op.state
	lists   [3]listModel // the keys' lists: a removal (CancelForKey) leaves a walk the old one
	nlists  uint8        // lists made
	cur     [2]int8      // the list the shard's map holds for each key, or -1
	keys    uint8        // how many keys the operations watch: 1 (solo) or 2
	first   int8         // Op.first: the list watched, until the next use's bind; -1 for none
	firstBy gen          // the use whose bind or watch wrote Op.first last
	closed  bool         // Purgatory.closed
	shardMu uint8        // the path holding the shard's mutex, or noPath
	timer   uint8
	timing  timing // Op.timing: who lets go of the timeout's pin; written by bind and armTimer
	timedBy gen    // the use whose bind or armTimer wrote Op.timing last
	items   int8   // for deterministic tries: what a push made available
	choose  bool   // tries answer by choice (else by items)
	noTimer bool   // the operations have no timeout
	withCtx bool   // the operations have a context
	panics  bool   // a try may panic too (a third answer)
	leveled bool   // the add watches at level 1 (TryCompleteElseWatchAt)
	ctx     uint8
	stopCtx bool   // Op.more.stopCtx: set by watchContext, taken by detach
	pkUse   uint64 // parking.use: the parked use's generation + 1, or 0
	pkEnded uint8  // tokens in parking.ended (a buffer of one)
	fault   walkFault
	paths   [5]path
	np      uint8
	obs     [2]useObs
}

// listModel is one watch list of the key.
type listModel struct {
	word    walkWord // its walking word
	entries [maxEntries]gen
	nent    uint8
	heap    [maxEntries]gen // lv.levels: uses waiting for level 1, which the key has not reached
	nheap   uint8
	high    bool            // lv.high: the key has reached level 1
	relayed [maxEntries]gen // lv.relayed
	nhand   uint8
	n, dead int8 // watchList.count: entries and heap, and the dead among them (signed; exact at rest)
}

// walkable is what a walk of every operation reads: the entries, then the
// heap's.
func (l *listModel) walkable() ([maxEntries]gen, uint8) {
	ops, n := l.entries, l.nent
	for _, g := range l.heap[:l.nheap] {
		ops[n] = g
		n++
	}
	return ops, n
}

// walkFault is a fault of a walk's steps, for the mutation test: the
// model's walks follow the code unless one is set.
type walkFault uint8

const (
	noFault           walkFault = iota
	takeBeforeLeave             // the walk takes its relayed uses, then lets go, and takes none after
	goneTakesRelayed            // the walk takes relayed uses after it let go though another walk holds the list (the code before the checker)
	leaveWithoutClaim           // a parked waiter leaves without taking its use back from complete (pk.leave's compare-and-swap)
	relayWithoutPin             // a claim that relays a solo use pins nothing (the code before relayBit)
	detachClearsFirst           // detach clears Op.first with no lock, as it did under Op.book before that lock went (issue 49's cut)
	unarmedPinKept              // detach leaves the timeout's pin of a use whose timer was never armed, as if a fire would let go
	armWithoutTiming            // armTimer arms without recording timingWheel: detach lets go of the pin of a timer it did not stop
	skipsStop                   // detach skips the timer's Stop whatever the outcome, as it does for Expired
	leaveSkipsCount             // a walk lets go without reading the count: drops that found it walked left compacting to it
	dropIgnoresWalk             // a drop compacts without checking that no walk holds the list
	countBeforeLetGo            // a walk reads the count before it lets go: a drop between the two sees the list walked
)

// detachWrote is world.firstBy once detach has cleared Op.first (fault
// detachClearsFirst): no use's own.
const detachWrote = ^gen(0)

// violation is a check the model failed.
type violation string

func (w *world) fail(format string, args ...any) { panic(violation(fmt.Sprintf(format, args...))) }

// setState is every write of Op.state: it checks I1–I4 and records the
// outcome of the move that ended a use, once.
func (w *world) setState(next int64) {
	if err := invariants(next); err != nil {
		w.fail("%v", err)
	}
	prev := w.state
	w.state = next
	if genOf(next) != genOf(prev) {
		return
	}
	switch o := &w.obs[genOf(next)]; {
	case ended(prev) && outcomeOf(prev) != outcomeOf(next):
		w.fail("use %d's outcome changed from %v to %v", genOf(next), outcomeOf(prev), outcomeOf(next))
	case !ended(prev) && ended(next):
		o.outcome = outcomeOf(next)
	}
}

func (w *world) use(g gen) *useObs {
	if g > 1 {
		w.fail("use %d: the model has uses 0 and 1", g)
	}
	return &w.obs[g]
}

// enabled reports whether path i can take a step, and how many answers its
// step has (2 for a try by choice).
func (w *world) enabled(i int) (bool, int) {
	p := &w.paths[i]
	switch {
	case p.pc == pcDone:
		return false, 0
	case p.kind == pTimeout && p.pc == 0:
		return w.timer == timerSet, 1
	case p.kind == pContext && p.pc == 0:
		return w.ctx == ctxRegistered, 1
	case p.kind == pPark && (p.pc == 72 || p.pc == 81):
		return w.pkEnded > 0, 1
	case p.kind == pPark && p.pc == 71: // its timer may fire; a token may be there
		return true, 1 + int(w.pkEnded)
	case p.kind == pReuse && p.pc == 0:
		return w.obs[0].recycled > 0, 1
	case w.needsShard(p) && w.shardMu != noPath && int(w.shardMu) != i:
		return false, 0
	case isTry(p) && w.panics:
		return true, 3
	case isTry(p) && w.choose:
		return true, 2
	}
	return true, 1
}

// needsShard reports whether p's next step takes the shard's mutex.
func (w *world) needsShard(p *path) bool {
	switch p.pc {
	case pcRelay + 2, pcRelay + 3, pcDrop + 2:
		return true
	}
	switch p.kind {
	case pAdd, pReuse, pPark:
		return p.pc == 2
	case pCancel, pForceKey:
		return p.pc == 0
	case pClose:
		return p.pc == 1
	case pCheck, pHandOff, pPushHand, pAdvance:
		return p.pc == 0 || p.pc == 11 || p.pc == 22 || p.pc == 25 || p.pc == 27 || p.pc == 20 && w.fault == takeBeforeLeave
	}
	return false
}

// isTry reports whether p's next step runs TryComplete.
func isTry(p *path) bool {
	switch p.kind {
	case pAdd, pReuse, pPark:
		return p.pc == 1 || p.pc == 3 || p.pc == 6
	case pCheck, pHandOff, pPushHand, pAdvance:
		return p.pc == 2 || p.pc == 7
	}
	return false
}

// try is TryComplete of use g on path i: by choice, or by the items a push
// made available (it takes one). It checks that it is the use's only try
// and that the use has not ended.
func (w *world) try(i int, g gen, answer int) bool {
	o := w.use(g)
	switch {
	case o.trying != 0:
		w.fail("use %d tried by %s while %s tries it", g, pathNames[w.paths[i].kind], pathNames[w.paths[o.trying-1].kind])
	case genOf(w.state) == g && ended(w.state), genOf(w.state) != g:
		w.fail("use %d tried after it ended", g)
	case o.recycled > 0:
		w.fail("use %d tried after its Recycle", g)
	}
	if answer == 2 { // it panics: a try that ran and returned nothing
		return false
	}
	o.trying = uint8(i) + 1
	ok := answer == 1
	if !w.choose {
		ok = w.items > 0
		if ok {
			w.items--
		}
	}
	if ok {
		o.passed = true
	}
	return ok
}

// tried ends path i's try of use g.
func (w *world) tried(g gen) { w.use(g).trying = 0 }

// run takes path i's next step, with answer for a try.
func (w *world) run(i int, answer int) {
	p := &w.paths[i]
	if p.pc >= pcComplete {
		w.subroutine(i, p)
		return
	}
	switch p.kind {
	case pAdd, pReuse:
		w.add(i, p, answer)
	case pPark:
		if p.pc < 70 || p.pc == 90 || p.pc == 95 {
			w.add(i, p, answer)
		} else {
			w.park(p, answer)
		}
	case pCheck, pHandOff, pPushHand, pAdvance:
		w.walkStep(i, p, answer)
	case pForce:
		r, g := w.claimCurrent(Forced)
		w.end(p, r, g, Forced, pcDone)
	case pCancel, pForceKey, pClose:
		w.endWalk(p)
	case pTimeout:
		if p.pc == 0 {
			w.timer = timerFired
		}
		w.ownClaim(p, Expired, armedBit)
	case pContext:
		if p.pc == 0 {
			w.ctx = ctxFired
		}
		w.ownClaim(p, ContextDone, ctxBit)
	}
}

// endWalk is CancelForKey and ForceCompleteForKey (shards.remove, then
// endWalk.run: endAt of each entry), and Close (closed set, then each list's
// entries, under the shard's mutex, each ended Closed by endAt).
func (w *world) endWalk(p *path) {
	out := map[pathKind]Outcome{pCancel: Cancelled, pForceKey: Forced, pClose: Closed}[p.kind]
	switch p.pc {
	case 0:
		if p.kind == pClose {
			w.closed, p.pc = true, 1
			return
		}
		fallthrough
	case 1: // remove (the list leaves the map, keeping what was relayed to its walk), or each
		p.pc, p.nops, p.next = 2, 0, 0
		for k := range w.keys {
			if c := w.cur[k]; c >= 0 && (p.kind == pClose || k == p.key) {
				l := &w.lists[c]
				ops, n := l.walkable()
				for _, g := range ops[:n] {
					p.ops[p.nops] = g
					p.nops++
				}
				if p.kind != pClose {
					l.entries, l.nent, l.heap, l.nheap, w.cur[k] = [maxEntries]gen{}, 0, [maxEntries]gen{}, 0, -1
					l.n, l.dead = 0, 0 // count.Store(0): what its uses drop later counts for nothing
				}
			}
		}
	case 2: // endAt of the next entry
		if p.next == p.nops {
			p.pc = pcDone
			return
		}
		g := p.ops[p.next]
		p.next++
		next, r := stateMoves.claim(w.state, g, out)
		w.setState(next)
		w.end(p, r, g, out, 2)
	}
}

// ownClaim is the timeout's fire and the context's callback (expire,
// contextDone): endOwn(out), then their pin let go; the path then waits for
// the next use's.
func (w *world) ownClaim(p *path, out Outcome, pin int64) {
	switch p.pc {
	case 0:
		r, g := w.claimCurrent(out)
		w.end(p, r, g, out, 1)
	case 1:
		w.unpinAndRecycle(pin)
		p.pc = 0
	}
}

// claimCurrent is Op.claim: a claim of the current use.
func (w *world) claimCurrent(out Outcome) (claimed, gen) {
	next, r := stateMoves.claim(w.state, genOf(w.state), out)
	g := genOf(w.state)
	w.setState(next)
	return r, g
}

// end is Op.end: it acts on a claim's verdict, then goes on at ret.
func (w *world) end(p *path, r claimed, g gen, out Outcome, ret uint8) {
	p.g, p.out = g, out
	if r != claimLost { // end reports true: this claim decided the use
		o := w.use(g)
		if o.decided++; o.decided > 1 {
			w.fail("use %d decided by two claims: %v, then %v", g, o.decidedWith, out)
		}
		o.decidedWith = out
	}
	switch r {
	case claimEnded:
		p.retC, p.pc = ret, pcComplete
	case claimLeftSolo:
		p.retH, p.pc = ret, pcRelay
		if w.fault == relayWithoutPin {
			w.setState(w.state &^ relayBit)
		}
	default:
		p.pc = ret
	}
}

// unpinAndRecycle is Op.unpin: the use is recycled if that leaves it over.
func (w *world) unpinAndRecycle(pin int64) {
	next := stateMoves.unpin(w.state, pin)
	w.setState(next)
	if over(next) && next&recyclerBit != 0 && outcomeOf(next) != withdrawn { // Op.recycle
		o := w.use(genOf(next))
		if o.recycled++; o.recycled > 1 {
			w.fail("use %d recycled twice", genOf(next))
		}
	}
}

// add is TryCompleteElseWatch of one key (purgatory.add, tryElseWatch, firstTries).
func (w *world) add(i int, p *path, answer int) {
	switch p.pc {
	case 0: // bind
		set, t := turnHeld|recyclerBit, timingUnarmed
		switch {
		case p.kind == pPark:
			set, t = set|armedBit, timingParked // the waiter's pin (bind's pin)
		case !w.noTimer:
			set |= armedBit // the timeout's pin, with the bind (Op.timeoutPin)
		}
		next, r := stateMoves.bind(w.state, set)
		if r == bindEnded { // ForceComplete before it was ever added
			p.pc = pcDone
			return
		}
		if p.kind == pPark && r != bindFresh {
			w.fail("the model parks use 0 only")
		}
		if r != bindFresh && r != bindReused {
			w.fail("bind found use %d not over (%v)", genOf(w.state), r)
		}
		w.setState(next)
		p.g, p.pc = genOf(next), 9
		w.first, w.firstBy = -1, p.g // bind clears Op.first, which the last use's detach left
		w.timing, w.timedBy = t, p.g
		if p.kind == pPark {
			w.pkUse = uint64(p.g) + 1 // parked(g), the try bit held
		}
	case 9: // p.closed.Load(): no try after Close (giveUp)
		p.pc = 1
		if w.closed {
			r, _ := w.claimCurrent(Closed) // left for the first tries, which hold the try bit
			if r != claimLeftTo && r != claimLost {
				w.fail("Close's giveUp found its own use not held: %v", r)
			}
			p.ok, p.solo, p.pc = false, false, 5
		}
	case 1, 3, 6: // try.try(): the first, the one after watch, one asked for
		p.ok = w.try(i, p.g, answer)
		p.pc = map[uint8]uint8{1: 11, 3: 31, 6: 61}[p.pc]
		if answer == 2 {
			p.pc = 95 // TryComplete panicked: firstTries.undo
		}
	case 95: // undo: abandonTry(withdraw): an outcome left ends the use, else it is withdrawn
		next, r := stateMoves.abandon(w.state, true)
		w.setState(next)
		after := uint8(pcDone) // the panic goes on
		if p.kind == pPark {
			after = 80 // TryCompleteElsePark's deferred leave, without a token
		}
		p.out, p.retC, p.pc = outcomeOf(next), after, pcComplete // withdraw: complete without callbacks
		if r != settleApplied && r != settleWithdrawn {
			w.fail("abandon with withdraw left use %d pending (%v)", p.g, r)
		}
	case 61:
		w.tried(p.g)
		p.pc = 5
	case 90: // after conclude: if closed, endOwn(Closed)
		p.pc = pcDone
		if p.kind == pPark {
			p.pc = 70 // then TryCompleteElsePark's return, and Wait
		}
		if w.closed && !p.won {
			r, g := w.claimCurrent(Closed)
			w.end(p, r, g, Closed, p.pc)
		}
	case 11:
		w.tried(p.g)
		p.pc = 2
		if p.ok {
			p.pc = 5
		}
	case 2: // watch (shards.watchAt) of the next key, under the shard's mutex (Op.first written with no lock: mustHoldTry, and the relay's pin)
		w.mustHoldTry(p.g, "watch")
		k := p.linked
		if !pending(w.state) { // decided: eachDistinct stops
			p.solo, p.pc = p.linked == 1, 3
			return
		}
		if w.cur[k] < 0 { // a new list for the key
			if w.nlists == uint8(len(w.lists)) {
				w.fail("the model has %d lists", len(w.lists))
			}
			w.cur[k] = int8(w.nlists)
			w.nlists++
		}
		l := &w.lists[w.cur[k]]
		if w.leveled && !l.high { // linkAt: the level heap
			l.heap[l.nheap] = p.g
			l.nheap++
		} else {
			l.entries[l.nent] = p.g
			l.nent++
		}
		l.n++ // count.Add(oneEntry)
		o := w.use(p.g)
		o.lists[o.nlists] = w.cur[k]
		o.nlists++
		if w.first < 0 {
			w.first, w.firstBy = w.cur[k], p.g // Op.first; a second key's list is one of Op.more.places
		}
		if p.linked++; p.linked == w.keys {
			p.solo, p.pc = p.linked == 1, 3
		}
	case 31:
		w.tried(p.g)
		p.pc = 5
		if !p.ok {
			p.pc = 32
		}
	case 32: // !o.decided(): arm
		p.pc = 5
		switch {
		case !pending(w.state), p.kind == pPark: // a parked use arms nothing
		case !w.noTimer:
			p.pc = 4
		case w.withCtx:
			p.pc = 44
		}
	case 4: // armTimer: Op.timing, then timer.Reset (the pin is bind's)
		w.mustHoldTry(p.g, "armTimer")
		if w.fault != armWithoutTiming {
			w.timing, w.timedBy = timingWheel, p.g
		}
		w.timer, p.pc = timerSet, w.armCtx()
	case 44: // watchContext: the pin
		next, ok := stateMoves.pin(w.state, ctxBit)
		w.setState(next)
		p.pc = 5
		if ok {
			p.pc = 45
		}
	case 45: // context.AfterFunc
		w.ctx, p.pc = ctxRegistered, 46
	case 46: // Op.more.stopCtx kept for detach, which cannot run while the try bit is held
		w.mustHoldTry(p.g, "watchContext")
		w.stopCtx, p.pc = true, 5
	case 5: // conclude: tryHeld's settle
		set := int64(0)
		if p.solo {
			set = soloBit
		}
		next, r := stateMoves.settle(w.state, p.ok, set)
		w.setState(next)
		after := uint8(90) // the closed check after conclude
		p.won = r == settleWon
		switch r {
		case settleRetry:
			p.pc = 6
		case settleWon, settleApplied:
			p.out, p.retC, p.pc = outcomeOf(next), after, pcComplete
		default:
			p.pc = after
		}
	}
}

// park is the rest of TryCompleteElsePark and Parked.Wait (park.go): a use
// the add completed is left at once (leave, without a token); else the
// waiter selects on the token and its timer, claims use g by its
// generation when the timer fires, takes the token, and leaves.
func (w *world) park(p *path, answer int) {
	switch p.pc {
	case 70:
		p.pc = 71
		if p.won {
			p.pc = 80
		}
	case 71: // Wait's select
		if answer == 1 { // the token
			w.pkEnded--
			p.pc = 73
			return
		}
		next, r := stateMoves.claim(w.state, p.g, Expired) // the timer: endAt(g, Expired)
		w.setState(next)
		w.end(p, r, p.g, Expired, 72)
	case 72, 81: // <-pk.ended
		w.pkEnded--
		p.pc = map[uint8]uint8{72: 73, 81: 75}[p.pc]
	case 73: // Wait returns the outcome, its callbacks returned
		if o := w.use(p.g); o.completedWith == Pending || o.outcome != outcomeOf(w.state) || genOf(w.state) != p.g {
			w.fail("Wait returned %v before use %d's end had run (OnComplete %d times)", outcomeOf(w.state), p.g, o.onComplete)
		}
		p.pc = 75
	case 75: // leave: the pin
		w.unpinAndRecycle(armedBit)
		p.pc = pcDone
	case 80: // leave without a token: take the use back, or wait for complete's token
		p.pc = 81
		if w.fault == leaveWithoutClaim {
			p.pc = 75
			return
		}
		if w.pkUse == uint64(p.g)+1 {
			w.pkUse, p.pc = 0, 75
		}
	}
}

// crowded is watchList.crowded: its dead entries outnumber its live ones or,
// with a heap, are more than an eighth of them.
func (l *listModel) crowded() bool {
	return 8*int(l.dead) > int(l.n) && (2*int(l.dead) > int(l.n) || l.nheap > 0)
}

// live is entry.live: use g is the operation's current one, and pending.
func (w *world) live(g gen) bool { return genOf(w.state) == g && pending(w.state) }

// compact is compactLocked of list c: its dead entries out, the live ones
// kept in order (with all, the heap's too), the count less what it took.
// The caller holds the shard's mutex; the list is held by the walk that
// compacts it (byWalk), or by no walk: a walk reads its entries with no lock.
func (w *world) compact(c int8, all, byWalk bool) {
	l := &w.lists[c]
	if l.word&wordHeld != 0 && !byWalk {
		w.fail("list %d compacted while a walk reads its entries", c)
	}
	w.keepLive(l, &l.entries, &l.nent, l.nent)
	if all {
		w.keepLive(l, &l.heap, &l.nheap, l.nheap)
	}
}

// keepLive removes the dead among the first k of es[:*n], one of list l's
// parts, keeping the others in order, and takes them off l's count
// (watchList.removed).
func (w *world) keepLive(l *listModel, es *[maxEntries]gen, n *uint8, k uint8) {
	var kept [maxEntries]gen
	j := uint8(0)
	for i, g := range es[:*n] {
		if uint8(i) >= k || w.live(g) {
			kept[j] = g
			j++
		}
	}
	removed := int8(*n - j)
	*es, *n = kept, j
	l.n -= removed
	l.dead -= removed
}

// tidy is tidy, after a walk's round: a round over every operation compacts
// the list (the heap too if crowded), a hand-off's the dead among those it
// passed, then the whole list if crowded. The caller holds the shard's mutex
// and the walk, or has seen that no walk holds the list.
func (w *world) tidy(c int8, handOff bool, passed uint8) {
	l := &w.lists[c]
	switch {
	case l.dead <= 0:
	case !handOff:
		w.compact(c, l.crowded(), true)
	default:
		w.keepLive(l, &l.entries, &l.nent, min(passed, l.nent)) // compactFront
		if l.crowded() {
			w.compact(c, true, true)
		}
	}
}

// trimFront is trimFront: the dead entries before the first live one out.
// The caller holds the shard's mutex and has seen that no walk holds the
// list.
func (w *world) trimFront(c int8) {
	l := &w.lists[c]
	k := uint8(0)
	for k < l.nent && !w.live(l.entries[k]) {
		k++
	}
	w.keepLive(l, &l.entries, &l.nent, k)
}

// detachFirst is fault detachClearsFirst's detach of use g writing Op.first,
// which a relay of g may be reading: nothing orders the two, so a relay
// about to read it fails here, and one that reads it later fails at its
// read (pcRelay).
func (w *world) detachFirst(g gen) {
	for i := range w.np {
		if q := &w.paths[i]; q.pc == pcRelay && q.g == g {
			w.fail("use %d's detach writes Op.first while a relay of it reads it", g)
		}
	}
	w.first, w.firstBy = -1, detachWrote
}

// mustHoldTry checks the premise of watch and arm's attaching, and of
// detach's reading, with no lock: TryCompleteElseWatch holds use g's try
// bit, so the use cannot end, and detach, which follows an end, cannot run
// meanwhile.
func (w *world) mustHoldTry(g gen, what string) {
	if w.state&turnHeld == 0 || genOf(w.state) != g || ended(w.state) {
		w.fail("%s without the try bit of use %d: state %#x", what, g, w.state)
	}
}

// armCtx is where arm goes after the timer: watchContext, if the
// operation has a context.
func (w *world) armCtx() uint8 {
	if w.withCtx {
		return 44
	}
	return 5
}

// walkStep is a walk of the key (walkKey, tryWalk.run and tryEach, try,
// trySolo; leave; takeRelayed).
func (w *world) walkStep(i int, p *path, answer int) {
	switch p.pc {
	case 0: // a push's item, then enter
		if p.kind == pPushHand && p.nops == 0 && p.next == 0 && !p.no {
			w.items++
			p.no = true // pushed
			return
		}
		p.handOff, p.no = p.kind == pHandOff || p.kind == pPushHand, false
		p.pc = pcDone
		c := w.cur[p.key]
		if w.closed || c < 0 {
			return
		}
		l := &w.lists[c]
		if p.handOff && l.word&wordHeld == 0 { // trimFront: what the last hand-off completed
			w.trimFront(c)
		}
		if p.kind == pAdvance { // reach: the heap's uses join the entries, in order
			l.high = true
			for _, g := range l.heap[:l.nheap] {
				l.entries[l.nent] = g
				l.nent++
			}
			l.heap, l.nheap = [maxEntries]gen{}, 0
		}
		ops, n := l.entries, l.nent
		if p.kind == pCheck {
			ops, n = l.walkable()
		}
		if n == 0 {
			return
		}
		next, took := stateMoves.take(l.word, !p.handOff)
		l.word = next
		if took {
			p.list, p.ops, p.nops, p.next, p.pc = c, ops, n, 0, 1
		}
	case 1: // tryEach: the next entry, its step
		if p.next == p.nops {
			p.pc = 20
			return
		}
		p.g = p.ops[p.next]
		p.next++
		p.no = false
		switch stateMoves.step(w.state, p.g) {
		case stepSolo:
			p.pc = 2
		case stepDead:
			p.pc = 10
		case stepApply:
			p.pc = 5
		default:
			p.pc = 6
		}
	case 2: // a solo try, without the try bit
		p.ok = w.try(i, p.g, answer)
		p.pc = 3
		if answer == 2 { // TryComplete panicked: unwind, holding no try bit
			p.pc = 97
		}
	case 3: // trySolo: soloTried
		w.tried(p.g)
		next, r := stateMoves.solo(w.state, p.g, p.ok)
		w.setState(next)
		p.no = !p.ok
		w.settled(p, r, outcomeOf(next), 10)
	case 5: // apply
		next, out := stateMoves.apply(w.state, p.g)
		w.setState(next)
		p.pc = 10
		if out != Pending {
			p.out, p.retC, p.pc = out, 10, pcComplete
		}
	case 6: // acquire
		next, r := stateMoves.acquire(w.state, p.g)
		w.setState(next)
		p.pc = map[acquired]uint8{acquireTaken: 7, acquirePassed: 10, acquireLeft: 5}[r]
	case 7: // a held try
		p.ok = w.try(i, p.g, answer)
		p.pc = 8
		if answer == 2 { // TryComplete panicked: unwind lets go of the try bit
			p.pc = 96
		}
	case 96: // unwind: abandonTry(false): an outcome left ends the use
		next, r := stateMoves.abandon(w.state, false)
		w.setState(next)
		w.settled(p, r, outcomeOf(next), 97)
	case 97: // unwind: a hand-off's round stops here, then run goes on
		if p.handOff {
			p.next = p.nops
		}
		p.pc = 1
	case 8: // tryHeld's settle
		w.tried(p.g)
		next, r := stateMoves.settle(w.state, p.ok, 0)
		w.setState(next)
		p.no = !p.ok
		if r == settleRetry {
			p.pc = 7
			return
		}
		w.settled(p, r, outcomeOf(next), 10)
	case 10: // relayedIn(w.word.Load())
		p.pc = 12
		if relayedIn(w.lists[p.list].word) {
			p.pc = 11
		}
	case 11: // takeRelayed, under the shard's mutex: the holder's
		w.takeRelayed(p)
		p.retA, p.pc = 12, pcApplyAll
	case 22: // takeRelayed(gone), under the shard's mutex: none if walked
		p.nwork = 0
		if w.lists[p.list].word&wordHeld == 0 || w.fault == goneTakesRelayed {
			w.takeRelayed(p)
		}
		p.retA, p.pc = pcDone, pcApplyAll
	case 12:
		p.pc = 1
		if p.no && p.handOff {
			p.pc = 20
		}
	case 20: // leave: letGo
		if w.fault == takeBeforeLeave && p.nwork == 0 && relayedIn(w.lists[p.list].word) {
			w.takeRelayed(p) // (the fault) applied once the walk has let go
			p.pc = 24
			return
		}
		fallthrough
	case 24:
		l := &w.lists[p.list]
		if w.fault == countBeforeLetGo && !p.counted { // (the fault) the count first
			p.counted, p.sawDead = true, l.dead > 0 && (!p.handOff || l.crowded())
			return
		}
		next, again, all := stateMoves.leave(l.word)
		l.word = next
		p.pc = 26
		switch {
		case w.fault == leaveSkipsCount:
			p.pc = 21
		case w.fault == countBeforeLetGo:
			p.pc = map[bool]uint8{true: 27, false: 21}[p.sawDead]
			p.counted, p.sawDead = false, false
		}
		if again {
			p.nextAll, p.pc = all, 25
		}
	case 26: // leave, let go: count.Load(); compact if any is dead (a hand-off: if crowded)
		l := &w.lists[p.list]
		p.pc = 21
		if l.dead > 0 && (!p.handOff || l.crowded()) {
			p.pc = 27
		}
	case 27: // leave, let go: under the shard's mutex, tidy unless another walk holds the list
		p.pc = 21
		if w.lists[p.list].word&wordHeld == 0 {
			w.tidy(p.list, p.handOff, p.next)
		}
	case 21: // takeRelayed's load, after leave let go
		p.pc = pcDone
		switch {
		case w.fault == takeBeforeLeave:
			p.retA, p.pc = pcDone, pcApplyAll
		case relayedIn(w.lists[p.list].word):
			p.pc = 22
		}
	case 25: // leave, again: tidy, and the next round's entries, under the mutex (all: the heap's too)
		w.tidy(p.list, p.handOff, p.next)
		p.handOff = !p.nextAll
		l := &w.lists[p.list]
		p.ops, p.nops, p.next, p.pc = l.entries, l.nent, 0, 1
		if !p.handOff {
			p.ops, p.nops = l.walkable()
		}
	}
}

// settled completes a use a try ended, as trySolo and try do.
func (w *world) settled(p *path, r settled, out Outcome, ret uint8) {
	p.pc = ret
	if r == settleWon || r == settleApplied {
		p.out, p.retC, p.pc = out, ret, pcComplete
	}
}

// takeRelayed is takeRelayedLocked: the relayed uses, for applyRelayed.
func (w *world) takeRelayed(p *path) {
	l := &w.lists[p.list]
	l.word &^= listRelayed
	p.work, p.nwork = l.relayed, l.nhand
	l.relayed, l.nhand = [maxEntries]gen{}, 0
}

// subroutine runs a step of complete, applyRelayed or relay.
func (w *world) subroutine(i int, p *path) {
	switch p.pc {
	case pcComplete: // detach: no lock (watch and watchContext wrote before the end; Op.first is left for a relay, bind clears it)
		if genOf(w.state) != p.g || !ended(w.state) {
			w.fail("use %d completed while the state is %#x", p.g, w.state)
		}
		p.armedAt, p.unpin = w.state&armedBit != 0, 0
		if w.fault == detachClearsFirst {
			w.detachFirst(p.g)
		}
		p.ctxStop, w.stopCtx = w.stopCtx, false
		p.pc++
	case pcComplete + 1: // detach: Op.timing and timer.Stop, then stopCtx()
		if w.timedBy != p.g {
			w.fail("use %d's detach read Op.timing as use %d's bind or armTimer wrote it", p.g, w.timedBy)
		}
		switch {
		case !p.armedAt:
		case w.timing == timingUnarmed:
			if w.fault != unarmedPinKept {
				p.unpin = armedBit // nothing was armed
			}
		case w.timing != timingWheel:
		case p.out == Expired || w.fault == skipsStop: // no Stop: an expired use's fire has begun
		case w.timer == timerSet:
			w.timer, p.unpin = timerStoped, armedBit
		}
		if p.armedAt && w.timing == timingWheel && w.timer == timerSet {
			w.fail("use %d's detach (%v) left its timer set: it would fire for an ended use, whose pin it holds until then", p.g, p.out)
		}
		if p.ctxStop && w.ctx == ctxRegistered {
			w.ctx, p.unpin = ctxStopped, p.unpin|ctxBit
		}
		p.drop, p.pc = 0, pcDrop
	case pcDrop: // drop on the next list: count.Add(1); compact if crowded and not walked
		o := w.use(p.g)
		if p.drop == o.nlists {
			p.pc = pcComplete + 2
			return
		}
		l := &w.lists[o.lists[p.drop]]
		l.dead++
		if l.crowded() {
			p.pc = pcDrop + 1
			return
		}
		p.drop++
	case pcDrop + 1: // drop: !l.walked()
		p.pc = pcDrop + 2
		if w.lists[w.use(p.g).lists[p.drop]].word&wordHeld != 0 {
			p.drop, p.pc = p.drop+1, pcDrop
		}
	case pcDrop + 2: // compact: under the shard's mutex, unless a walk holds the list (its leave compacts)
		c := w.use(p.g).lists[p.drop]
		if w.lists[c].word&wordHeld == 0 || w.fault == dropIgnoresWalk {
			w.compact(c, true, false)
		}
		p.drop, p.pc = p.drop+1, pcDrop
	case pcComplete + 2: // callbacks (none for Cancelled)
		o := w.use(p.g)
		if o.recycled > 0 {
			w.fail("use %d's callbacks ran after its Recycle", p.g)
		}
		if p.out == Cancelled || p.out == withdrawn { // withdraw: no callbacks either
			o.completedWith = p.out
			p.pc++
			return
		}
		if o.onComplete++; o.onComplete > 1 {
			w.fail("use %d's OnComplete ran twice", p.g)
		}
		o.completedWith = p.out
		if p.out == Expired {
			o.expiration++
		}
		p.pc++
	case pcComplete + 3: // finish: a parked use's token, the ending pin and detach's
		if w.pkUse != 0 && w.pkUse == uint64(genOf(w.state))+1 {
			w.pkUse = 0
			if w.pkEnded++; w.pkEnded > 1 {
				w.fail("a token sent to a full parking.ended (it would block)")
			}
		}
		w.unpinAndRecycle(endingBit | p.unpin)
		p.pc = p.retC
	case pcApplyAll:
		if p.nwork == 0 {
			p.pc = p.retA
			return
		}
		g := p.work[0]
		copy(p.work[:], p.work[1:])
		p.nwork--
		next, out := stateMoves.apply(w.state, g)
		w.setState(next)
		if out != Pending {
			p.g, p.out, p.retC, p.pc = g, out, pcApplyAll, pcComplete
		}
	case pcRelay: // o.first, with no lock
		p.pc = pcRelay + 5
		if w.firstBy != p.g {
			// A later use's bind or watch wrote Op.first, and this relay
			// of an earlier use reads it: nothing orders the two (a data
			// race; first is an interface, two words). The relay's pin
			// keeps its use from being over, so from being added again.
			w.fail("a relay of use %d reads Op.first, which use %d's bind or watch wrote", p.g, w.firstBy)
		}
		if w.first >= 0 {
			p.list, p.pc = w.first, pcRelay+1
		}
	case pcRelay + 1: // l.walked()
		p.pc = pcRelay + 4
		if w.lists[p.list].word&wordHeld != 0 {
			p.pc = pcRelay + 2
		}
	case pcRelay + 2: // queueRelay: under the shard's mutex, the use queued
		w.shardMu = uint8(i)
		l := &w.lists[p.list]
		l.relayed[l.nhand] = p.g
		l.nhand++
		l.word |= listRelayed
		p.pc++
	case pcRelay + 3: // queueRelay: none if walked, else all, and the mutex let go
		p.nwork = 0
		if w.lists[p.list].word&wordHeld == 0 {
			w.takeRelayed(p)
		}
		w.shardMu = noPath
		p.retA, p.pc = pcRelay+5, pcApplyAll
	case pcRelay + 4: // apply
		next, out := stateMoves.apply(w.state, p.g)
		w.setState(next)
		p.pc = pcRelay + 5
		if out != Pending {
			p.out, p.retC, p.pc = out, pcRelay+5, pcComplete
		}
	case pcRelay + 5: // relay's deferred unpin of its pin: the use may be over now
		if w.fault != relayWithoutPin {
			w.unpinAndRecycle(relayBit)
		}
		p.pc = p.retH
	}
}

// finished checks a state no path can leave: every path done, every use
// begun ended once with its callbacks run and recycled, a try that passed
// won, nothing held or relayed.
func (w *world) finished() {
	for i := range int(w.np) {
		p := &w.paths[i]
		if p.pc != pcDone && !((p.kind == pTimeout || p.kind == pContext) && p.pc == 0) && !(p.kind == pReuse && p.pc == 0 && w.obs[0].recycled == 0) {
			w.fail("%s is stuck at step %d", pathNames[p.kind], p.pc)
		}
	}
	if w.pkEnded != 0 || w.pkUse != 0 {
		w.fail("a parked use's token or claim left behind: %d tokens, use %d", w.pkEnded, w.pkUse)
	}
	w.listsAtRest()
	for g := range gen(2) {
		o := &w.obs[g]
		bound := g < genOf(w.state) || g == genOf(w.state) && w.state&boundBit != 0
		switch {
		case g > genOf(w.state) || w.state == 0:
		case o.outcome == Pending:
			w.fail("use %d never ended (items left: %d)", g, w.items)
		case o.outcome == withdrawn && (o.onComplete != 0 || o.recycled != 0):
			w.fail("use %d withdrawn, yet OnComplete ran %d times and Recycle %d", g, o.onComplete, o.recycled)
		case o.outcome == withdrawn:
		case o.onComplete != 1 && o.outcome != Cancelled, o.onComplete != 0 && o.outcome == Cancelled:
			w.fail("use %d ended %v: OnComplete ran %d times", g, o.outcome, o.onComplete)
		case o.completedWith != o.outcome:
			w.fail("use %d ended %v, OnComplete ran with %v", g, o.outcome, o.completedWith)
		case (o.expiration == 1) != (o.outcome == Expired) || o.expiration > 1:
			w.fail("use %d ended %v with OnExpiration run %d times", g, o.outcome, o.expiration)
		case o.passed && o.outcome != Completed:
			w.fail("use %d: a try passed and it ended %v", g, o.outcome)
		case o.decided == 1 && o.outcome != o.decidedWith && o.outcome != Completed:
			w.fail("use %d: a claim of %v decided it, and it ended %v", g, o.decidedWith, o.outcome)
		case bound && o.recycled != 1, !bound && o.recycled != 0:
			w.fail("use %d recycled %d times", g, o.recycled)
		}
	}
}

// listsAtRest checks that no list is left held or with uses relayed, and
// ListsAtRest's count and crowding for each list the map holds.
func (w *world) listsAtRest() {
	for _, l := range w.lists {
		if l.word&(wordTurn|listRelayed) != 0 || l.nhand != 0 || w.shardMu != noPath {
			w.fail("the key's list is left held or with uses relayed: word %#x, %d relayed", l.word, l.nhand)
		}
	}
	for k := range w.keys {
		if c := w.cur[k]; c >= 0 {
			w.listAtRest(c)
		}
	}
}

// listAtRest checks list c, in the map: its count is exact, and it is not
// left mostly dead.
func (w *world) listAtRest(c int8) {
	l := &w.lists[c]
	dead := 0
	for _, g := range append(l.entries[:l.nent:l.nent], l.heap[:l.nheap]...) {
		if !w.live(g) {
			dead++
		}
	}
	switch {
	case int(l.n) != int(l.nent)+int(l.nheap) || int(l.dead) != dead:
		w.fail("list %d's count says %d entries, %d dead; it has %d, %d dead", c, l.n, l.dead, int(l.nent)+int(l.nheap), dead)
	case l.crowded():
		w.fail("list %d left mostly dead: %d of %d entries", c, l.dead, l.n)
	}
}

// scenario is a model's start: its paths, and how tries answer.
// onB marks a path of the second key (a walk, CancelForKey,
// ForceCompleteForKey); the add then watches both keys.
const onB pathKind = 0x80

type scenario struct {
	name    string
	paths   []pathKind
	choose  bool // tries answer both ways; else by the items pushes made
	noTimer bool
	withCtx bool
	panics  bool
	leveled bool
}

func (sc scenario) start() world {
	w := world{shardMu: noPath, first: -1, choose: sc.choose, noTimer: sc.noTimer, withCtx: sc.withCtx, panics: sc.panics, leveled: sc.leveled, np: uint8(len(sc.paths))}
	w.cur, w.keys = [2]int8{-1, -1}, 1
	for i, k := range sc.paths {
		w.paths[i] = path{kind: k &^ onB}
		if k&onB != 0 {
			w.paths[i].key, w.keys = 1, 2
		}
	}
	return w
}

// explore visits every state reachable from w, depth first, and returns how
// many it visited, or the first violation with the steps that led to it.
func explore(start world) (states int, err error) {
	states, _, err = exploreEnds(start)
	return states, err
}

// exploreEnds is explore, with the outcomes the uses ended with in the
// states no path can leave, so that a scenario shows it reaches them.
func exploreEnds(start world) (states int, ends map[string]int, err error) {
	ends = map[string]int{}
	// A state is kept as two 64-bit hashes of it (hash compaction), not
	// whole (960 bytes): the long suite's largest scenario visits 9.8
	// million states. A collision, which would leave a state unexplored, is
	// about 2^-82 likely there.
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	seen := map[[2]uint64]struct{}{}
	var trail []string
	var visit func(w world) error
	visit = func(w world) error {
		key := [2]uint64{maphash.Comparable(seeds[0], w), maphash.Comparable(seeds[1], w)}
		if _, ok := seen[key]; ok {
			return nil
		}
		seen[key] = struct{}{}
		moved := false
		for i := range int(w.np) {
			ok, answers := w.enabled(i)
			for a := range answers {
				if !ok {
					break
				}
				moved = true
				next := w
				label := fmt.Sprintf("%s@%d", pathNames[w.paths[i].kind], w.paths[i].pc)
				if w.paths[i].key == 1 {
					label = "B:" + label
				}
				if answers >= 2 {
					label += [...]string{"(try says false)", "(try says true)", "(try panics)"}[a]
				}
				trail = append(trail, label)
				if v := next.step(i, a); v != "" {
					return fmt.Errorf("%s, after %s", v, strings.Join(trail, " → "))
				}
				if next == w { // the model's waits are steps not enabled: a step is a change
					return fmt.Errorf("the model: a step that changes nothing, after %s", strings.Join(trail, " → "))
				}
				if err := visit(next); err != nil {
					return err
				}
				trail = trail[:len(trail)-1]
			}
		}
		if !moved {
			if v := w.check(w.finished); v != "" {
				return fmt.Errorf("%s, after %s", v, strings.Join(trail, " → "))
			}
			name := func(o Outcome) string {
				if o == withdrawn {
					return "withdrawn"
				}
				return o.String()
			}
			end := name(w.obs[0].outcome)
			if genOf(w.state) == 1 {
				end += ", then " + name(w.obs[1].outcome)
			}
			ends[end]++
		}
		return nil
	}
	err = visit(start)
	return len(seen), ends, err
}

// step runs path i's step and returns the violation it met, if any.
func (w *world) step(i, answer int) violation {
	return w.check(func() { w.run(i, answer) })
}

func (w *world) check(f func()) (v violation) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case violation:
			v = r
		case impossible:
			v = violation(r.Error())
		default:
			panic(r)
		}
	}()
	f()
	return ""
}

// scenarios are the checked ones: three paths each (the timeout's counts
// once armed).
var scenarios = []scenario{
	{"add, check, force", []pathKind{pAdd, pCheck, pForce, pTimeout}, true, false, false, false, false},
	{"add, handoff, force", []pathKind{pAdd, pHandOff, pForce, pTimeout}, true, false, false, false, false},
	{"add, check, handoff", []pathKind{pAdd, pCheck, pHandOff, pTimeout}, true, false, false, false, false},
	{"add, check, check", []pathKind{pAdd, pCheck, pCheck, pTimeout}, true, false, false, false, false},
	{"add, push+handoff, push+handoff (no timeout)", []pathKind{pAdd, pPushHand, pPushHand}, false, true, false, false, false},
	{"add, push+handoff, check (no timeout)", []pathKind{pAdd, pPushHand, pCheck}, false, true, false, false, false},
	{"add, reuse, check", []pathKind{pAdd, pReuse, pCheck, pTimeout}, true, false, false, false, false},
	{"add, check, context", []pathKind{pAdd, pCheck, pContext, pTimeout}, true, false, true, false, false},
	{"add, handoff, context (no timeout)", []pathKind{pAdd, pHandOff, pContext}, true, true, true, false, false},
	{"park, handoff, force", []pathKind{pPark, pHandOff, pForce}, true, true, false, false, false},
	{"park, check, check", []pathKind{pPark, pCheck, pCheck}, true, true, false, false, false},
	{"park, push+handoff, push+handoff", []pathKind{pPark, pPushHand, pPushHand}, false, true, false, false, false},
	{"add, check, cancel", []pathKind{pAdd, pCheck, pCancel, pTimeout}, true, false, false, false, false},
	{"add, handoff, forcekey", []pathKind{pAdd, pHandOff, pForceKey, pTimeout}, true, false, false, false, false},
	{"add, check, close", []pathKind{pAdd, pCheck, pClose, pTimeout}, true, false, false, false, false},
	{"park, handoff, close", []pathKind{pPark, pHandOff, pClose}, true, true, false, false, false},
	{"add, reuse, cancel", []pathKind{pAdd, pReuse, pCancel, pTimeout}, true, false, false, false, false},
	{"add, reuse, forcekey", []pathKind{pAdd, pReuse, pForceKey, pTimeout}, true, false, false, false, false},
	{"add, reuse, force, check", []pathKind{pAdd, pReuse, pForce, pCheck, pTimeout}, true, false, false, false, false},
	{"add A+B, check A, check B", []pathKind{pAdd, pCheck, pCheck | onB, pTimeout}, true, false, false, false, false},
	{"add A+B, handoff A, force", []pathKind{pAdd, pHandOff, pForce | onB, pTimeout}, true, false, false, false, false},
	{"add A+B, push+handoff A, push+handoff B (no timeout)", []pathKind{pAdd, pPushHand, pPushHand | onB}, false, true, false, false, false},
	{"add A+B, check A, cancel B", []pathKind{pAdd, pCheck, pCancel | onB, pTimeout}, true, false, false, false, false},
	{"add A+B, handoff B, close", []pathKind{pAdd, pHandOff | onB, pClose, pTimeout}, true, false, false, false, false},
	{"add at a level, advance, check", []pathKind{pAdd, pAdvance, pCheck, pTimeout}, true, false, false, false, true},
	{"add at a level, advance, handoff, force", []pathKind{pAdd, pAdvance, pHandOff, pForce}, true, true, false, false, true},
	{"add at a level, advance, cancel", []pathKind{pAdd, pAdvance, pCancel, pTimeout}, true, false, false, false, true},
	{"add, check, force; tries panic", []pathKind{pAdd, pCheck, pForce, pTimeout}, true, false, false, true, false},
	{"add, handoff, check; tries panic", []pathKind{pAdd, pHandOff, pCheck, pTimeout}, true, false, false, true, false},
	{"park, handoff, force; tries panic", []pathKind{pPark, pHandOff, pForce}, true, true, false, true, false},
	{"add, reuse, check; tries panic", []pathKind{pAdd, pReuse, pCheck, pTimeout}, true, false, false, true, false},
}

// underRace are the scenarios that run under -race too (raceEnabled).
var underRace = map[string]bool{"add, check, force": true, "add, handoff, force": true, "park, handoff, force": true,
	"add A+B, handoff A, force": true, "add, check, cancel": true, "add, push+handoff, check (no timeout)": true}

// longScenarios are four paths each, for the long suite (PURGATORY_LONG=1).
var longScenarios = []scenario{
	{"add, check, handoff, force", []pathKind{pAdd, pCheck, pHandOff, pForce, pTimeout}, true, false, false, false, false},
	{"add, push+handoff, push+handoff, check (no timeout)", []pathKind{pAdd, pPushHand, pPushHand, pCheck}, false, true, false, false, false},
	{"add, reuse, check, handoff", []pathKind{pAdd, pReuse, pCheck, pHandOff, pTimeout}, true, false, false, false, false},
	{"add, check, force, context", []pathKind{pAdd, pCheck, pForce, pContext, pTimeout}, true, false, true, false, false},
	{"add A+B, check A, handoff B, force", []pathKind{pAdd, pCheck, pHandOff | onB, pForce, pTimeout}, true, false, false, false, false},
	{"park, check, handoff, close; tries panic", []pathKind{pPark, pCheck, pHandOff, pClose}, true, true, false, true, false},
}

// TestEveryInterleaving explores every interleaving of each scenario and
// checks, after every step, I1–I4, one outcome per use, tries one at a time
// and never of an ended or recycled use, OnComplete once and only after the
// outcome, nothing after Recycle; and in every state no path can leave: all
// paths done, each use ended once, OnComplete with its outcome, OnExpiration
// only after an expiry, a passing try's use Completed, each use recycled
// once, the key's walking word let go, no use left relayed, and no item left
// waiting beside a pending use (a hand-off lost). -v prints the states.
func TestEveryInterleaving(t *testing.T) {
	names := map[string]bool{}
	for _, sc := range scenarios {
		names[sc.name] = true
	}
	for name := range underRace {
		require.True(t, names[name], "underRace names %q, which is no scenario", name)
	}
	all := scenarios
	if os.Getenv("PURGATORY_LONG") == "1" {
		all = append(all[:len(all):len(all)], longScenarios...)
	}
	for _, sc := range all {
		t.Run(sc.name, func(t *testing.T) {
			if raceEnabled && !underRace[sc.name] {
				t.Skip("under -race only a few scenarios run (the checker is one goroutine: the detector finds nothing, at seven times the time); .ci/run's checker step runs them all")
			}
			n, ends, err := exploreEnds(sc.start())
			require.NoError(t, err)
			require.NotEmpty(t, ends, "no state where every path has finished")
			t.Logf("%d states; the uses' ends, in the states no path can leave: %v", n, ends)
		})
	}
}

// TestCheckerCatchesFaults is the checker's mutation test: each fault, a
// move of the table swapped for a wrong one or a walk's steps changed, is
// caught by some scenario.
func TestCheckerCatchesFaults(t *testing.T) {
	if raceEnabled {
		t.Skip("the mutation test runs without -race (.ci/run's checker step): see underRace")
	}
	faults := []struct {
		name  string
		moves func(m *movesTable)
		walk  walkFault
	}{
		{"the again bit ignored: a walk asked for another round lets go", func(m *movesTable) {
			m.leave = func(s walkWord) (walkWord, bool, bool) { return s &^ (wordTurn | listAgainAll), false, false }
		}, noFault},
		{"an outcome left for a try that is not running", func(m *movesTable) {
			real := m.claim
			m.claim = func(s int64, g gen, out Outcome) (int64, claimed) {
				if pending(s) && genOf(s) == g {
					return s | leaving(out), claimLeftTo
				}
				return real(s, g, out)
			}
		}, noFault},
		{"a solo try's no drops the outcome left", func(m *movesTable) {
			real := m.solo
			m.solo = func(s int64, g gen, ok bool) (int64, settled) {
				if !ok {
					return s &^ leftBits, settleLetGo
				}
				return real(s, g, ok)
			}
		}, noFault},
		{"a walk takes its relayed uses before it lets go, and none after", nil, takeBeforeLeave},
		{"a walk gone takes the next one's relayed uses", nil, goneTakesRelayed},
		{"a parked waiter leaves without taking its use back", nil, leaveWithoutClaim},
		{"a relay without its pin: a late relay of the last use races the next use's watch", nil, relayWithoutPin},
		{"detach clears Op.first with no lock: a relay of the same use reads it", nil, detachClearsFirst},
		{"detach keeps the pin of a timeout never armed: the use is never over", nil, unarmedPinKept},
		{"armTimer arms without recording it: detach lets go of the pin of a timer that still fires", nil, armWithoutTiming},
		{"detach skips the timer's Stop for every outcome, not only Expired: a completed use's timer still fires", nil, skipsStop},
		{"a walk lets go without reading the count: a drop that found it walked left a list mostly dead", nil, leaveSkipsCount},
		{"a drop compacts a list a walk reads", nil, dropIgnoresWalk},
		{"a walk reads the count before it lets go: a drop between the two leaves a list mostly dead", nil, countBeforeLetGo},
		{"a panicking try drops the outcome left for it", func(m *movesTable) {
			m.abandon = func(s int64, withdraw bool) (int64, settled) {
				if withdraw {
					return s&^(turnBits|leftBits) | endedWith(withdrawn), settleWithdrawn
				}
				return s &^ (turnBits | leftBits), settleLetGo
			}
		}, noFault},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			saved := stateMoves
			defer func() { stateMoves = saved }()
			if f.moves != nil {
				f.moves(&stateMoves)
			}
			for _, sc := range scenarios {
				w := sc.start()
				w.fault = f.walk
				if _, err := explore(w); err != nil {
					t.Logf("caught by %q: %v", sc.name, err)
					return
				}
			}
			t.Fatalf("no scenario caught the fault")
		})
	}
}
