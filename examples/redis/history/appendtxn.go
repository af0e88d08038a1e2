package history

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// The list-append workload, Elle's as Jepsen's Redis tests run it: clients
// run transactions of 1 to 4 operations, each an append of a unique value
// to one of three lists (RPUSH) or a read of one (LRANGE), in MULTI/EXEC,
// until every list has had 256 appends; now and then a client is killed
// once its transaction is written, so that whether it took effect is
// unknown. The history is checked for linearizability with porcupine: a
// transaction whose answer never came may have taken effect at any point
// after its call, or not at all (as etcd's robustness tests treat a failed
// request: its return is put after every other operation, and any answer
// is accepted).

const appendKeys = 3

// Micro is one operation of a transaction: an append of Value to Key, or a
// read of Key.
type Micro struct {
	Key    int
	Append bool
	Value  string
}

// TxnResult is what a transaction's EXEC answered: for each read, the list
// it read; Known false if no answer came.
type TxnResult struct {
	Known bool
	Reads [][]string
}

// AppendConfig says how to run the list-append workload.
type AppendConfig struct {
	Addr      string
	Seed      uint64
	Clients   int
	MaxWrites int           // appends per list (256)
	Limit     time.Duration // the run ends then, if the lists are not full yet
}

// AppendHistory is a list-append run: porcupine's operations, each Input a
// []Micro and Output a TxnResult.
type AppendHistory struct {
	Seed       uint64
	Operations []porcupine.Operation
	Killed     int
	Errors     []string
}

type appendRun struct {
	cfg    AppendConfig
	start  time.Time
	writes [appendKeys]atomic.Int64
	mu     sync.Mutex
	h      AppendHistory
}

// RunAppend runs the list-append workload and returns its history.
func RunAppend(cfg AppendConfig) (*AppendHistory, error) {
	admin, err := dial(cfg.Addr)
	if err != nil {
		return nil, err
	}
	defer admin.close()
	if _, err := admin.do("DEL", "a0", "a1", "a2"); err != nil {
		return nil, err
	}
	run := &appendRun{cfg: cfg, start: time.Now(), h: AppendHistory{Seed: cfg.Seed}}
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Go(func() { run.client(i, rand.New(rand.NewPCG(cfg.Seed, uint64(2000+i)))) })
	}
	wg.Wait()
	end := time.Since(run.start).Nanoseconds() + 1
	for i := range run.h.Operations {
		if !run.h.Operations[i].Output.(TxnResult).Known {
			run.h.Operations[i].Return = end + int64(i) // after every other
		}
	}
	_, err = admin.do("DEL", "a0", "a1", "a2")
	return &run.h, err
}

// full reports whether every list has had its appends.
func (run *appendRun) full() bool {
	for i := range run.writes {
		if run.writes[i].Load() < int64(run.cfg.MaxWrites) {
			return false
		}
	}
	return true
}

func (run *appendRun) client(id int, r *rand.Rand) {
	var c *conn
	deadline := run.start.Add(run.cfg.Limit)
	for n := 0; !run.full() && time.Now().Before(deadline); n++ {
		if c == nil {
			var err error
			if c, err = dial(run.cfg.Addr); err != nil {
				run.fail(err)
				return
			}
		}
		txn := run.txn(id, n, r)
		if !run.exec(id, c, txn, r.IntN(50) == 0) {
			c.close()
			c = nil
		}
		time.Sleep(time.Duration(r.IntN(1000)) * time.Microsecond)
	}
	if c != nil {
		c.close()
	}
}

// txn makes a transaction of 1 to 4 operations; a list appends only until
// it has had its writes.
func (run *appendRun) txn(id, n int, r *rand.Rand) []Micro {
	txn := make([]Micro, 1+r.IntN(4))
	for i := range txn {
		m := Micro{Key: r.IntN(appendKeys)}
		if r.IntN(2) == 0 && run.writes[m.Key].Add(1) <= int64(run.cfg.MaxWrites) {
			m.Append, m.Value = true, fmt.Sprintf("c%d-%d-%d", id, n, i)
		}
		txn[i] = m
	}
	return txn
}

// exec runs txn in MULTI/EXEC (killed: the connection is reset as soon as
// it is written) and records it; it reports whether the connection is
// still good.
func (run *appendRun) exec(id int, c *conn, txn []Micro, killed bool) bool {
	cmds := [][]string{{"MULTI"}}
	for _, m := range txn {
		key := "a" + strconv.Itoa(m.Key)
		if m.Append {
			cmds = append(cmds, []string{"RPUSH", key, m.Value})
		} else {
			cmds = append(cmds, []string{"LRANGE", key, "0", "-1"})
		}
	}
	cmds = append(cmds, []string{"EXEC"})
	op := porcupine.Operation{ClientId: id, Input: txn, Call: time.Since(run.start).Nanoseconds()}
	err := c.write(cmds...)
	var res TxnResult
	if killed {
		c.kill(true)
		run.mu.Lock()
		run.h.Killed++
		run.mu.Unlock()
	} else if err == nil {
		res, err = readExec(c, txn)
	}
	op.Output, op.Return = res, time.Since(run.start).Nanoseconds()
	run.record(op, err)
	return err == nil && !killed
}

// readExec reads MULTI's +OK, each +QUEUED and EXEC's answers.
func readExec(c *conn, txn []Micro) (TxnResult, error) {
	for range len(txn) + 1 {
		if _, err := c.read(); err != nil {
			return TxnResult{}, err
		}
	}
	v, err := c.read()
	if err != nil {
		return TxnResult{}, err
	}
	answers, _ := v.([]any)
	if len(answers) != len(txn) {
		return TxnResult{}, fmt.Errorf("history: EXEC answered %v to %d commands", v, len(txn))
	}
	res := TxnResult{Known: true}
	for i, m := range txn {
		if !m.Append {
			res.Reads = append(res.Reads, strs(answers[i]))
		}
	}
	return res, nil
}

func (run *appendRun) record(op porcupine.Operation, err error) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.h.Operations = append(run.h.Operations, op)
	if _, isReply := err.(errReply); isReply {
		run.h.Errors = append(run.h.Errors, err.Error())
	}
}

func (run *appendRun) fail(err error) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.h.Errors = append(run.h.Errors, err.Error())
}

// lists is the model's state: each list, its values joined by spaces.
type lists [appendKeys]string

// appendModel is the lists as a sequential object, for porcupine.
var appendModel = porcupine.Model{
	Init: func() any { return lists{} },
	Step: func(state, input, output any) (bool, any) {
		s, txn, res := state.(lists), input.([]Micro), output.(TxnResult)
		reads := 0
		for _, m := range txn {
			switch {
			case m.Append && s[m.Key] == "":
				s[m.Key] = m.Value
			case m.Append:
				s[m.Key] += " " + m.Value
			case res.Known:
				if strings.Join(res.Reads[reads], " ") != s[m.Key] {
					return false, nil
				}
				reads++
			}
		}
		return true, s
	},
	DescribeOperation: func(input, output any) string { return fmt.Sprintf("%v -> %v", input, output) },
}

// CheckAppend checks a list-append history for linearizability within
// timeout: porcupine.Ok, Illegal, or Unknown if it ran out of time.
func CheckAppend(h *AppendHistory, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(appendModel, h.Operations, timeout)
}
