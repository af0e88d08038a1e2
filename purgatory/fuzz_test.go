package purgatory_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// FuzzPurgatory runs random sequences of add, completion event, check, force,
// cancel and the passing of time on a purgatory in fake time, and on a model
// of plain structs, and requires the same outcome for every operation, the
// same counts from CheckAndComplete and CancelForKey, and the same Stats.
func FuzzPurgatory(f *testing.F) {
	f.Add([]byte{0, 0, 0x13, 1, 0, 0, 2, 0, 0, 5, 7, 0})
	f.Add([]byte{0, 1, 0x2f, 0, 2, 0x71, 4, 1, 0, 3, 2, 0, 5, 5, 0, 5, 5, 0})
	f.Add([]byte{3, 4, 0, 0, 4, 0x11, 0, 5, 0x03, 1, 5, 0, 2, 1, 0, 5, 3, 0, 5, 7, 0})
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
	deadline time.Duration
	ready    bool
	outcome  purgatory.Outcome
	counted  bool // added to the purgatory while pending, so Stats count it
}

func runModel(t *testing.T, prog []byte) {
	p, err := purgatory.New[int]("fuzz")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ops := make([]*testOp, fuzzOps)
	model := make([]modelOp, fuzzOps)
	for i := range ops {
		ops[i] = newOp(0)
	}
	var want purgatory.Stats
	now := time.Duration(0)
	end := func(m *modelOp, o purgatory.Outcome) {
		m.outcome = o
		if !m.counted {
			return
		}
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
	}
	watching := func(key int) []int {
		var ids []int
		for i, m := range model {
			if m.added && m.outcome == purgatory.Pending && slices.Contains(m.keys, key) {
				ids = append(ids, i)
			}
		}
		return ids
	}

	for pc := 0; pc+2 < len(prog); pc += 3 {
		kind, a, b := prog[pc]%6, int(prog[pc+1]), int(prog[pc+2])
		id, key := a%fuzzOps, a%fuzzKeys
		m, op := &model[id], ops[id]
		switch kind {
		case 0: // add, with keys from a bit mask and a timeout of 10–80 ms
			if m.added {
				continue
			}
			mask := b%15 + 1
			var keys []int
			for k := range fuzzKeys {
				if mask&(1<<k) != 0 {
					keys = append(keys, k)
				}
			}
			op.Timeout = time.Duration(b>>4%8+1) * 10 * time.Millisecond
			m.added, m.keys, m.deadline = true, keys, now+op.Timeout
			wantDone := false
			if m.outcome == purgatory.Pending {
				m.counted = true
				want.Added++
				if m.ready {
					wantDone = true
					end(m, purgatory.Completed)
				}
			}
			if got := p.TryCompleteElseWatch(op, keys...); got != wantDone {
				t.Fatalf("step %d: add %d returned %v, model %v", pc/3, id, got, wantDone)
			}
		case 1: // its completion event arrives (nobody checks yet)
			m.ready = true
			op.completable.Store(true)
		case 2: // CheckAndComplete
			var wantN int
			for _, i := range watching(key) {
				if model[i].ready {
					wantN++
					end(&model[i], purgatory.Completed)
				}
			}
			if got := p.CheckAndComplete(key); got != wantN {
				t.Fatalf("step %d: CheckAndComplete(%d) = %d, model %d", pc/3, key, got, wantN)
			}
		case 3: // ForceComplete
			wantWon := m.outcome == purgatory.Pending
			if wantWon {
				end(m, purgatory.Forced)
			}
			if got := purgatory.ForceComplete(op); got != wantWon {
				t.Fatalf("step %d: ForceComplete(%d) = %v, model %v", pc/3, id, got, wantWon)
			}
		case 4: // CancelForKey
			wantIDs := watching(key)
			for _, i := range wantIDs {
				end(&model[i], purgatory.Cancelled)
			}
			got := p.CancelForKey(key)
			if len(got) != len(wantIDs) {
				t.Fatalf("step %d: CancelForKey(%d) returned %d, model %v", pc/3, key, len(got), wantIDs)
			}
			for _, g := range got {
				if !slices.Contains(wantIDs, slices.Index(ops, g.(*testOp))) {
					t.Fatalf("step %d: CancelForKey(%d) returned an operation the model did not", pc/3, key)
				}
			}
		case 5: // time passes: 0–35 ms
			now += time.Duration(a%8) * 5 * time.Millisecond
			time.Sleep(time.Duration(a%8) * 5 * time.Millisecond)
			synctest.Wait()
			for i := range model {
				if mm := &model[i]; mm.added && mm.outcome == purgatory.Pending && mm.deadline <= now {
					end(mm, purgatory.Expired)
				}
			}
		}

		want.Delayed, want.Watched = 0, 0
		for i, mm := range model {
			if got := ops[i].Outcome(); got != mm.outcome {
				t.Fatalf("step %d: operation %d is %v, model %v", pc/3, i, got, mm.outcome)
			}
			if mm.added && mm.counted && mm.outcome == purgatory.Pending {
				want.Delayed++
				want.Watched += len(mm.keys)
			}
		}
		if got := p.Stats(); got != want {
			t.Fatalf("step %d: stats %+v, model %+v", pc/3, got, want)
		}
	}
}
