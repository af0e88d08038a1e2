package purgatory_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// FuzzPurgatory runs random sequences of add, completion event, check (also
// one whose walk checks a key from inside a TryComplete: a second walk of the
// same key, or of another, while the first is under way), hand-off (the
// model keeps each key's operations in the order they were watched, and
// stops at the first not ready), force,
// cancel, force a whole key, adds at levels and Advance, the passing of time and panics injected into the callbacks on a
// purgatory in fake time, and on a model of plain structs, and requires the
// same outcome for every operation, the same counts from CheckAndComplete and
// CancelForKey and ForceCompleteForKey (when no panic cut them short), the same panics and the same
// Stats. An operation that has ended is passed again as a new use (its
// callbacks have returned by the next step): the model starts it afresh, and
// each use the purgatory is done with must be recycled exactly once, after it
// ends and before the operation is passed again. At the end every key must
// still be free and, after Close, the books must balance with nothing delayed
// or watched.
func FuzzPurgatory(f *testing.F) {
	f.Add([]byte{0, 0, 0x13, 1, 0, 0, 2, 0, 0, 5, 7, 0})
	f.Add([]byte{0, 1, 0x2f, 0, 2, 0x71, 4, 1, 0, 3, 2, 0, 5, 5, 0, 5, 5, 0})
	f.Add([]byte{3, 4, 0, 0, 4, 0x11, 0, 5, 0x03, 1, 5, 0, 2, 1, 0, 5, 3, 0, 5, 7, 0})
	f.Add([]byte{6, 0, 0, 0, 0, 0x11, 6, 1, 1, 0, 1, 0x12, 1, 1, 0, 2, 1, 0, 6, 2, 2, 0, 2, 0x14, 5, 7, 0})
	// Checks from inside a walk: of the same key, then of another.
	f.Add([]byte{0, 0, 0, 0, 1, 0, 1, 1, 0, 2, 0, 128, 0, 2, 0, 0, 5, 1, 1, 2, 0, 1, 5, 0, 2, 0, 129})
	// Adds at levels, advances below and past them, a check of the heap.
	f.Add([]byte{7, 0, 0x21, 7, 1, 0x43, 1, 0, 0, 8, 0, 1, 8, 0, 3, 1, 1, 0, 8, 1, 9, 2, 1, 0, 8, 1, 2})
	// A whole key forced, with a panic armed in one OnComplete.
	f.Add([]byte{0, 0, 0x11, 0, 4, 0x13, 6, 4, 1, 4, 0, 1, 4, 0, 1, 2, 0, 0})
	// An operation used again: completed at once, then parked and completed
	// by a check, then expired, then used once more.
	f.Add([]byte{1, 0, 0, 0, 0, 0x11, 0, 0, 0x11, 1, 0, 0, 2, 0, 0, 0, 0, 0x13, 5, 7, 0, 5, 7, 0, 0, 0, 0x12, 4, 1, 1})
	// Hand-offs: three watched in turn, two made ready (the first and the
	// third), a hand-off that stops at the second; at levels, reached out of
	// order; and one that panics in a TryComplete.
	f.Add([]byte{0, 0, 0x11, 0, 1, 0x11, 0, 2, 0x11, 1, 0, 0, 1, 2, 0, 2, 0, 64, 1, 1, 0, 2, 0, 64})
	f.Add([]byte{7, 0, 0x31, 7, 1, 0x11, 7, 2, 0x11, 1, 0, 0, 1, 1, 0, 1, 2, 0, 8, 0, 9, 2, 0, 64})
	f.Add([]byte{0, 0, 0x11, 0, 1, 0x11, 1, 1, 0, 6, 0, 0, 2, 0, 64, 2, 0, 64, 5, 7, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		synctest.Test(t, func(t *testing.T) {
			runModel(t, prog)
		})
	})
}

const fuzzOps, fuzzKeys = 8, 4

