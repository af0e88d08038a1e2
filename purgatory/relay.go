package purgatory

import "github.com/purgatory-go/purgatory/internal/sched"

// The relay: a claim (a timeout, ForceComplete, a context, Close,
// CancelForKey, ForceCompleteForKey) that finds a solo use leaves its
// outcome on it and relays the use to the walk of its key that may be
// trying it, which applies the outcome once its try has said no; with no
// walk under way, the claimer applies it itself. The claim's move pins the
// use (relayBit) until relay has read where to, so that the use cannot be
// over, and added again, under a late relay. relay is the claimer's side,
// queueRelay and takeRelayed the list's (under the shard's mutex),
// applyRelayed whoever applies; the walk's reads of the queue are in
// walk.go (tryEach, run), and remove (watch.go) carries the queue of a list
// it takes out of the map for the walk that holds it. Every interleaving of
// it with the walks is checked (checker_test.go).

// relay applies the outcome just left on a solo use (claimLeftSolo), or
// relays the use to the walk of its key that may be trying it. Why that walk's
// try is never overtaken, step by step, for a use watched under key k alone
// (Kafka argues its tryCompleteElseWatch the same way):
//
//  1. After TryCompleteElseWatch's last settle, which sets solo in the move
//     that lets go of the try bit, nothing tries the use but a walk of k: it
//     is in no other list, and every other path claims it, without a try.
//  2. Walks of k never overlap (k's walking turn: a walk that finds it taken
//     asks for one more round and returns), and a walk takes the turn before
//     it reads an entry's state. So the tries are one walk's, in turn.
//  3. A claim of a solo use does not end it: it leaves its outcome
//     (claimMove), and only then looks whether a walk holds k (below).
//  4. If one does, the claim relays the use to it (queueRelay): that walk
//     applies the outcome once its try has said no (soloMove), when it
//     next meets the entry (stepApply), right after its current try
//     (takeRelayed), or as it leaves k; if its try passes, it claims
//     Completed instead. A walk that has left k takes nothing if another
//     holds k by then: the uses are that walk's, which may be trying one of
//     them (2), and which applies them in the same ways.
//  5. If none does, no walk is trying the use: one that took k before 3's
//     look has let go, and one that takes k after it reads the state after
//     3's leaving (2), finds the outcome left and applies it without a try.
//     So the claimer applies it itself (apply).
//  6. 4's walk and 5's claimer may both apply it: one compare-and-swap
//     wins (applyMove), and only the winner completes the use.
//
// The atomics are sequentially consistent, so of 3's leaving and 2's read,
// and of 3's look and 2's take, one sees the other.
func (o *Op) relay(impl Operation, g gen) {
	defer o.unpin(relayBit) // set by the claim; the use may be over after this
	sched.At("relay reads first")
	l := o.first    // the use's one list; its detach may read it meanwhile, and leaves it (Op.detach)
	if l.walked() { // 4
		applyRelayed(l.queueRelay(entry{impl, o, g})) // none, unless the walk let go meanwhile
		return
	}
	if out := o.apply(g); out != Pending { // 5
		o.complete(impl, out)
	}
}

// applyRelayed applies the outcomes left on the solo uses of es, handed to a walk
// (queueRelay), and completes those it applies; a callback that panics does not
// keep the rest from ending, and the panic goes on once they have.
func applyRelayed(es []entry) {
	if len(es) == 0 {
		return
	}
	defer applyRelayed(es[1:]) // not in a loop: an open-coded defer costs nothing
	if out := es[0].op.apply(es[0].gen); out != Pending {
		es[0].op.complete(es[0].impl, out)
	}
}

// queueRelay implements place. It queues e for the walk, flagging the list before
// it looks at the turn, while the walk lets go of the turn before it looks at
// the flag (leave, then takeRelayed): one of the two sees the other, so no
// use relayed here waits for a walk that has gone.
func (l *watchList[K]) queueRelay(e entry) []entry {
	sh := l.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	lv := l.levelsMade()
	lv.relayed = append(lv.relayed, e)
	l.setRelayed(true)
	if l.walked() {
		return nil
	}
	return l.takeRelayedLocked()
}

// takeRelayed returns the uses relayed to the list's walk, and forgets them:
// nil, after one atomic load, if there are none. A walk calls it while it
// holds the list, between its tries, and once more after it has let go
// (gone): then it takes nothing if another walk holds the list by now, for
// that walk may be trying one of them, without the try bit, at this very
// moment (a solo use's try); that walk applies them between its tries or as
// it leaves. The interleaving checker found that race (issue 49; its fault
// 05-gone-takes-relayed in internal/sched/testdata/faults): a walk that had let go
// applied an expiry to a use the next walk was trying, which then passed.
func (l *watchList[K]) takeRelayed(gone bool) []entry {
	if !l.relayedAny() {
		return nil
	}
	l.shard.mu.Lock()
	defer l.shard.mu.Unlock()
	if gone && l.walked() {
		return nil
	}
	return l.takeRelayedLocked()
}

func (l *watchList[K]) takeRelayedLocked() []entry {
	l.setRelayed(false)
	if l.lv == nil {
		return nil
	}
	es := l.lv.relayed
	l.lv.relayed = nil
	return es
}
