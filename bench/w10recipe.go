package main

// This file is docs/api.md's connection pool, its declarations line for line
// (TestRecipeIsAPIMd holds them to it): W10's "recipe" system runs the pool
// exactly as a reader would copy it.

import (
	"context"
	"sync"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// Conn is a pooled connection.
type Conn struct{ ID int }

// Pool lends its connections to one acquire at a time each.
type Pool struct {
	mu       sync.Mutex // guards idle; held by Release's HandOff and Acquire's add
	idle     []*Conn
	acquires *purgatory.Purgatory[string]
	free     sync.Pool // *acquire: an acquire's operation, reused once its Wait returns
}

// acquire is a waiting Acquire; its TryComplete takes an idle connection.
type acquire struct {
	purgatory.Op
	pool *Pool
	conn *Conn
}

func (a *acquire) TryComplete() bool { // pool.mu is held
	a.conn = a.pool.take()
	return a.conn != nil
}
func (a *acquire) OnComplete()   {}
func (a *acquire) OnExpiration() {}

// take pops an idle connection, nil if none is; p.mu is held.
func (p *Pool) take() *Conn {
	n := len(p.idle) - 1
	if n < 0 {
		return nil
	}
	c := p.idle[n]
	p.idle = p.idle[:n]
	return c
}

// Release returns c to the pool, to the acquire that has waited longest if
// one waits.
func (p *Pool) Release(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, c)
	p.acquires.HandOff("conns")
}

// Acquire returns a connection (Completed), or nil and how the wait ended:
// Expired after wait (at once for a wait of zero: a poll), ContextDone, Closed.
func (p *Pool) Acquire(ctx context.Context, wait time.Duration) (*Conn, purgatory.Outcome) {
	p.mu.Lock()
	if c := p.take(); c != nil || wait <= 0 { // an idle one (no acquire waits, or it would have it), or a poll
		p.mu.Unlock()
		if c == nil {
			return nil, purgatory.Expired
		}
		return c, purgatory.Completed
	}
	a, _ := p.free.Get().(*acquire)
	if a == nil {
		a = &acquire{pool: p}
	}
	a.Timeout, a.Context, a.conn = wait, ctx, nil
	parked, _ := p.acquires.TryCompleteElsePark(a, "conns")
	p.mu.Unlock()
	out := parked.Wait() // the use is over when Wait returns: a is ours again
	c := a.conn
	a.Context = nil
	p.free.Put(a)
	return c, out
}
