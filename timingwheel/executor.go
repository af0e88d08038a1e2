package timingwheel

import (
	"sync"
)

// DefaultMaxWorkers is the default executor's bound on goroutines that run
// callbacks at once.
const DefaultMaxWorkers = 256

// An Executor decides where the callbacks of due timers run. Make one with
// [InlineExecutor] or [PoolExecutor] and pass it to [WithExecutor].
type Executor struct {
	inline  bool
	workers int
}

// InlineExecutor runs callbacks one after another on the driver goroutine (or on
// the goroutine calling AdvanceClock). It is the fastest choice for short
// callbacks, but a slow callback delays every timer behind it.
func InlineExecutor() Executor { return Executor{inline: true} }

// PoolExecutor runs callbacks on up to maxWorkers goroutines that are started
// when due timers arrive and exit when none are left, so an idle wheel holds
// none. The driver only appends to the pool's queue, so a slow callback never
// holds it up, and a burst of a million due timers starts at most maxWorkers
// goroutines. It is the default, with [DefaultMaxWorkers].
func PoolExecutor(maxWorkers int) Executor { return Executor{workers: maxWorkers} }

// executor is what the TimingWheel drives: it hands over each batch of due
// timers. (Shutdown waits for them through the wheel's inflight count, so the
// executor need not know which goroutines run them.)
type executor interface {
	// execute runs or queues every timer in due; it keeps no reference to due.
	execute(due []*Timer)
}

type inline struct{ run func(*Timer) }

func (x inline) execute(due []*Timer) {
	for _, t := range due {
		x.run(t)
	}
}

// perWorker is how many queued callbacks justify starting one more worker: a
// burst of n due timers starts about n/perWorker workers (at least one, at most
// the maximum), which keeps goroutine start-up out of the per-callback cost while
// letting new timers run beside a worker that is stuck in a slow callback.
const perWorker = 64

// maxIdleQueue is the largest queue capacity a drained pool keeps.
const maxIdleQueue = 4096

type pool struct {
	run func(*Timer)
	max int

	mu      sync.Mutex // guards everything below
	queue   []*Timer
	head    int // queue[head:] is waiting to run
	workers int
}

func newPool(maxWorkers int, run func(*Timer)) *pool {
	return &pool{run: run, max: maxWorkers}
}

func (p *pool) execute(due []*Timer) {
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
	start := min(p.max-p.workers, (len(due)+perWorker-1)/perWorker)
	p.workers += start
	p.mu.Unlock()
	for range start {
		go p.work()
	}
}

func (p *pool) work() {
	p.mu.Lock()
	for p.head < len(p.queue) {
		t := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		p.mu.Unlock()
		p.run(t)
		p.mu.Lock()
	}
	p.queue, p.head = p.queue[:0], 0
	if cap(p.queue) > maxIdleQueue {
		p.queue = nil // let a burst's backing array go
	}
	p.workers--
	p.mu.Unlock()
}
