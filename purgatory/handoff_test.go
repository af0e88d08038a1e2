package purgatory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// line is a queue of items and the order its waiters were served in.
type line struct {
	mu     sync.Mutex
	items  int
	served []int
	tries  []int
}

func (l *line) push(n int) {
	l.mu.Lock()
	l.items += n
	l.mu.Unlock()
}

func (l *line) order() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.served...)
}

// waiter takes one item of its line in TryComplete.
type waiter struct {
	*testkit.Op
	id   int
	line *line
}

func newWaiter(l *line, id int, timeout time.Duration) *waiter {
	return &waiter{Op: testkit.NewOp(timeout), id: id, line: l}
}

func (w *waiter) TryComplete() bool {
	w.Op.TryComplete() // counts it
	w.line.mu.Lock()
	defer w.line.mu.Unlock()
	w.line.tries = append(w.line.tries, w.id)
	if w.line.items == 0 {
		return false
	}
	w.line.items--
	w.line.served = append(w.line.served, w.id)
	return true
}

// watchAll adds the waiters on key, each after the one before.
func watchAll(t *testing.T, p *purgatory.Purgatory[string], key string, ws ...*waiter) {
	t.Helper()
	for _, w := range ws {
		require.False(t, p.TryCompleteElseWatch(w, key))
	}
}

// HandOff tries the key's operations in the order they were watched,
// completes each whose TryComplete takes an item, and stops at the first
// that finds none: one push costs a try or two, however many wait.
func TestHandOffStopsAtTheFirstNo(t *testing.T) {
	p := newPurgatory(t)
	l := &line{}
	ws := make([]*waiter, 5)
	for i := range ws {
		ws[i] = newWaiter(l, i, time.Hour)
	}
	watchAll(t, p, "q", ws...)
	l.tries = nil
	l.push(2)
	require.Equal(t, 2, p.HandOff("q"))
	require.Equal(t, []int{0, 1}, l.order())
	require.Equal(t, []int{0, 1, 2}, l.tries, "the third found none, and the walk stopped there")
	require.Equal(t, 3, p.Watched())
	l.tries = nil
	require.Zero(t, p.HandOff("q"), "nothing to hand off")
	require.Equal(t, []int{2}, l.tries)
	l.push(1)
	require.Equal(t, 1, p.HandOff("q"))
	require.Equal(t, []int{0, 1, 2}, l.order())
	require.NoError(t, p.ListsAtRest())
	require.Zero(t, p.HandOff("nobody"))
}

// HandOff passes over what it cannot try: ended operations, operations
// waiting for a level the key has not reached, and one whose try runs on
// another goroutine (which that goroutine makes once more); none of them
// counts as a "no".
func TestHandOffPassesOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		l := &line{}
		expired := newWaiter(l, 0, time.Millisecond)
		busy := &gatedWaiter{waiter: newWaiter(l, 1, time.Hour), entered: make(chan struct{}), answer: make(chan bool)}
		leveled := newWaiter(l, 2, time.Hour)
		last := newWaiter(l, 3, time.Hour)
		require.False(t, p.TryCompleteElseWatch(expired, "q"))
		require.False(t, p.TryCompleteElseWatch(busy, "q", "other")) // tried under the try bit
		require.False(t, p.TryCompleteElseWatchAt(leveled, purgatory.At("q", 10)))
		require.False(t, p.TryCompleteElseWatch(last, "q"))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, purgatory.Expired, expired.Outcome())

		busy.hold = true
		walked := make(chan int)
		go func() { walked <- p.CheckAndComplete("other") }()
		<-busy.entered // its try runs on the other goroutine
		l.tries = nil
		l.push(1)
		require.Equal(t, 1, p.HandOff("q"))
		require.Equal(t, []int{3}, l.order(), "the one it could try, and nothing waiting for level 10")
		busy.answer <- false
		require.Zero(t, <-walked)
		require.Equal(t, purgatory.Pending, leveled.Outcome())
		require.NoError(t, p.ListsAtRest())
	})
}

// gatedWaiter is a waiter whose next try, once held, waits for the test's
// answer.
type gatedWaiter struct {
	*waiter
	hold    bool
	entered chan struct{}
	answer  chan bool
}

func (g *gatedWaiter) TryComplete() bool {
	if g.hold {
		g.hold = false
		g.entered <- struct{}{}
		return <-g.answer
	}
	return g.waiter.TryComplete()
}

// A HandOff that finds its key walked asks the walk for one more round and
// returns 0; the round stops at its first no. If a CheckAndComplete asked
// too, the round tries every operation.
func TestHandOffDuringAWalk(t *testing.T) {
	for _, alsoChecked := range []bool{false, true} {
		t.Run(fmt.Sprintf("alsoChecked=%v", alsoChecked), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPurgatory(t)
				l := &line{}
				first := &gatedWaiter{waiter: newWaiter(l, 0, time.Hour), entered: make(chan struct{}), answer: make(chan bool)}
				rest := []*waiter{newWaiter(l, 1, time.Hour), newWaiter(l, 2, time.Hour), newWaiter(l, 3, time.Hour)}
				require.False(t, p.TryCompleteElseWatch(first, "q"))
				watchAll(t, p, "q", rest...)
				first.hold = true
				walked := make(chan int)
				go func() { walked <- p.HandOff("q") }()
				<-first.entered
				l.tries = nil
				l.push(1)
				require.Zero(t, p.HandOff("q"), "the walk under way hands it off")
				if alsoChecked {
					require.Zero(t, p.CheckAndComplete("q"))
				}
				first.answer <- false // the first round's no
				require.Equal(t, 1, <-walked, "its next round served the push")
				if alsoChecked {
					require.Equal(t, []int{0, 1, 2, 3}, l.tries, "a round over every operation")
				} else {
					require.Equal(t, []int{0, 1}, l.tries, "a hand-off round: first is served, the next finds none")
				}
				require.Equal(t, []int{0}, l.order())
			})
		})
	}
}

