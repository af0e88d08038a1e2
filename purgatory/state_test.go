package purgatory

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// st is a state of use g: its outcome, an outcome left for its try, and
// other bits.
func st(g gen, out, left Outcome, bits ...int64) int64 {
	s := int64(g)<<genShift | int64(out) | leaving(left)
	for _, b := range bits {
		s |= b
	}
	return s
}

// A move as the table names it: the pure function with its arguments, and
// its verdict as a value to compare.
type move struct {
	name string
	f    func(s int64) (int64, any)
}

func bindTo(set int64) move {
	return move{"bind", func(s int64) (int64, any) { return bindMove(s, set) }}
}
func claimOf(g gen, out Outcome) move {
	return move{fmt.Sprintf("claim %v", out), func(s int64) (int64, any) { return claimMove(s, g, out) }}
}
func applyAt(g gen) move {
	return move{"apply", func(s int64) (int64, any) { return applyMove(s, g) }}
}
func acquireAt(g gen) move {
	return move{"acquire", func(s int64) (int64, any) { return acquireMove(s, g) }}
}
func settleWith(ok bool, set int64) move {
	return move{fmt.Sprintf("settle %v", ok), func(s int64) (int64, any) { return settleMove(s, ok, set) }}
}
func abandonWith(withdraw bool) move {
	return move{"abandon", func(s int64) (int64, any) { return abandonMove(s, withdraw) }}
}
func soloAt(g gen, ok bool) move {
	return move{fmt.Sprintf("solo try %v", ok), func(s int64) (int64, any) { return soloMove(s, g, ok) }}
}
func pinWith(pin int64) move {
	return move{"pin", func(s int64) (int64, any) { return pinMove(s, pin) }}
}
func unpinOf(pin int64) move {
	return move{"unpin", func(s int64) (int64, any) { return unpinMove(s, pin), nil }}
}

