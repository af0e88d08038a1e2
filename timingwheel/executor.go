package timingwheel

import (
	"sync"
	"sync/atomic"

	"github.com/purgatory-go/purgatory/internal/sched"
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
// executor need not know which goroutines run them.) Each executor calls its
// wake function once a batch is visible to load, so that the stuck-callback
// sampler samples it.
type executor interface {
	// execute runs or queues every job in due; it keeps no reference to due.
	// driving tells whether the caller is the driver goroutine (or
	// AdvanceClock's caller), for an executor that runs jobs on the caller.
	execute(due []job, driving bool)
	// load reports the callbacks running and queued, for Stats and the
	// watchdog, and with named the handlers of those running.
	load(named bool) load
}

// A job is a due timer with the deadline it had when it was taken out of its
// shard, read under the shard's lock: a Reset of a handed timer may change
// t.when before the callback runs.
type job struct {
	t    *timer
	when instant
}

// load is what an executor is doing at one moment.
type load struct {
	busy     int       // callbacks running
	capacity int       // callbacks that may run at once: 1, or the pool's bound
	queued   int       // callbacks handed over and not yet started
	head     instant   // the deadline of the first queued one, if any
	finished int64     // callbacks that have returned, ever: progress
	running  []Handler // the callbacks running, when asked for
}

// quiet reports whether no callback runs or waits.
func (l load) quiet() bool { return l.busy == 0 && l.queued == 0 }

// inline runs each batch on the goroutine that hands it over. For Stats and
// the watchdog it keeps a copy of the batch, written under mu once per batch,
// and the position in it, one atomic store per callback: reading the batch
// itself would race with the driver refilling it.
type inline struct {
	run    func(job)
	wake   func()                         // after a batch is visible to load: the stuck-callback sampler's Wake
	resume func(rest []job, driving bool) // after a callback ended the goroutine: runs rest on another
	pos    atomic.Int64                   // 1 + the index in batch of the callback running; 0 between batches

	mu       sync.Mutex // guards batch and finished
	batch    []job
	finished int64 // callbacks of earlier batches
}

func (x *inline) execute(due []job, driving bool) {
	x.mu.Lock()
	x.batch = append(x.batch[:0], due...)
	x.mu.Unlock()
	x.wake()
	returned := false
	defer func() {
		if !returned {
			x.goexited(driving)
		}
	}()
	for i, j := range due {
		x.pos.Store(int64(i + 1))
		x.run(j)
	}
	returned = true
	x.pos.Store(0)
	x.finish(len(due))
}

// finish ends a batch of which n callbacks have returned, and returns a copy
// of the rest, which will run elsewhere (nil if none is left).
func (x *inline) finish(n int) (rest []job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	rest = append(rest, x.batch[n:]...)
	x.finished += int64(n)
	clear(x.batch) // drop the references
	x.batch = x.batch[:0]
	if cap(x.batch) > maxIdleQueue {
		x.batch = nil
	}
	return rest
}

// goexited is execute's way out when a callback called runtime.Goexit
// (t.FailNow in a test's callback, say), which ends the goroutine that runs
// the batch: the rest of the batch runs, in order, on a new goroutine, which
// then drives the wheel if the ended one did (resume). Under a manual clock
// the rest runs on a goroutine of its own, beside the caller's next
// AdvanceClock.
func (x *inline) goexited(driving bool) {
	n := int(x.pos.Load()) // the one that ended it has returned
	x.pos.Store(0)
	x.resume(x.finish(n), driving)
}

func (x *inline) load(named bool) load {
	x.mu.Lock()
	defer x.mu.Unlock()
	l := load{capacity: 1, finished: x.finished}
	pos := int(x.pos.Load())
	if pos == 0 || pos > len(x.batch) {
		return l // between batches (pos is stored after the copy, and cleared before it is dropped)
	}
	l.busy = 1
	l.finished += int64(pos - 1) // the ones before it have returned
	if l.queued = len(x.batch) - pos; l.queued > 0 {
		l.head = x.batch[pos].when
	}
	if named {
		l.running = append(l.running, x.batch[pos-1].t.h) // h is immutable once set
	}
	return l
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
	run  func(job)
	wake func() // after jobs are queued: the stuck-callback sampler's Wake
	max  int

	mu       sched.WheelMutex // guards everything below
	queue    []job
	head     int       // queue[head:] is waiting to run
	workers  int       // started and not yet exited
	spare    int       // workers not inside a callback
	finished int64     // callbacks that have returned
	slots    []*worker // one per worker, in no order
}

// worker is what the watchdog sees of a pool worker: the job it runs. A
// worker lists itself in slots once, when it starts, so that naming what runs
// costs a callback two stores under mu and no more.
type worker struct {
	j    job
	busy bool
	i    int // its index in slots
}

func newPool(maxWorkers int, run func(job), wake func()) *pool {
	return &pool{run: run, wake: wake, max: maxWorkers}
}

func (p *pool) execute(due []job, _ bool) {
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
	p.wake()
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
	w := &worker{}
	p.mu.Lock()
	w.i = len(p.slots)
	p.slots = append(p.slots, w)
	returned := false
	defer func() {
		if !returned {
			p.goexited(w)
		}
	}()
	for p.head < len(p.queue) {
		w.j, w.busy = p.queue[p.head], true
		p.queue[p.head] = job{}
		p.head++
		p.spare--
		start := p.needSpare()
		p.mu.Unlock()
		if start {
			go p.work()
		}
		p.run(w.j)
		p.mu.Lock()
		w.j, w.busy = job{}, false
		p.spare++
		p.finished++
	}
	p.queue, p.head = p.queue[:0], 0
	if cap(p.queue) > maxIdleQueue {
		p.queue = nil // let a burst's backing array go
	}
	p.leave(w)
	p.mu.Unlock()
	returned = true
}

// leave takes the spare worker w off the pool; the caller holds mu.
func (p *pool) leave(w *worker) {
	last := p.slots[len(p.slots)-1]
	last.i, p.slots[w.i] = w.i, last
	p.slots[len(p.slots)-1] = nil
	p.slots = p.slots[:len(p.slots)-1]
	p.workers--
	p.spare--
}

// goexited takes off the pool the busy worker w, whose goroutine a callback
// ended (runtime.Goexit: t.FailNow in a test's callback, say), and starts a
// worker in its place if callbacks wait for one. Without it the worker would
// stay counted, busy, for good: one place fewer under the bound, until no
// timer fires.
func (p *pool) goexited(w *worker) {
	p.mu.Lock()
	w.j, w.busy = job{}, false
	p.finished++
	p.spare++ // not inside a callback any more; leave takes it off
	p.leave(w)
	start := p.needSpare()
	p.mu.Unlock()
	if start {
		go p.work()
	}
}

func (p *pool) load(named bool) load {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := load{busy: p.workers - p.spare, capacity: p.max, queued: len(p.queue) - p.head, finished: p.finished}
	if l.queued > 0 {
		l.head = p.queue[p.head].when
	}
	if named {
		for _, w := range p.slots {
			if w.busy {
				l.running = append(l.running, w.j.t.h)
			}
		}
	}
	return l
}
