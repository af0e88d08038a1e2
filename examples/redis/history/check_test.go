package history

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// Each check of CheckQueue and CheckAppend, shown to fail on a history that
// breaks it, and to pass on its sequential twin.

const ms = time.Millisecond

func push(producer, seq int, key string, call, ret time.Duration, vals ...string) Push {
	return Push{Producer: producer, Seq: seq, Key: key, Values: vals, Call: call, Return: ret, Status: OK}
}

func pop(key string, call, ret time.Duration, vals ...string) Pop {
	p := Pop{Cmd: "BLPOP", Keys: []string{key}, Count: 1, Call: call, Return: ret, Blocking: true, Status: OK, Key: key, Values: vals}
	if len(vals) == 0 {
		p.Status, p.Key = Nil, ""
	}
	return p
}

func check(pushes []Push, pops []Pop, final map[string][]string) *QueueReport {
	return CheckQueue(&QueueHistory{Pushes: pushes, Pops: pops, Final: final, Gone: map[int64]time.Duration{}})
}

func TestCheckQueueSequential(t *testing.T) {
	r := check([]Push{push(0, 0, "r0", 0, ms, "a", "b")},
		[]Pop{pop("r0", 2*ms, 3*ms, "a"), pop("r0", 4*ms, 5*ms, "b"), pop("r0", 6*ms, 7*ms)},
		map[string][]string{})
	require.True(t, r.OK(), "%v", r)
	require.Equal(t, 2, r.Read)
}

func TestCheckQueueLostDuplicatedUnexpected(t *testing.T) {
	r := check([]Push{push(0, 0, "r0", 0, ms, "a", "b", "c")},
		[]Pop{pop("r0", 2*ms, 3*ms, "b"), pop("r0", 4*ms, 5*ms, "b"), pop("r0", 6*ms, 7*ms, "z")},
		map[string][]string{"r0": {"c"}})
	require.Equal(t, []string{"a"}, r.Lost)
	require.Len(t, r.Duplicated, 1)
	require.Equal(t, []string{"z"}, r.Unexpected)
}

// An unread value is not lost if a killed pop may have taken it: one that
// asked for its list and could be served while it was at the head.
func TestCheckQueueLostToAKilledPop(t *testing.T) {
	killed := Pop{Cmd: "BLPOP", Keys: []string{"r0"}, Count: 1, Call: ms / 2, Return: 3 * ms, Blocking: true, Status: Unknown, Client: 7}
	h := &QueueHistory{Pushes: []Push{push(0, 0, "r0", ms, 2*ms, "a", "b")},
		Pops: []Pop{killed, pop("r0", 4*ms, 5*ms, "b")}, Final: map[string][]string{}, Gone: map[int64]time.Duration{7: 4 * ms}}
	r := CheckQueue(h)
	require.True(t, r.OK(), "%v", r)
	require.Equal(t, 1, r.LostToKilled)

	h.Gone[7] = ms * 3 / 4 // let go of before a's push was called: it cannot have taken it
	r = CheckQueue(h)
	require.Equal(t, []string{"a"}, r.Lost)

	h.Gone[7] = 4 * ms
	h.Pops[0].Call = 6 * ms // called after b, behind a, had left: a was gone by then
	r = CheckQueue(h)
	require.Equal(t, []string{"a"}, r.Lost)
}

// Issue 71's put-back: b pushed after a (one RPUSH) leaves before a does.
func TestCheckQueueOrder(t *testing.T) {
	r := check([]Push{push(0, 0, "r0", 0, ms, "a", "b")},
		[]Pop{pop("r0", ms, 2*ms, "b"), pop("r0", 3*ms, 4*ms, "a")}, map[string][]string{})
	require.Len(t, r.Order, 1, "%v", r)

	r = check([]Push{push(0, 0, "r0", 0, ms, "a", "b")},
		[]Pop{pop("r0", ms, 2*ms, "b")}, map[string][]string{"r0": {"a"}})
	require.Len(t, r.Order, 1, "a still there at the end, b taken: %v", r)

	r = check([]Push{push(0, 0, "r0", 0, ms, "a"), push(0, 1, "r0", 2*ms, 3*ms, "b")},
		[]Pop{pop("r0", 4*ms, 6*ms, "b"), pop("r0", 5*ms, 7*ms, "a")}, map[string][]string{})
	require.Empty(t, r.Order, "overlapping pops may have taken them in order: %v", r)
}

// A blocking pop that answered nil while its list held a value throughout.
func TestCheckQueueNilWhileHeld(t *testing.T) {
	r := check([]Push{push(0, 0, "r0", 0, ms, "a")},
		[]Pop{pop("r0", 2*ms, 3*ms), pop("r0", 4*ms, 5*ms, "a")}, map[string][]string{})
	require.Len(t, r.NilWhileHeld, 1, "%v", r)

	r = check([]Push{push(0, 0, "r0", 0, ms, "a")},
		[]Pop{pop("r0", 2*ms, 4*ms), pop("r0", 3*ms, 5*ms, "a")}, map[string][]string{})
	require.Empty(t, r.NilWhileHeld, "a taken during the wait: %v", r)
}

func TestCheckAppend(t *testing.T) {
	op := func(client int, call, ret int64, txn []Micro, reads ...[]string) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: txn, Output: TxnResult{Known: true, Reads: reads}}
	}
	appendA := []Micro{{Key: 0, Append: true, Value: "a"}}
	read0 := []Micro{{Key: 0}}
	good := &AppendHistory{Operations: []porcupine.Operation{op(0, 0, 10, appendA), op(1, 20, 30, read0, []string{"a"})}}
	require.Equal(t, porcupine.Ok, CheckAppend(good, time.Second))
	stale := &AppendHistory{Operations: []porcupine.Operation{op(0, 0, 10, appendA), op(1, 20, 30, read0, []string{})}}
	require.Equal(t, porcupine.Illegal, CheckAppend(stale, time.Second), "a read after the append missed it")
	unknown := &AppendHistory{Operations: []porcupine.Operation{
		{ClientId: 0, Call: 0, Return: 100, Input: appendA, Output: TxnResult{}}, op(1, 20, 30, read0, []string{})}}
	require.Equal(t, porcupine.Ok, CheckAppend(unknown, time.Second), "an append of unknown outcome may not have happened")
}
