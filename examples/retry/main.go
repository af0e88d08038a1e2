// Command retry calls a flaky service many times at once, retrying each failed
// call with exponential backoff and full jitter. Every call has one timer on a
// shared timing wheel, re-armed with Reset after each failure and stopped when
// the call's context is cancelled: no goroutine sleeps per call.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

type config struct {
	calls    int
	failRate float64
	base     time.Duration
	max      time.Duration
	deadline time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.calls, "calls", 10_000, "calls made at once")
	flag.Float64Var(&c.failRate, "fail", 0.7, "probability that one attempt fails")
	flag.DurationVar(&c.base, "base", 10*time.Millisecond, "first backoff; it doubles per failure")
	flag.DurationVar(&c.max, "max", 500*time.Millisecond, "largest backoff")
	flag.DurationVar(&c.deadline, "deadline", 2*time.Second, "each call's context deadline")
	flag.Parse()
	if _, err := run(context.Background(), c, os.Stdout); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

var errFlaky = errors.New("service unavailable")

// retrier runs call until it succeeds or ctx is done, waiting between
// attempts on the wheel. Its Stop, Reset and the attempt itself may race; once
// makes sure the call ends exactly once.
type retrier struct {
	ctx      context.Context
	call     func(context.Context) error
	base     time.Duration
	max      time.Duration
	timer    *timingwheel.Timer
	attempts atomic.Int32
	once     sync.Once
	done     func(attempts int, err error)
}

// retry starts call on tw and reports its end to done, exactly once.
func retry(ctx context.Context, tw *timingwheel.TimingWheel, call func(context.Context) error,
	base, max time.Duration, done func(attempts int, err error)) {
	r := &retrier{ctx: ctx, call: call, base: base, max: max, done: done}
	// An unarmed timer: r.timer is set before any attempt can read it, and
	// Reset(0) then runs the first attempt on the wheel's executor.
	r.timer = tw.NewTimer(r.attempt)
	context.AfterFunc(ctx, func() {
		if r.timer.Stop() { // waiting for a retry: no attempt will run again
			r.finish(ctx.Err())
		} // else an attempt is running and will see ctx.Err() itself
	})
	r.timer.Reset(0)
}

func (r *retrier) attempt() {
	n := r.attempts.Add(1)
	err := r.call(r.ctx)
	switch {
	case err == nil:
		r.finish(nil)
	case r.ctx.Err() != nil:
		r.finish(r.ctx.Err())
	default:
		// Full jitter: a uniform wait up to the exponential backoff, which
		// spreads retries out instead of synchronising them.
		backoff := min(r.max, r.base<<min(n-1, 30))
		r.timer.Reset(rand.N(backoff) + 1)
		if r.ctx.Err() != nil && r.timer.Stop() {
			r.finish(r.ctx.Err()) // cancelled while re-arming
		}
	}
}

func (r *retrier) finish(err error) {
	r.once.Do(func() { r.done(int(r.attempts.Load()), err) })
}

type result struct {
	succeeded, gaveUp int
	attempts          int
	endedTwice        int
}

func run(ctx context.Context, c config, out io.Writer) (result, error) {
	if c.calls < 1 || c.failRate < 0 || c.failRate > 1 || c.base <= 0 || c.max < c.base || c.deadline <= 0 {
		return result{}, errors.New("retry: need calls >= 1, 0 <= fail <= 1, 0 < base <= max, deadline > 0")
	}
	tw, err := timingwheel.New() // running: no Start needed
	if err != nil {
		return result{}, err
	}
	defer tw.Stop()

	flaky := func(context.Context) error {
		if rand.Float64() < c.failRate {
			return errFlaky
		}
		return nil
	}
	var mu sync.Mutex
	var res result
	ended := make([]int, c.calls)
	var wg sync.WaitGroup
	wg.Add(c.calls)
	begin := time.Now()
	for i := range c.calls {
		callCtx, cancel := context.WithTimeout(ctx, c.deadline)
		retry(callCtx, tw, flaky, c.base, c.max, func(attempts int, err error) {
			defer wg.Done()
			defer cancel()
			mu.Lock()
			defer mu.Unlock()
			if ended[i]++; ended[i] > 1 {
				res.endedTwice++
			}
			res.attempts += attempts
			if err == nil {
				res.succeeded++
			} else {
				res.gaveUp++
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(out, "retry: %d calls in %v: %d succeeded, %d gave up at their %v deadline; %.2f attempts per call; %d timers left\n",
		c.calls, time.Since(begin).Round(time.Millisecond), res.succeeded, res.gaveUp, c.deadline,
		float64(res.attempts)/float64(c.calls), tw.Len())
	if res.endedTwice != 0 || res.succeeded+res.gaveUp != c.calls || tw.Len() != 0 {
		return res, fmt.Errorf("retry: accounting failed: %+v", res)
	}
	return res, nil
}
