package history

import (
	"fmt"
	"time"
)

// producer pushes unique values, "p<id>-<n>", one command at a time: a
// push of one value or several, pushes in MULTI/EXEC, pushes pipelined in
// one write, a push of two values pipelined with a pop of the same list (a
// client that hands work on and takes some back, in one write: issue 71's
// reproduction was one), and now and then a push whose connection is killed
// as soon as it is written (its outcome unknown).
type producer struct {
	client
	id, seq int
}

func (p *producer) run() {
	for time.Now().Before(p.rec.until) {
		if _, err := p.conn(); err != nil {
			p.rec.failed(err)
			return
		}
		f := &families[p.r.IntN(2)]
		switch n := p.r.IntN(40); {
		case n < 12:
			p.pushes(f, false, p.one(f, 1))
		case n < 20:
			p.pushes(f, false, p.one(f, 2+p.r.IntN(3)))
		case n < 26:
			p.pushes(f, true, p.one(f, 1), p.one(f, 1+p.r.IntN(2)))
		case n < 32:
			p.pushes(f, false, p.one(f, 1), p.one(f, 1), p.one(f, 1+p.r.IntN(2)))
		case n < 39:
			p.pushPop(f, p.one(f, 2))
		default:
			p.killed(f, p.one(f, 1+p.r.IntN(2)))
		}
		time.Sleep(time.Duration(p.r.IntN(2000)) * time.Microsecond)
	}
	if p.c != nil {
		p.c.close()
	}
}

// one makes a push of n new values to one of f's sources.
func (p *producer) one(f *family, n int) Push {
	ps := Push{Producer: p.id, Seq: p.seq, Key: f.sources[p.r.IntN(len(f.sources))]}
	for range n {
		ps.Values = append(ps.Values, fmt.Sprintf("p%d-%d", p.id, p.seq))
		p.seq++
	}
	return ps
}

func command(f *family, ps Push) []string {
	return append([]string{f.push, ps.Key}, ps.Values...)
}

// pushes writes pss in one write, in MULTI/EXEC if multi, and records each
// with the answer: the count its push left, or Unknown.
func (p *producer) pushes(f *family, multi bool, pss ...Push) {
	var cmds [][]string
	if multi {
		cmds = append(cmds, []string{"MULTI"})
	}
	for _, ps := range pss {
		cmds = append(cmds, command(f, ps))
	}
	if multi {
		cmds = append(cmds, []string{"EXEC"})
	}
	call := p.rec.now()
	status := OK
	if err := p.c.write(cmds...); err != nil {
		p.lose()
		status = Unknown
	}
	for range cmds {
		if status == OK {
			_, status = p.reply()
		}
	}
	ret := p.rec.now()
	for _, ps := range pss {
		ps.Call, ps.Return, ps.Status = call, ret, status
		p.rec.push(ps)
	}
}

// pushPop writes ps and a pop of its list in one write, and records both.
func (p *producer) pushPop(f *family, ps Push) {
	pop := Pop{Cmd: f.pop, Keys: []string{ps.Key}, Count: 1}
	ps.Call = p.rec.now()
	pop.Call, pop.Status = ps.Call, OK
	if err := p.c.write(command(f, ps), []string{f.pop, ps.Key}); err != nil {
		p.lose()
		pop.Status = Unknown
	}
	var v any
	if ps.Status = pop.Status; ps.Status == OK {
		if _, ps.Status = p.reply(); ps.Status == OK {
			v, pop.Status = p.reply()
		} else {
			pop.Status = Unknown
		}
	}
	ps.Return = p.rec.now()
	pop.Return = ps.Return
	if pop.Status == OK {
		pop.Key, pop.Values = ps.Key, []string{v.(string)}
	}
	p.rec.push(ps)
	p.rec.pop(pop)
}

// killed writes a push and kills the connection before its answer.
func (p *producer) killed(f *family, ps Push) {
	ps.Call = p.rec.now()
	p.c.write(command(f, ps))
	ps.Status = Unknown
	p.kill()
	ps.Return = p.rec.now()
	p.rec.push(ps)
}