type modelOp struct {
	added    bool
	keys     []int
	levels   []int64 // per key, the level it waits for; math.MinInt64 for a plain watch
	deadline time.Duration
	ready    bool
	outcome  purgatory.Outcome
	counted  bool  // added to the purgatory while pending, so Stats count it
	panicIn  int32 // the callback armed to panic once, as testkit.Op.PanicIn
	bound    bool  // a TryCompleteElseWatch took it: it may be used again once ended
	recycled int32 // uses that ended, were counted, and so must be recycled
	use      int   // the current use's number
}

// placed is an operation's use in a key's list, in the order watched: a
// HandOff tries them in that order.
type placed struct{ id, use int }

// leveled is a use waiting in a key's level heap.
type leveled struct {
	placed
	level int64
	seq   int
}

func runModel(t *testing.T, prog []byte) {
	p, err := purgatory.New[int]("fuzz", purgatory.WithPanicHandler(func(any) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ops := make([]*testkit.Op, fuzzOps)
	model := make([]modelOp, fuzzOps)
	for i := range ops {
		ops[i] = testkit.NewOp(0)
	}
	var want purgatory.Stats
	now := time.Duration(0)
	// fires reports whether m's callback in panics now, and disarms it.
	fires := func(m *modelOp, in int32) bool {
		if m.panicIn != in {
			return false
		}
		m.panicIn = 0
		return true
	}
	end := func(m *modelOp, o purgatory.Outcome) (panicked bool) {
		m.outcome = o
		if o != purgatory.Cancelled {
			panicked = fires(m, testkit.PanicComplete) || o == purgatory.Expired && fires(m, testkit.PanicExpire)
		}
		if !m.counted {
			return panicked
		}
		m.recycled++
		switch o {
		case purgatory.Completed:
			want.Completed++
		case purgatory.Forced:
			want.Forced++
		case purgatory.Expired:
			want.Expired++
		case purgatory.Cancelled:
			want.Cancelled++
		}
		return panicked
	}
	// call runs f and reports whether it panicked with an injected panic.
	call := func(f func()) (panicked bool) {
		defer func() {
			if r := recover(); r != nil {
				if r != testkit.Injected {
					panic(r)
				}
				panicked = true
			}
		}()
		f()
		return false
	}
	watching := func(key int) []int {
		var ids []int
		for i, m := range model {
			if m.counted && m.outcome == purgatory.Pending && slices.Contains(m.keys, key) {
				ids = append(ids, i)
			}
		}
		return ids
	}

	// Each key's list exists from an operation's watch until CancelForKey or
	// ForceCompleteForKey takes it (4 keys never make a shard sweep), and
	// keeps the highest level Advance reported meanwhile.
	var listed [fuzzKeys]bool
	var high [fuzzKeys]int64
	for k := range high {
		high[k] = math.MinInt64
	}
	var order [fuzzKeys][]placed    // each key's entries, in the order they joined
	var waiting [fuzzKeys][]leveled // each key's level heap
	seq := 0
	// reach appends, in level order (ties in the order watched), the uses
	// of key whose level it reached.
	reach := func(key int) {
		slices.SortStableFunc(waiting[key], func(a, b leveled) int { return cmpLevel(a, b) })
		n := 0
		for _, w := range waiting[key] {
			if w.level <= high[key] {
				order[key] = append(order[key], w.placed)
				n++
			}
		}
		waiting[key] = waiting[key][n:]
	}
	// tried reports whether an Advance of key tries m: a plain watcher, or
	// one whose level there the key has reached.
	tried := func(m *modelOp, key int) bool {
		i := slices.Index(m.keys, key)
		return m.levels[i] <= high[key]
	}
	// walked checks a walk of key (CheckAndComplete, or Advance: the
	// operations it tries are those in): each one it tries completes if
	// ready, a TryComplete that panics makes the call panic once the walk
	// is over, and the call returns how many it completed.
	walked := func(step, key int, name string, in func(*modelOp) bool, walk func() int) {
		var wantN int
		wantPanic := false
		for _, i := range watching(key) {
			switch mm := &model[i]; {
			case !in(mm):
			case fires(mm, testkit.PanicTry):
				wantPanic = true
			case mm.ready:
				wantN++
				wantPanic = end(mm, purgatory.Completed) || wantPanic
			}
		}
		var got int
		if panicked := call(func() { got = walk() }); panicked != wantPanic {
			t.Fatalf("step %d: %s panicked %v, model %v", step, name, panicked, wantPanic)
		} else if !panicked && got != wantN {
			t.Fatalf("step %d: %s = %d, model %d", step, name, got, wantN)
		}
	}

	for pc := 0; pc+2 < len(prog); pc += 3 {
		kind, a, b := prog[pc]%9, int(prog[pc+1]), int(prog[pc+2])
		id, key := a%fuzzOps, a%fuzzKeys
		m, op := &model[id], ops[id]
		switch kind {
		case 0, 7: // add, with keys from a bit mask and a timeout of 10–80 ms; 7: at levels (b>>4)+k
			switch {
			case m.added && m.bound && (m.outcome != purgatory.Pending || !m.counted):
				// Ended (or withdrawn): its next use, a new one.
				m.keys, m.levels, m.ready, m.outcome, m.counted = nil, nil, false, purgatory.Pending, false
				m.use++
				op.Ready.Store(false)
			case m.added:
				continue // pending, or forced before it was ever added
			}
			mask := b%15 + 1
			var keys []int
			var levels []int64
			var at []purgatory.Level[int]
			for k := range fuzzKeys {
				if mask&(1<<k) != 0 {
					keys = append(keys, k)
					level := int64(math.MinInt64)
					if kind == 7 {
						level = int64(b>>4 + k)
						at = append(at, purgatory.At(k, level))
					}
					levels = append(levels, level)
				}
			}
			op.Timeout = time.Duration(b>>4%8+1) * 10 * time.Millisecond
			if kind == 7 {
				op.Timeout = time.Duration(a>>3%8+1) * 10 * time.Millisecond
			}
			m.added, m.keys, m.levels, m.deadline = true, keys, levels, now+op.Timeout
			wantDone, wantPanic := false, false
			switch {
			case m.outcome != purgatory.Pending: // forced before it was added
			case fires(m, testkit.PanicTry): // the first try panics: the call is undone
				wantPanic, m.bound = true, true
			default:
				m.bound = true
				m.counted = true
				want.Added++
				if m.ready {
					wantDone = true
					wantPanic = end(m, purgatory.Completed)
				}
			}
			if m.counted && !wantDone {
				for i, k := range keys {
					if !listed[k] {
						high[k] = math.MinInt64 // a new list
					}
					listed[k] = true
					if level := levels[i]; level == math.MinInt64 || level <= high[k] {
						order[k] = append(order[k], placed{id, m.use})
					} else {
						seq++
						waiting[k] = append(waiting[k], leveled{placed{id, m.use}, level, seq})
					}
				}
			}
			var got bool
			add := func() { got = p.TryCompleteElseWatch(op, keys...) }
			if kind == 7 {
				add = func() { got = p.TryCompleteElseWatchAt(op, at...) }
			}
			if panicked := call(add); panicked != wantPanic {
				t.Fatalf("step %d: add %d panicked %v, model %v", pc/3, id, panicked, wantPanic)
			} else if !panicked && got != wantDone {
				t.Fatalf("step %d: add %d returned %v, model %v", pc/3, id, got, wantDone)
			}
		case 1: // its completion event arrives (nobody checks yet)
			m.ready = true
			op.Ready.Store(true)
		case 2: // CheckAndComplete: every operation on the key is tried, panics or not
			if b >= 128 && nestedCheck(t, p, ops, model, watching, end, key, b%fuzzKeys) {
				break
			}
			if b >= 64 { // HandOff: in the order watched, until one is not ready or a callback panics
				wantN, wantPanic := 0, false
				for _, pl := range order[key] {
					mm := &model[pl.id]
					if mm.use != pl.use || !mm.counted || mm.outcome != purgatory.Pending {
						continue // an ended use's entry, or an earlier use's
					}
					if fires(mm, testkit.PanicTry) {
						wantPanic = true
						break
					}
					if !mm.ready {
						break
					}
					wantN++
					if end(mm, purgatory.Completed) {
						wantPanic = true
						break
					}
				}
				var got int
				if panicked := call(func() { got = p.HandOff(key) }); panicked != wantPanic {
					t.Fatalf("step %d: HandOff(%d) panicked %v, model %v", pc/3, key, panicked, wantPanic)
				} else if !panicked && got != wantN {
					t.Fatalf("step %d: HandOff(%d) = %d, model %d", pc/3, key, got, wantN)
				}
				break
			}
			walked(pc/3, key, fmt.Sprintf("CheckAndComplete(%d)", key), func(*modelOp) bool { return true },
				func() int { return p.CheckAndComplete(key) })
		case 3: // ForceComplete; an undone operation cannot be completed
			wantWon := m.outcome == purgatory.Pending && (m.counted || !m.added)
			wantPanic := wantWon && end(m, purgatory.Forced)
			var got bool
			if panicked := call(func() { got = purgatory.ForceComplete(op) }); panicked != wantPanic {
				t.Fatalf("step %d: ForceComplete(%d) panicked %v, model %v", pc/3, id, panicked, wantPanic)
			} else if !panicked && got != wantWon {
				t.Fatalf("step %d: ForceComplete(%d) = %v, model %v", pc/3, id, got, wantWon)
			}
		case 8: // Advance: the key reaches level b%24
			if listed[key] {
				high[key] = max(high[key], int64(b%24))
				reach(key)
			}
			walked(pc/3, key, fmt.Sprintf("Advance(%d, %d)", key, b%24), func(mm *modelOp) bool { return tried(mm, key) },
				func() int { return p.Advance(key, int64(b%24)) })
		case 4: // CancelForKey, or (b odd) ForceCompleteForKey
			listed[key], high[key] = false, math.MinInt64
			order[key], waiting[key] = nil, nil
			if b%2 == 1 {
				wantN, wantPanic := len(watching(key)), false
				for _, i := range watching(key) {
					wantPanic = end(&model[i], purgatory.Forced) || wantPanic
				}
				var got int
				if panicked := call(func() { got = p.ForceCompleteForKey(key) }); panicked != wantPanic {
					t.Fatalf("step %d: ForceCompleteForKey(%d) panicked %v, model %v", pc/3, key, panicked, wantPanic)
				} else if !panicked && got != wantN {
					t.Fatalf("step %d: ForceCompleteForKey(%d) = %d, model %d", pc/3, key, got, wantN)
				}
				break
			}
			wantIDs := watching(key)
			for _, i := range wantIDs {
				end(&model[i], purgatory.Cancelled)
			}
			got := p.CancelForKey(key)
			if len(got) != len(wantIDs) {
				t.Fatalf("step %d: CancelForKey(%d) returned %d, model %v", pc/3, key, len(got), wantIDs)
			}
			for _, g := range got {
				if !slices.Contains(wantIDs, slices.Index(ops, g.(*testkit.Op))) {
					t.Fatalf("step %d: CancelForKey(%d) returned an operation the model did not", pc/3, key)
				}
			}
		case 5: // time passes: 0–35 ms
			now += time.Duration(a%8) * 5 * time.Millisecond
			time.Sleep(time.Duration(a%8) * 5 * time.Millisecond)
			synctest.Wait()
			for i := range model {
				if mm := &model[i]; mm.counted && mm.outcome == purgatory.Pending && mm.deadline <= now {
					if end(mm, purgatory.Expired) {
						want.Panics++ // on the wheel: recovered and reported
					}
				}
			}
		case 6: // arm a panic in one of the operation's callbacks
			m.panicIn = int32(b%3 + 1)
			op.PanicIn.Store(m.panicIn)
		}

		want.Delayed, want.Watched = 0, 0
		for i, mm := range model {
			if got := ops[i].Outcome(); got != mm.outcome {
				t.Fatalf("step %d: operation %d is %v, model %v", pc/3, i, got, mm.outcome)
			}
			if got := ops[i].Recycled.Load(); got != mm.recycled {
				t.Fatalf("step %d: operation %d recycled %d times, model %d", pc/3, i, got, mm.recycled)
			}
			if mm.counted && mm.outcome == purgatory.Pending {
				want.Delayed++
				want.Watched += len(mm.keys)
			}
		}
		if got := p.Stats(); got != want {
			t.Fatalf("step %d: stats %+v, model %+v", pc/3, got, want)
		}
		if err := p.ListsAtRest(); err != nil {
			t.Fatalf("step %d: %v", pc/3, err)
		}
	}

	// Every key is still free (a wedged one deadlocks the bubble), and Close
	// leaves the books balanced whatever panicked.
	for key := range fuzzKeys {
		call(func() { p.CheckAndComplete(key) })
	}
	p.Close()
	st := p.Stats()
	if st.Delayed != 0 || st.Watched != 0 ||
		st.Added != st.Completed+st.Forced+st.Expired+st.ContextDone+st.Cancelled+st.Closed {
		t.Fatalf("after Close: %+v", st)
	}
	for i, m := range model {
		if m.counted && ops[i].Outcome() == purgatory.Pending {
			t.Fatalf("operation %d was added and never ended", i)
		}
	}
}

// nestedCheck runs CheckAndComplete(key) with one of key's operations calling
// CheckAndComplete(key2) from inside its TryComplete, once, if no operation
// involved is armed to panic; it reports whether it ran. Checking its own
// key, that TryComplete first makes another operation of key ready. A walk of the same key returns
// 0 and the walk under way passes again; a walk of another key runs inside
// the first. Between them they complete every ready operation of either key,
// once.
func nestedCheck(t *testing.T, p *purgatory.Purgatory[int], ops []*testkit.Op, model []modelOp,
	watching func(int) []int, end func(*modelOp, purgatory.Outcome) bool, key, key2 int) bool {
	ids := watching(key)
	for _, i := range watching(key2) {
		if !slices.Contains(ids, i) {
			ids = append(ids, i)
		}
	}
	onKey := watching(key)
	if len(onKey) == 0 {
		return false
	}
	for _, i := range ids {
		if model[i].panicIn != 0 {
			return false
		}
	}
	// The hook is the operation watched last. Checking its own key, it
	// first makes the one watched first ready: a completion event on the key
	// from inside a try, for an operation the walk has most likely tried
	// already, so that only the walk's next pass can complete it.
	hook := ops[onKey[len(onKey)-1]]
	var target *testkit.Op
	if key2 == key && len(onKey) > 1 && !model[onKey[0]].ready {
		target = ops[onKey[0]]
		model[onKey[0]].ready = true
	}
	wantN := 0
	for _, i := range ids {
		if model[i].ready {
			wantN++
			end(&model[i], purgatory.Completed)
		}
	}
	inner := -1
	hook.OnTry = func() {
		hook.OnTry = nil
		if target != nil {
			target.Ready.Store(true)
		}
		inner = p.CheckAndComplete(key2)
	}
	outer := p.CheckAndComplete(key)
	hook.OnTry = nil
	switch {
	case inner < 0:
		t.Fatalf("CheckAndComplete(%d) never tried operation %d", key, slices.Index(ops, hook))
	case key2 == key && inner != 0:
		t.Fatalf("CheckAndComplete(%d) inside a walk of the same key = %d, want 0", key, inner)
	case outer+inner != wantN:
		t.Fatalf("CheckAndComplete(%d) = %d with CheckAndComplete(%d) = %d inside it; model %d in all", key, outer, key2, inner, wantN)
	}
	return true
}

// cmpLevel orders level waits by level, then by the order they were watched.
func cmpLevel(a, b leveled) int {
	if a.level != b.level {
		if a.level < b.level {
			return -1
		}
		return 1
	}
	return a.seq - b.seq
}