// TestMoves holds each move of the table at state.go to its pure function:
// from a state, a move, the state it leaves and its verdict. The rows follow
// the table's, with the states next to them that make no move.
func TestMoves(t *testing.T) {
	const g, other = gen(5), gen(4)
	b := boundBit
	pending := st(g, 0, 0, b)
	maxGen := gen(1<<(64-genShift) - 1)
	rows := []struct {
		who      string
		from     int64
		m        move
		to       int64
		verdict  any
		overNext bool // the move leaves the use over
	}{
		{"TryCompleteElseWatch: a first use", 0, bindTo(turnHeld | lockerBit), b | turnHeld | lockerBit, bindFresh, false},
		{"TryCompleteElseWatch: a later use", st(g, Completed, 0, b, soloBit, recyclerBit), bindTo(turnHeld), st(g+1, 0, 0, b, turnHeld), bindReused, false},
		{"TryCompleteElseWatch: after a withdrawn use", st(g, withdrawn, 0, b), bindTo(turnHeld), st(g+1, 0, 0, b, turnHeld), bindReused, false},
		{"TryCompleteElseWatch: the generation wraps", st(maxGen, Expired, 0, b), bindTo(turnHeld), st(0, 0, 0, b, turnHeld), bindReused, false},
		{"TryCompleteElseWatch: forced before it was added", st(0, Forced, 0), bindTo(turnHeld), st(0, Forced, 0), bindEnded, true},
		{"TryCompleteElseWatch: in use", pending, bindTo(turnHeld), pending, bindInUse, false},
		{"TryCompleteElseWatch: in use, tried", pending | turnHeld, bindTo(turnHeld), pending | turnHeld, bindInUse, false},
		{"TryCompleteElseWatch: ended, callbacks running", st(g, Completed, 0, b, endingBit), bindTo(turnHeld), st(g, Completed, 0, b, endingBit), bindBusy, false},
		{"TryCompleteElseWatch: ended, timeout may fire", st(g, Forced, 0, b, armedBit), bindTo(turnHeld), st(g, Forced, 0, b, armedBit), bindBusy, false},

		{"a claim: ForceComplete, timeout, context, Close", pending, claimOf(g, Expired), st(g, Expired, 0, b, endingBit), claimEnded, false},
		{"ForceComplete before the use was added", 0, claimOf(0, Forced), st(0, Forced, 0, endingBit), claimEnded, false},
		{"a claim that meets a try", pending | turnHeld, claimOf(g, Forced), st(g, 0, Forced, b, turnHeld), claimLeftTo, false},
		{"a claim that meets a try asked again", pending | turnBits, claimOf(g, Closed), st(g, 0, Closed, b, turnBits), claimLeftTo, false},
		{"a claim of a solo use", pending | soloBit, claimOf(g, Expired), st(g, 0, Expired, b, soloBit, relayBit), claimLeftSolo, false},
		{"a claim of a solo use a walk acquired", pending | soloBit | turnHeld, claimOf(g, Cancelled), st(g, 0, Cancelled, b, soloBit, turnHeld), claimLeftTo, false},
		{"a claim after an outcome was left", st(g, 0, Expired, b, turnHeld), claimOf(g, Forced), st(g, 0, Expired, b, turnHeld), claimLost, false},
		{"a claim after the end", st(g, Completed, 0, b, endingBit), claimOf(g, Forced), st(g, Completed, 0, b, endingBit), claimLost, false},
		{"a claim through a stale entry", pending, claimOf(other, Closed), pending, claimLost, false},

		{"the claimer, no walk: or the walk", st(g, 0, Expired, b, soloBit), applyAt(g), st(g, Expired, 0, b, soloBit, endingBit), Expired, false},
		{"apply, applied already", st(g, Expired, 0, b, soloBit, endingBit), applyAt(g), st(g, Expired, 0, b, soloBit, endingBit), Pending, false},
		{"apply, its try passed first", st(g, Completed, 0, b, soloBit), applyAt(g), st(g, Completed, 0, b, soloBit), Pending, true},
		{"apply, a stale hand", st(g, 0, Forced, b, soloBit), applyAt(other), st(g, 0, Forced, b, soloBit), Pending, false},
		{"apply, a try holds it: the holder applies", st(g, 0, Forced, b, soloBit, turnHeld), applyAt(g), st(g, 0, Forced, b, soloBit, turnHeld), Pending, false},

		{"a walk takes the try", pending, acquireAt(g), pending | turnHeld, acquireTaken, false},
		{"a walk takes the try of a solo use it read before solo", pending | soloBit, acquireAt(g), pending | soloBit | turnHeld, acquireTaken, false},
		{"a walk meets a try", pending | turnHeld, acquireAt(g), pending | turnBits, acquirePassed, false},
		{"a walk meets a try asked again", pending | turnBits, acquireAt(g), pending | turnBits, acquirePassed, false},
		{"a walk meets a solo use with an outcome left", st(g, 0, Closed, b, soloBit), acquireAt(g), st(g, 0, Closed, b, soloBit), acquireLeft, false},
		{"a walk meets an ended use", st(g, Expired, 0, b), acquireAt(g), st(g, Expired, 0, b), acquirePassed, true},
		{"a walk meets a stale entry", pending, acquireAt(other), pending, acquirePassed, false},

		{"the holder: its try passed", pending | turnHeld, settleWith(true, 0), st(g, Completed, 0, b, endingBit), settleWon, false},
		{"the holder: its try passed over an outcome left", st(g, 0, Expired, b, turnBits), settleWith(true, 0), st(g, Completed, 0, b, endingBit), settleWon, false},
		{"the holder: no, with an outcome left", st(g, 0, Forced, b, turnHeld), settleWith(false, soloBit), st(g, Forced, 0, b, endingBit), settleApplied, false},
		{"the holder: no, with an outcome left and asked again", st(g, 0, Closed, b, turnBits), settleWith(false, 0), st(g, Closed, 0, b, endingBit), settleApplied, false},
		{"the holder: no, and try again", pending | turnBits, settleWith(false, soloBit), pending | turnHeld, settleRetry, false},
		{"the holder: no, and let go", pending | turnHeld | lockerBit, settleWith(false, 0), pending | lockerBit, settleLetGo, false},
		{"the holder: no, and let go, solo", pending | turnHeld, settleWith(false, soloBit), pending | soloBit, settleLetGo, false},

		{"the holder: TryComplete panicked, an outcome left", st(g, 0, Expired, b, turnBits), abandonWith(true), st(g, Expired, 0, b, endingBit), settleApplied, false},
		{"the holder: TryComplete panicked in TryCompleteElseWatch", pending | turnHeld, abandonWith(true), st(g, withdrawn, 0, b, endingBit), settleWithdrawn, false},
		{"the holder: TryComplete panicked in a walk", pending | turnBits, abandonWith(false), pending, settleLetGo, false},

		{"the key's walk: its try passed", pending | soloBit, soloAt(g, true), st(g, Completed, 0, b, soloBit, endingBit), settleWon, false},
		{"the key's walk: its try passed over an outcome left", st(g, 0, Expired, b, soloBit), soloAt(g, true), st(g, Completed, 0, b, soloBit, endingBit), settleWon, false},
		{"the key's walk: no, with an outcome left", st(g, 0, Cancelled, b, soloBit), soloAt(g, false), st(g, Cancelled, 0, b, soloBit, endingBit), settleApplied, false},
		{"the key's walk: no", pending | soloBit, soloAt(g, false), pending | soloBit, settleLetGo, false},

		{"arming the timeout", pending | turnHeld, pinWith(armedBit), pending | turnHeld | armedBit, true, false},
		{"tying the context", pending, pinWith(ctxBit), pending | ctxBit, true, false},
		{"arming, an outcome left", st(g, 0, Forced, b, turnHeld), pinWith(armedBit), st(g, 0, Forced, b, turnHeld), false, false},
		{"arming, ended", st(g, Forced, 0, b, endingBit), pinWith(armedBit), st(g, Forced, 0, b, endingBit), false, false},

		{"complete: its callbacks returned, the timeout to fire", st(g, Expired, 0, b, endingBit, armedBit), unpinOf(endingBit), st(g, Expired, 0, b, armedBit), nil, false},
		{"the fire's end: the last pin", st(g, Expired, 0, b, armedBit), unpinOf(armedBit), st(g, Expired, 0, b), nil, true},
		{"complete, having stopped timer and context", st(g, Closed, 0, b, endingBit, armedBit, ctxBit), unpinOf(endingBit | armedBit | ctxBit), st(g, Closed, 0, b), nil, true},
		{"the relay's end, its claimer having completed the use", st(g, Forced, 0, b, soloBit, relayBit), unpinOf(relayBit), st(g, Forced, 0, b, soloBit), nil, true},
		{"the fire's end on a use still pending (it left its outcome)", st(g, 0, Expired, b, soloBit, armedBit), unpinOf(armedBit), st(g, 0, Expired, b, soloBit), nil, false},
	}
	for _, r := range rows {
		next, v := r.m.f(r.from)
		require.Equal(t, r.to, next, "%s (%s): %#x -> %#x, want %#x", r.who, r.m.name, r.from, next, r.to)
		require.Equal(t, r.verdict, v, "%s (%s)", r.who, r.m.name)
		require.Equal(t, r.overNext, over(next), "%s (%s): over", r.who, r.m.name)
		require.NoError(t, invariants(next), "%s (%s)", r.who, r.m.name)
	}
}