// A TryComplete that panics stops a hand-off where it is (the operation stays
// watched, its timeout running) and the panic goes on; a round asked for
// meanwhile still runs first.
func TestHandOffPanic(t *testing.T) {
	p := newPurgatory(t)
	l := &line{}
	ws := []*waiter{newWaiter(l, 0, time.Hour), newWaiter(l, 1, time.Hour), newWaiter(l, 2, time.Hour)}
	watchAll(t, p, "q", ws...)
	ws[0].OnTry = func() {
		if ws[0].Tries.Load() == 3 { // the hand-off's try
			ws[0].PanicIn.Store(testkit.PanicTry)
			require.Zero(t, p.HandOff("q"), "asks the walk under way for one more round")
		}
	}
	l.push(2)
	l.tries = nil
	require.True(t, testkit.PanickedInjected(t, func() { p.HandOff("q") }))
	// The first round stopped at 0's panic (1 did not take an item in it);
	// the round asked for served 0 and 1 and stopped at 2.
	require.Equal(t, []int{0, 1, 2}, l.tries)
	require.Equal(t, []int{0, 1}, l.order())
	require.Equal(t, purgatory.Pending, ws[2].Outcome())
	require.Zero(t, p.HandOff("q"))
	require.NoError(t, p.ListsAtRest())
}

// Issue 44, item 2: first come, first served. Plain watches are tried in the
// order they were added, through timeouts, ForceComplete, cancellation
// under another key, compaction and reuse; a level watch joins that order
// when Advance reaches it, lowest level first and, among equal levels, in the
// order added.
func TestFirstComeFirstServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		l := &line{}
		var ws []*waiter
		add := func(timeout time.Duration, keys ...string) *waiter {
			w := newWaiter(l, len(ws), timeout)
			ws = append(ws, w)
			require.False(t, p.TryCompleteElseWatch(w, keys...))
			return w
		}
		for i := range 40 {
			switch {
			case i%4 == 1:
				add(time.Millisecond, "q") // expires: leaves gaps, then the list compacts
			case i%10 == 3:
				add(time.Hour, "q", fmt.Sprint("other", i)) // cancelled under its other key
			default:
				add(time.Hour, "q")
			}
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Len(t, p.CancelForKey("other3"), 1)
		require.True(t, purgatory.ForceComplete(ws[6]))

		// A reused operation, completed and passed again, waits last.
		l.push(1)
		require.Equal(t, 1, p.HandOff("q"))
		require.Equal(t, []int{0}, l.order())
		ws[0].Ready.Store(false)
		require.False(t, p.TryCompleteElseWatch(ws[0], "q"))

		// Level watches, added out of order, reached by one Advance.
		lv := func(level int64) *waiter {
			w := newWaiter(l, len(ws), time.Hour)
			ws = append(ws, w)
			require.False(t, p.TryCompleteElseWatchAt(w, purgatory.At("q", level)))
			return w
		}
		lv(30)
		lv(10)
		lv(20)
		lv(10)
		lv(99) // not reached
		require.Zero(t, p.Advance("q", 50))

		var want []int
		for i, w := range ws[1:40] {
			if id := i + 1; w.Outcome() == purgatory.Pending {
				want = append(want, id)
			}
		}
		want = append(want, 0, 41, 43, 42, 40) // the reused one; levels 10, 10, 20, 30
		l.push(len(want) + 5)
		require.Equal(t, len(want), p.HandOff("q"))
		require.Equal(t, want, l.order()[1:], "served in the order they came")
		require.Equal(t, purgatory.Pending, ws[44].Outcome(), "level 99 was not reached")
		require.NoError(t, p.ListsAtRest())
	})
}

// A hand-off passes and compacts only what it reads, however many wait: with
// 10,000 waiters, each push is one try that takes and one that finds none,
// and the list holds only live operations afterwards.
func TestHandOffTriesTwoPerPush(t *testing.T) {
	p := newPurgatory(t)
	l := &line{}
	ws := make([]*waiter, 10_000)
	for i := range ws {
		ws[i] = newWaiter(l, i, time.Hour)
		require.False(t, p.TryCompleteElseWatch(ws[i], "q"))
	}
	l.tries = nil
	for range 1000 {
		l.push(1)
		require.Equal(t, 1, p.HandOff("q"))
	}
	require.Len(t, l.tries, 2000)
	require.Len(t, l.order(), 1000)
	require.Equal(t, 9000, p.Watched())
	require.NoError(t, p.ListsAtRest())
}

// Wait follows the hand-off rule: a ready that took its item completes the
// wait, even as its timeout passes during that very try, and Wait returns
// only once no try of its wait can still run.
func TestWaitTakesWhatItCompletesWith(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		entered, answer := make(chan struct{}), make(chan bool)
		var tries int
		ready := func() bool {
			tries++
			if tries == 3 {
				entered <- struct{}{}
				return <-answer
			}
			return false
		}
		got := make(chan purgatory.Outcome)
		go func() { got <- p.Wait(context.Background(), time.Second, ready, "q") }()
		synctest.Wait()
		walked := make(chan int)
		go func() { walked <- p.HandOff("q") }()
		<-entered
		time.Sleep(2 * time.Second) // the timeout passes during the try
		synctest.Wait()
		select {
		case o := <-got:
			t.Fatalf("Wait returned %v while its ready ran", o)
		default:
		}
		answer <- true
		require.Equal(t, 1, <-walked)
		require.Equal(t, purgatory.Completed, <-got)
	})
}
