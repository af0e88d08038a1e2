package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// report is what a load run saw from the clients' side.
type report struct {
	news, timeouts, shed, failed atomic.Int64 // poll answers, by kind
	updates                      atomic.Int64
	mu                           sync.Mutex
	parked                       []time.Duration // update to answer, for polls parked when the update came
	behind                       []time.Duration // the same for polls sent after it (a client back from 503)
	peakGoroutines               int
	peakHeap                     uint64 // bytes in use
	peakParked                   int    // the purgatory's Delayed
	polls                        atomic.Pointer[purgatory.Purgatory[string]]
}

// drive serves the API on ln and drives it through dial for c.duration:
// c.pollers clients each poll one of c.jobs jobs in a loop (backing off for
// Retry-After when shed), while c.updateRate updates a second change random
// jobs. Then it shuts the service down as SIGTERM would.
func drive(ctx context.Context, c config, ln net.Listener, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*report, error) {
	sctx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	served := make(chan error, 1)
	r := &report{}
	c.started = func(p *purgatory.Purgatory[string]) { r.polls.Store(p) }
	go func() { served <- serve(sctx, c, ln, io.Discard) }()

	client := &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConns: c.pollers + 16, MaxIdleConnsPerHost: c.pollers + 16}}
	defer client.CloseIdleConnections()
	lctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	var updated sync.Map // "id/version" -> time of the update
	var wg sync.WaitGroup
	wg.Go(func() { r.sample(lctx) })
	wg.Go(func() { r.update(lctx, c, client, &updated) })
	for i := range c.pollers {
		wg.Go(func() { r.poll(lctx, client, strconv.Itoa(i%c.jobs), &updated) })
	}
	wg.Wait()
	stopServer()
	if err := <-served; err != nil {
		return r, err
	}
	return r, nil
}

// poll is one client: it polls job id until ctx ends.
func (r *report) poll(ctx context.Context, client *http.Client, id string, updated *sync.Map) {
	after := int64(-1) // the first poll answers at once with the current version
	for ctx.Err() == nil {
		sent := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://longpoll/jobs/"+id+"?after="+strconv.FormatInt(after, 10), nil)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				r.failed.Add(1)
			}
			return
		}
		var j job
		switch resp.StatusCode {
		case http.StatusOK:
			err = json.NewDecoder(resp.Body).Decode(&j)
		case http.StatusServiceUnavailable:
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			r.shed.Add(1)
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			sleep(ctx, time.Duration(wait)*time.Second)
			continue
		default:
			err = fmt.Errorf("status %s", resp.Status)
		}
		resp.Body.Close()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				r.failed.Add(1)
			}
		case after < 0: // the first answer: no news, just where to start
		case j.Version > after:
			r.news.Add(1)
			if v, ok := updated.Load(id + "/" + strconv.FormatInt(j.Version, 10)); ok {
				at := v.(time.Time)
				r.mu.Lock()
				if at.After(sent) {
					r.parked = append(r.parked, time.Since(at))
				} else {
					r.behind = append(r.behind, time.Since(at))
				}
				r.mu.Unlock()
			}
		default:
			r.timeouts.Add(1)
		}
		after = max(after, j.Version)
	}
}

// update changes random jobs at c.updateRate a second, in 1 ms slots.
func (r *report) update(ctx context.Context, c config, client *http.Client, updated *sync.Map) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start, done := time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due := int(now.Sub(start).Seconds() * float64(c.updateRate))
			for ; done < due && ctx.Err() == nil; done++ {
				id := strconv.Itoa(rand.IntN(c.jobs))
				at := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://longpoll/jobs/"+id+"?status=step"+strconv.Itoa(done), nil)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				var j job
				if json.NewDecoder(resp.Body).Decode(&j) == nil {
					updated.Store(id+"/"+strconv.FormatInt(j.Version, 10), at)
					r.updates.Add(1)
				}
				resp.Body.Close()
			}
		}
	}
}

// sample records the process's peak goroutines and heap every 100 ms.
func (r *report) sample(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var m runtime.MemStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			runtime.ReadMemStats(&m)
			r.mu.Lock()
			r.peakGoroutines = max(r.peakGoroutines, runtime.NumGoroutine())
			r.peakHeap = max(r.peakHeap, m.HeapInuse)
			if p := r.polls.Load(); p != nil {
				r.peakParked = max(r.peakParked, p.Delayed())
			}
			r.mu.Unlock()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (r *report) print(out io.Writer, c config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := func(ds []time.Duration, p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return ds[int(p*float64(len(ds)-1))].Round(time.Microsecond)
	}
	bound := strconv.Itoa(c.maxWaiting)
	if c.maxWaiting == 0 {
		bound = "none"
	}
	fmt.Fprintf(out, "load: %d pollers on %d jobs, %d updates/s for %v, bound %s\n", c.pollers, c.jobs, c.updateRate, c.duration, bound)
	fmt.Fprintf(out, "  updates %d; poll answers: %d with news, %d at the wait's end, %d shed (503), %d failed\n",
		r.updates.Load(), r.news.Load(), r.timeouts.Load(), r.shed.Load(), r.failed.Load())
	fmt.Fprintf(out, "  update to answer, parked polls: p50 %v, p99 %v (%d); polls sent after the update: p50 %v, p99 %v (%d)\n",
		q(r.parked, 0.5), q(r.parked, 0.99), len(r.parked), q(r.behind, 0.5), q(r.behind, 0.99), len(r.behind))
	fmt.Fprintf(out, "  peak parked polls %d, peak goroutines %d, peak heap %.1f MiB (clients and server in one process)\n",
		r.peakParked, r.peakGoroutines, float64(r.peakHeap)/(1<<20))
}