// TestWalkSteps holds walkStep to what a walk must do with each state.
func TestWalkSteps(t *testing.T) {
	const g = gen(3)
	b := boundBit
	for _, r := range []struct {
		s    int64
		want step
	}{
		{st(g, 0, 0, b, soloBit), stepSolo},
		{st(g, 0, Expired, b, soloBit), stepApply},
		{st(g, 0, Expired, b, soloBit, turnHeld), stepAcquire}, // a walk's acquire took it: its settle applies
		{st(g, 0, 0, b, soloBit, turnHeld), stepAcquire},
		{st(g, 0, 0, b), stepAcquire},
		{st(g, 0, 0, b, turnBits), stepAcquire},
		{st(g, 0, Forced, b, turnHeld), stepAcquire},
		{st(g, Completed, 0, b, soloBit), stepDead},
		{st(g+1, 0, 0, b, soloBit), stepDead},
	} {
		require.Equal(t, r.want, walkStep(r.s, g), "%#x", r.s)
	}
}

// TestWalkingWordMoves: the list's turn, asked for by hand-offs and by walks
// over every operation, keeps the list's own flags.
func TestWalkingWordMoves(t *testing.T) {
	s, took := takeMove(listLeveled, true)
	require.True(t, took)
	require.Equal(t, listLeveled|wordHeld, s)
	s, took = takeMove(s, false)
	require.False(t, took, "held: a hand-off asks for one more round")
	require.Equal(t, listLeveled|wordTurn, s)
	s2, _ := takeMove(s, true)
	require.Equal(t, listLeveled|wordTurn|listAgainAll, s2, "and a CheckAndComplete makes it a round over every operation")

	next, again, all := leaveMove(s)
	require.Equal(t, listLeveled|wordHeld, next)
	require.True(t, again)
	require.False(t, all, "only hand-offs asked: the round stops at its first no")
	next, again, all = leaveMove(s2 | listRelayed)
	require.Equal(t, listLeveled|listRelayed|wordHeld, next)
	require.True(t, again)
	require.True(t, all)
	next, again, _ = leaveMove(listLeveled | wordHeld)
	require.Equal(t, listLeveled, next)
	require.False(t, again)
}

