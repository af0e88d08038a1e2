package timingwheel

import (
	"sync/atomic"
	"time"
)

// DriverTurn is how long the pool's driver goroutine runs a batch of due
// callbacks itself before it hands what is left of the batch to the pool's
// workers and another goroutine takes over the driving. A callback that
// blocks therefore holds up the timers due with it, and later ones, for at
// most about DriverTurn, after which they run as before: on the pool, beside
// the blocked one, while its bound allows.
//
// Running a batch where its timers were just read saves the hand-over that
// every batch cost before (a goroutine started, and woken on another core).
// Measured against that pool (docs/benchmarks.md, Trials): W4's lateness
// p50 about 3 % lower, W5's CPU per request 1.01× at 10,000 keys and 0.98×
// at 100,000.
const DriverTurn = time.Millisecond

// A turn is one driver goroutine's time at running batches itself (pool.run
// Own). The guard that deposes a driver marks its turn, and the next driver
// gets a new one, so a deposed driver's late compare-and-swap never matches
// the count of the driver after it.
type turn struct {
	// at is how many callbacks of the current batch the driver has taken,
	// or deposed once the guard took the rest of the batch and the driving,
	// or ended once the driver took them all. Only the driver raises it,
	// one compare-and-swap per callback; the guard swaps in deposed, under
	// the pool's mu.
	at atomic.Int64
	w  worker // what a deposed driver becomes: a worker of the pool
}

const (
	deposed = -1
	ended   = -2
)

// runOwn runs due on the driver goroutine that calls it, as the pool's
// worker, and reports whether the caller is still the driver. It queues due
// instead, as execute does, if callbacks wait in the queue already (they go
// first) or every worker is taken (the bound). If the batch outlasts
// DriverTurn, the guard (depose) moves its rest to the queue and starts
// another driver; the deposed one then serves the queue as a worker and
// returns false, and its caller stops driving.
func (p *pool) runOwn(due []job) (driving bool) {
	d := p.seat(due)
	if d == nil {
		p.execute(due)
		return true
	}
	returned := false
	defer func() {
		if !returned {
			p.abandon(d) // a callback ended the goroutine (runtime.Goexit)
		}
	}()
	for i, j := range due {
		if !d.at.CompareAndSwap(int64(i), int64(i+1)) {
			returned = true
			return p.serveDeposed(d)
		}
		p.run(j)
	}
	returned = true
	p.guard.Stop()
	if !d.at.CompareAndSwap(int64(len(due)), ended) {
		return p.serveDeposed(d) // deposed during the last callback
	}
	p.mu.Lock()
	p.batch = nil
	p.workers--
	p.finished += int64(len(due))
	p.mu.Unlock()
	return true
}

// seat makes the driver a busy worker that runs due, makes due visible to
// load and arms the guard, and returns the driver's turn; or it returns nil,
// for due to be queued, if callbacks wait already or every worker is taken.
func (p *pool) seat(due []job) *turn {
	p.mu.Lock()
	if len(due) == 0 || p.head < len(p.queue) || p.workers == p.max {
		p.mu.Unlock()
		return nil
	}
	d := p.own
	d.at.Store(0)
	p.batch = due
	p.workers++
	p.mu.Unlock()
	p.wake()
	p.guard.Reset(DriverTurn)
	return d
}

// depose is the guard, run by a runtime timer DriverTurn after a batch
// began: if the driver still runs it, it takes the rest of the batch and the
// driving from it. A guard that fires late, after the batch ended, finds no
// batch or an ended one and does nothing; one so late that it finds the
// next batch deposes that one early, which costs a takeover and breaks no
// rule.
func (p *pool) depose() {
	p.mu.Lock()
	d := p.own
	k := d.at.Load()
	for p.batch != nil && k >= 0 && !d.at.CompareAndSwap(k, deposed) {
		k = d.at.Load()
	}
	if p.batch == nil || k < 0 {
		p.mu.Unlock()
		return
	}
	start := p.unseat(d, int(k))
	p.mu.Unlock()
	if start {
		go p.work()
	}
	p.takeover()
}

// unseat moves what is left of the driver's batch, after the k callbacks it
// took, to the queue, and lists the driver as a worker: busy with the k-th
// callback if it took any, spare otherwise. It reports whether the caller
// must start a worker (needSpare). The caller holds mu and has swapped
// deposed into d.at.
func (p *pool) unseat(d *turn, k int) (start bool) {
	p.enqueue(p.batch[k:])
	w := &d.w
	w.i = len(p.slots)
	p.slots = append(p.slots, w)
	if k > 0 {
		w.j, w.busy = p.batch[k-1], true
		p.finished += int64(k - 1)
	} else {
		p.spare++
	}
	p.batch = nil
	p.own = &turn{}
	p.takeovers++
	return p.needSpare()
}

// serveDeposed is what a deposed driver does once its callback returns: it
// serves the queue as a worker until the queue is empty, and reports that
// it no longer drives.
func (p *pool) serveDeposed(d *turn) (driving bool) {
	p.mu.Lock() // the guard unseated it under mu: its worker is listed
	w := &d.w
	if w.busy {
		w.j, w.busy = job{}, false
		p.spare++
		p.finished++
	}
	p.serve(w)
	return false
}

// abandon is runOwn's way out when a callback on the driver called
// runtime.Goexit: it unseats the driver as the guard would, unless the guard
// did, starts another driver, and takes the ending goroutine off the pool.
func (p *pool) abandon(d *turn) {
	p.guard.Stop()
	p.mu.Lock()
	start, takeover := false, false
	if k := d.at.Load(); k >= 0 && d.at.CompareAndSwap(k, deposed) {
		start, takeover = p.unseat(d, int(k)), true
	}
	start = p.drop(&d.w) || start // listed by unseat, busy with the callback that ended it
	p.mu.Unlock()
	if start {
		go p.work()
	}
	if takeover {
		p.takeover()
	}
}
