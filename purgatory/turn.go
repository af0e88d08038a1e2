package purgatory

import "sync/atomic"

// A turn is "one goroutine at a time, and nobody waits", in two bits of a
// word: held, by the goroutine whose turn it is, and again, set by whoever
// wanted a turn meanwhile. The holder goes round once more before it lets go
// if again is set, so no request is lost, and nobody blocks: a goroutine
// that finds the turn taken asks for one more round and moves on. (Kafka
// 2.x's maybeTryComplete: a tryLock and a "try again" flag, here in one word.)
//
// Two words are turns: an operation's state, whose turn is the try (one
// TryComplete at a time; its other bits, which the turn keeps, are
// state.go's), and a watch list's walk (one walk of a key at a time).
type turn struct{ atomic.Int64 }

// The turn's bits, above an operation's Outcome bits (state.go).
const (
	turnHeld  int64 = 0x10
	turnAgain int64 = 0x20
	turnBits        = turnHeld | turnAgain
)

// take takes the turn and reports whether it did. If another goroutine holds
// it, take asks that goroutine for one more round and returns false. If the
// word has a bit of stop set, or its bits of mask are not want, it changes
// nothing and returns false.
func (t *turn) take(stop, mask, want int64) bool {
	for {
		s := t.Load()
		switch {
		case s&stop != 0 || s&mask != want:
			return false
		case s&turnHeld == 0:
			if t.CompareAndSwap(s, s|turnHeld) {
				return true
			}
		case s&turnAgain != 0:
			return false // asked already
		default:
			if t.CompareAndSwap(s, s|turnAgain) {
				return false
			}
		}
	}
}

// letGo is one attempt of the holder, which read s, to end its turn: if
// another round was asked for, it clears the request and keeps the turn
// (again); otherwise it lets go, leaving the word s&keep|set. It reports
// whether its compare-and-swap took effect; if not, the caller reads the word
// and decides once more.
func (t *turn) letGo(s, keep, set int64) (swapped, again bool) {
	if s&turnAgain != 0 {
		return t.CompareAndSwap(s, s&^turnAgain), true
	}
	return t.CompareAndSwap(s, s&keep|set), false
}

// release ends the holder's turn, keeping the word's other bits, and reports
// whether another round was asked for: then the caller still holds the turn
// and must go round again.
func (t *turn) release() (again bool) {
	for {
		if swapped, again := t.letGo(t.Load(), ^turnBits, 0); swapped {
			return again
		}
	}
}

// taken reports whether someone holds the turn.
func (t *turn) taken() bool { return t.Load()&turnHeld != 0 }