// The moves panic on states that cannot happen, naming what broke.
func TestImpossibleStates(t *testing.T) {
	const g = gen(2)
	b := boundBit
	for _, r := range []struct {
		what string
		f    func()
	}{
		{"a try bit let go while not held", func() { settleMove(st(g, 0, 0, b), false, 0) }},
		{"a try bit let go while not held", func() { abandonMove(st(g, 0, 0, b, soloBit), true) }},
		{"or an outcome set under a try", func() { settleMove(st(g, Expired, 0, b, turnHeld), true, 0) }},
		{"a pin released twice", func() { unpinMove(st(g, Expired, 0, b), armedBit) }},
		{"a pin released twice", func() { unpinMove(st(g, Expired, 0, b, endingBit), endingBit|ctxBit) }},
		{"a pin set twice", func() { pinMove(st(g, 0, 0, b, armedBit), armedBit) }},
		{"a pin set other than the timeout's or the context's", func() { pinMove(st(g, 0, 0, b), endingBit) }},
		{"a solo use changed under its walk's try", func() { soloMove(st(g, Expired, 0, b, soloBit), g, true) }},
		{"a solo use changed under its walk's try", func() { soloMove(st(g+1, 0, 0, b, soloBit), g, false) }},
		{"a solo use changed under its walk's try", func() { soloMove(st(g, 0, 0, b, soloBit, turnHeld), g, false) }},
		{"a walk let go of a list it did not hold", func() { leaveMove(listLeveled) }},
	} {
		got := recoverOf(r.f)
		require.NotNil(t, got, r.what)
		require.Contains(t, fmt.Sprint(got), "purgatory: internal error: ")
		require.Contains(t, fmt.Sprint(got), r.what)
	}
}

