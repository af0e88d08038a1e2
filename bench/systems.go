package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/collection"

	"github.com/purgatory-go/purgatory/timingwheel"
)

// timers is what the timer workloads (W1–W4) drive: every system behind the
// same two calls.
type timers interface {
	AfterFunc(d time.Duration, f func()) stopper
	Close()
}

type stopper interface{ Stop() bool }

var timerSystems = []string{"wheel", "wheel-inline", "stdlib", "gozero"}

func newTimers(name string) (timers, error) {
	switch name {
	case "wheel":
		return newWheel()
	case "wheel-inline":
		return newWheel(timingwheel.WithExecutor(timingwheel.InlineExecutor()))
	case "stdlib":
		return stdlib{}, nil
	case "gozero":
		return newGoZero()
	}
	return nil, fmt.Errorf("unknown timer system %q (have %v)", name, timerSystems)
}

// wheel is this library's timing wheel with default settings.
type wheel struct{ tw *timingwheel.TimingWheel }

func newWheel(opts ...timingwheel.Option) (timers, error) {
	tw, err := timingwheel.New(opts...)
	if err != nil {
		return nil, err
	}
	if err := tw.Start(); err != nil {
		return nil, err
	}
	return wheel{tw}, nil
}

func (w wheel) AfterFunc(d time.Duration, f func()) stopper { return w.tw.AfterFunc(d, f) }
func (w wheel) Close()                                      { w.tw.Stop() }

// stdlib is time.AfterFunc, the reference every ratio is taken against.
type stdlib struct{}

func (stdlib) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }
func (stdlib) Close()                                      {}

// goZero is go-zero's core/collection.TimingWheel with a 1 ms interval and 2048
// slots, so that every W1 and W4 delay fits in one lap; longer delays (W2's
// parked timers) go round the wheel more than once, as go-zero does.
type goZero struct {
	tw   *collection.TimingWheel
	keys atomic.Int64
}

func newGoZero() (timers, error) {
	tw, err := collection.NewTimingWheel(time.Millisecond, 2048, func(_, v any) { v.(func())() })
	if err != nil {
		return nil, err
	}
	return &goZero{tw: tw}, nil
}

func (g *goZero) AfterFunc(d time.Duration, f func()) stopper {
	key := g.keys.Add(1)
	if err := g.tw.SetTimer(key, f, d); err != nil {
		panic(err)
	}
	return goZeroTimer{g.tw, key}
}

func (g *goZero) Close() { g.tw.Stop() }

type goZeroTimer struct {
	tw  *collection.TimingWheel
	key int64
}

// Stop removes the timer; go-zero does not report whether it had fired.
func (t goZeroTimer) Stop() bool { return t.tw.RemoveTimer(t.key) == nil }
