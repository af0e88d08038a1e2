package timingwheel

import (
	"sync"
)

// DefaultMaxWorkers is the default executor's bound on goroutines that run
// callbacks at once.
const DefaultMaxWorkers = 256

// An Executor decides where the callbacks of due timers run. Make one with
// [InlineExecutor] or [PoolExecutor] and pass it to [WithExecutor]; the zero
// Executor is not one.
type Executor struct {
	kind    executorKind
	workers int
}

type executorKind uint8

const (
	unset executorKind = iota
	inlineKind
	poolKind
)

// InlineExecutor runs callbacks one after another on the driver goroutine (or on
// the goroutine calling AdvanceClock). It is the fastest choice for short
// callbacks, but a slow callback delays every timer behind it, and a callback
// that waits for another timer's callback waits forever.
func InlineExecutor() Executor { return Executor{kind: inlineKind} }

// PoolExecutor runs callbacks on up to maxWorkers goroutines that are started
// when due timers arrive and exit when none are left, so an idle wheel holds
// none. The driver only appends to the pool's queue, so a slow callback never
// holds it up, and a burst of a million due timers starts at most maxWorkers
// goroutines. While callbacks wait in the queue, the pool keeps one worker
// that is not inside a callback, starting one if the bound allows: so a
// callback that blocks (even on another timer's callback, due at the same
// time) never holds up the others, until maxWorkers callbacks block at once.
// It is the default, with [DefaultMaxWorkers].
func PoolExecutor(maxWorkers int) Executor { return Executor{kind: poolKind, workers: maxWorkers} }

// executor is what the TimingWheel drives: it hands over each batch of due
// timers. (Shutdown waits for them through the wheel's inflight count, so the
// executor need not know which goroutines run them.)
type executor interface {
	// execute runs or queues every timer in due; it keeps no reference to due.
	execute(due []*timer)
}

type inline struct{ run func(*timer) }

func (x inline) execute(due []*timer) {
	for _, t := range due {
		x.run(t)
	}
}

// maxIdleQueue is the largest queue capacity a drained pool keeps.
const maxIdleQueue = 4096

// pool is the default executor. Its rule: whenever the queue is not empty, a
// spare worker (one not inside a callback: starting, or between two) exists,
// unless max workers exist. A worker that takes a callback and leaves none
// spare behind it starts one more before it runs the callback. So nothing
// queued ever waits only for callbacks that are running, however long they
// run, while the bound allows; and a burst of short callbacks, which workers
// take faster than goroutines start, starts few workers.
type pool struct {
	run func(*timer)
	max int

	mu      sync.Mutex // guards everything below
	queue   []*timer
	head    int // queue[head:] is waiting to run
	workers int // started and not yet exited
	spare   int // workers not inside a callback
}

func newPool(maxWorkers int, run func(*timer)) *pool {
	return &pool{run: run, max: maxWorkers}
}

func (p *pool) execute(due []*timer) {
	if len(due) == 0 {
		return
	}
	p.mu.Lock()
	if p.head > 0 && p.head*2 >= len(p.queue) {
		// Slide the waiting part down so a queue that never quite drains
		// does not grow without bound.
		n := copy(p.queue, p.queue[p.head:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
	p.queue = append(p.queue, due...)
	start := p.needSpare()
	p.mu.Unlock()
	if start {
		go p.work()
	}
}

// needSpare counts one more worker, to be started by the caller, if callbacks
// are queued and no worker is spare to take them; the caller holds mu.
func (p *pool) needSpare() bool {
	if p.spare > 0 || p.workers == p.max || p.head == len(p.queue) {
		return false
	}
	p.workers++
	p.spare++
	return true
}

func (p *pool) work() {
	p.mu.Lock()
	for p.head < len(p.queue) {
		t := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		p.spare--
		start := p.needSpare()
		p.mu.Unlock()
		if start {
			go p.work()
		}
		p.run(t)
		p.mu.Lock()
		p.spare++
	}
	p.queue, p.head = p.queue[:0], 0
	if cap(p.queue) > maxIdleQueue {
		p.queue = nil // let a burst's backing array go
	}
	p.workers--
	p.spare--
	p.mu.Unlock()
}