func recoverOf(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// invariants returns the first of I1–I4 (state.go) that s breaks.
func invariants(s int64) error {
	switch {
	case ended(s) && s&(turnBits|leftBits) != 0:
		return fmt.Errorf("I1: an outcome with a try or an outcome left: %#x", s)
	case s&turnAgain != 0 && s&turnHeld == 0:
		return fmt.Errorf("I2: again without held: %#x", s)
	case s&leftBits != 0 && (ended(s) || s&(turnHeld|soloBit) == 0):
		return fmt.Errorf("I3: an outcome left with no try to apply it: %#x", s)
	case s&endingBit != 0 && !ended(s):
		return fmt.Errorf("I4: ending without an outcome: %#x", s)
	}
	return nil
}

// TestEveryMoveKeepsTheInvariants applies every move, with every argument,
// to every state that holds I1–I4 (of two generations, every outcome,
// outcome left, turn, flag and pin): each move either panics as impossible
// or leaves a state that holds them too; only bind changes the generation or
// the flags bind sets; every move that sets an outcome sets ending with it,
// so that only unpin leaves a use over and exactly one caller recycles it.
func TestEveryMoveKeepsTheInvariants(t *testing.T) {
	const g = gen(7)
	outcomes := []Outcome{Pending, Completed, Forced, Expired, ContextDone, Cancelled, Closed, Shed, withdrawn}
	var moves []move
	for _, gg := range []gen{g, g + 1} {
		for _, out := range outcomes[1:8] {
			moves = append(moves, claimOf(gg, out))
		}
		moves = append(moves, applyAt(gg), acquireAt(gg), soloAt(gg, true), soloAt(gg, false))
	}
	for _, ok := range []bool{false, true} {
		moves = append(moves, settleWith(ok, 0), settleWith(ok, soloBit), abandonWith(ok))
	}
	for _, pin := range []int64{armedBit, ctxBit, endingBit, relayBit, pins} {
		moves = append(moves, pinWith(pin), unpinOf(pin))
	}
	moves = append(moves, bindTo(turnHeld), bindTo(turnHeld|lockerBit|recyclerBit))

	states := 0
	flagBits := []int64{turnHeld, turnAgain, soloBit, lockerBit, recyclerBit, boundBit, armedBit, ctxBit, endingBit}
	for mask := range 1 << len(flagBits) {
		var s0 int64
		for i, bit := range flagBits {
			if mask&(1<<i) != 0 {
				s0 |= bit
			}
		}
		for _, out := range outcomes {
			for _, left := range outcomes[:8] {
				s := st(g, out, left) | s0
				if invariants(s) != nil {
					continue
				}
				states++
				for _, m := range moves {
					var next int64
					if recoverOf(func() { next, _ = m.f(s) }) != nil {
						continue // impossible, as the move says
					}
					require.NoError(t, invariants(next), "%s on %#x", m.name, s)
					if m.name == "bind" {
						continue
					}
					require.Equal(t, genOf(s), genOf(next), "%s on %#x: the generation", m.name, s)
					require.Equal(t, s&(lockerBit|recyclerBit|boundBit), next&(lockerBit|recyclerBit|boundBit), "%s on %#x: the flags bind sets", m.name, s)
					if !ended(s) && ended(next) {
						require.NotZero(t, next&endingBit, "%s on %#x: an outcome without ending", m.name, s)
					}
					if !over(s) && over(next) {
						require.Contains(t, m.name, "unpin", "%s on %#x: only unpin leaves a use over", m.name, s)
					}
				}
			}
		}
	}
	require.Greater(t, states, 1000)
}

// The layout the drawing at state.go shows: the fields do not overlap, and
// the named lows are where the shifts say.
func TestStateBits(t *testing.T) {
	require.Equal(t, int64(1)<<leftShift, leftLow)
	require.Equal(t, int64(1)<<genShift, genLow)
	fields := []int64{outcomeBits, turnBits, soloBit | lockerBit | recyclerBit | boundBit, pins, leftBits, genBits}
	var all int64
	for _, f := range fields {
		require.Zero(t, all&f, "fields overlap at %#x", all&f)
		all |= f
	}
	require.Equal(t, int64(-1), all, "every bit of Op.state has a meaning")
	require.Equal(t, 46, bits.OnesCount64(^uint64(1<<genShift-1)), "46 bits of generation")
	require.Zero(t, int64(listLeveled|listRelayed|listAgainAll)&^outcomeBits, "the walking word's flags sit where an Op keeps its outcome")
	require.Equal(t, int64(wordHeld), turnHeld, "the two words' turns at the same bits")
	require.Equal(t, int64(wordAgain), turnAgain)
	require.Equal(t, int64(listLowBits), outcomeBits|turnBits, "the walking word's head starts above its turn")
	for _, h := range []int{0, 1, 1000, 1 << 40} {
		w := withHead(listLeveled|wordTurn|listAgainAll, h)
		require.Equal(t, listLeveled|wordTurn|listAgainAll, w&listLowBits, "the flags and turn kept")
		require.Equal(t, walkWord(h), w>>listHeadShift)
		next, _, _ := leaveMove(w)
		require.Equal(t, walkWord(h), next>>listHeadShift, "a walk's move keeps the head")
		next, _ = takeMove(next, true)
		require.Equal(t, walkWord(h), next>>listHeadShift)
	}
}

// The list's turn is held by one walk at a time, and a request made while it
// is held is served by a round that starts after the request: the last round
// sees every request made.
func TestTurnLosesNoRequest(t *testing.T) {
	var l watchList[int]
	var posted, seen, inside atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 5000 {
				posted.Add(1)
				if !l.take(i%2 == 0) {
					continue // the holder goes round once more
				}
				for {
					require.EqualValues(t, 1, inside.Add(1), "one holder at a time")
					seen.Store(posted.Load())
					inside.Add(-1)
					if again, _ := l.letGo(); !again {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, posted.Load(), seen.Load(), "a round after every request")
	require.Zero(t, l.walking.Load(), "let go at the end")
}
