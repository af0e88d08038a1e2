// Command broker simulates a message broker's request handling with two
// purgatories on one timing wheel: produce requests wait until enough replicas
// acknowledge (a slow replica makes some time out), and fetch requests
// long-poll until enough bytes arrive or their max wait passes. It serves
// Prometheus metrics, prints a status line per second and a final summary, and
// stops after -duration or on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/purgatory-go/purgatory/metrics"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

type config struct {
	duration       time.Duration
	produceRate    int
	fetchRate      int
	partitions     int
	replicas       int
	acks           int
	produceTimeout time.Duration
	fetchMaxWait   time.Duration
	minBytes       int64
	replicaLatency time.Duration // fast replicas: U[0.1x, x)
	slowLatency    time.Duration // the last replica: U[0.5x, 1.5x)
	metricsAddr    string
	status         time.Duration
}

func main() {
	var c config
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run (Ctrl-C stops earlier)")
	flag.IntVar(&c.produceRate, "rate", 2000, "produce requests per second")
	flag.IntVar(&c.fetchRate, "fetch-rate", 500, "fetch requests per second")
	flag.IntVar(&c.partitions, "partitions", 8, "partitions")
	flag.IntVar(&c.replicas, "replicas", 3, "replicas per partition")
	flag.IntVar(&c.acks, "acks", 0, "acknowledgements a produce request waits for (default: all replicas)")
	flag.DurationVar(&c.produceTimeout, "produce-timeout", 300*time.Millisecond, "produce request timeout")
	flag.DurationVar(&c.fetchMaxWait, "fetch-max-wait", 250*time.Millisecond, "fetch long-poll max wait")
	flag.Int64Var(&c.minBytes, "min-bytes", 64<<10, "bytes a fetch waits for")
	flag.DurationVar(&c.replicaLatency, "replica-latency", 20*time.Millisecond, "fast replicas acknowledge within U[0.1x, x)")
	flag.DurationVar(&c.slowLatency, "slow-replica-latency", 400*time.Millisecond, "the last replica acknowledges within U[0.5x, 1.5x)")
	flag.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:2112", "serve Prometheus metrics at http://ADDR/metrics (empty: off)")
	flag.Parse()
	c.status = time.Second

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, c, os.Stdout); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// summary is what a run did, request by request.
type summary struct {
	produces, fetches   purgatory.Stats
	producesIssued      int64
	fetchesIssued       int64
	producesEnded       int64
	fetchesEnded        int64
	endedTwice          int64
	acksLeftOnShutdown  int
	wheelCallbackPanics int64
}

func (c *config) validate() error {
	if c.acks == 0 {
		c.acks = c.replicas
	}
	switch {
	case c.duration <= 0, c.produceRate < 0, c.fetchRate < 0, c.partitions < 1, c.replicas < 1:
		return errors.New("broker: need -duration > 0, rates >= 0, at least 1 partition and 1 replica")
	case c.acks < 1 || c.acks > c.replicas:
		return fmt.Errorf("broker: -acks %d must be between 1 and -replicas %d", c.acks, c.replicas)
	case c.produceTimeout <= 0, c.fetchMaxWait <= 0, c.minBytes < 1, c.replicaLatency <= 0, c.slowLatency <= 0:
		return errors.New("broker: timeouts, latencies and -min-bytes must be positive")
	}
	return nil
}

func run(ctx context.Context, c config, out io.Writer) (summary, error) {
	if err := c.validate(); err != nil {
		return summary{}, err
	}
	// One wheel for both purgatories' timeouts, made here so that its
	// lateness histogram can be exported; each name is given once, and each
	// collector is handed the observer whose histogram it exports.
	lateness := metrics.NewTimingWheelObserver(nil)
	tw, err := timingwheel.New(timingwheel.WithObserver(lateness))
	if err != nil {
		return summary{}, err
	}
	produceTimes, fetchTimes := metrics.NewPurgatoryObserver(nil), metrics.NewPurgatoryObserver(nil)
	produces, err := purgatory.New[partition]("produce", purgatory.WithTimingWheel(tw), purgatory.WithObserver(produceTimes))
	if err != nil {
		return summary{}, err
	}
	fetches, err := purgatory.New[partition]("fetch", purgatory.WithTimingWheel(tw), purgatory.WithObserver(fetchTimes))
	if err != nil {
		return summary{}, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		metrics.NewPurgatoryCollector(produces, metrics.WithDurationHistogram(produceTimes)),
		metrics.NewPurgatoryCollector(fetches, metrics.WithDurationHistogram(fetchTimes)),
		metrics.NewTimingWheelCollector(tw, "broker", metrics.WithLatenessHistogram(lateness)),
	)
	if c.metricsAddr != "" {
		stopServer, err := serve(c.metricsAddr, reg, out)
		if err != nil {
			return summary{}, err
		}
		defer stopServer()
	}

	b := newBroker(c.partitions, c.replicas, tw, produces, fetches)
	var s summary
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.producesIssued = produceLoad(ctx, b, c) })
	wg.Go(func() { s.fetchesIssued = fetchLoad(ctx, b, c) })

	fmt.Fprintf(out, "broker: %d produce/s and %d fetch/s on %d partitions, %d replicas (acks=%d), for %v\n",
		c.produceRate, c.fetchRate, c.partitions, c.replicas, c.acks, c.duration)
	tick := time.NewTicker(c.status)
	begin, last := time.Now(), [2]purgatory.Stats{}
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			now := [2]purgatory.Stats{produces.Stats(), fetches.Stats()}
			fmt.Fprintf(out, "%4.0fs  produce +%d completed +%d expired | fetch +%d completed +%d expired | watched %d delayed %d | timers %d\n",
				time.Since(begin).Seconds(),
				now[0].Completed-last[0].Completed, now[0].Expired-last[0].Expired,
				now[1].Completed-last[1].Completed, now[1].Expired-last[1].Expired,
				now[0].Watched+now[1].Watched, now[0].Delayed+now[1].Delayed, tw.Len())
			last = now
		}
	}
	tick.Stop()
	wg.Wait()

	// Clean shutdown: Close ends the requests still waiting with Outcome
	// Closed (a real broker would answer them "shutting down"); then the
	// wheel hands back the simulated replica acknowledgements still in
	// flight, and no request waits for them: a stopped broker discards them
	// knowingly, and says so. Close does not wait for a walk under way: an
	// acknowledgement's CheckAndComplete, running on the wheel, ends the
	// requests Close left Closed for it as it goes on. So the wheel's
	// Shutdown, which waits for the callbacks it has started, comes before
	// the counts are read (with Stop they fell short now and then, on a busy
	// machine: requests ended after the read).
	produces.Close()
	fetches.Close()
	stopCtx, stopped := context.WithTimeout(context.Background(), 10*time.Second)
	defer stopped()
	pending, err := tw.Shutdown(stopCtx)
	if err != nil {
		return s, err
	}
	s.acksLeftOnShutdown = len(pending)
	s.produces, s.fetches = produces.Stats(), fetches.Stats()
	s.producesEnded, s.fetchesEnded, s.endedTwice = b.producesEnded.Load(), b.fetchesEnded.Load(), b.endedTwice.Load()
	s.wheelCallbackPanics = tw.Stats().Panics
	fmt.Fprint(out, s.String())
	if err := s.check(); err != nil {
		return s, err
	}
	return s, nil
}

func (s summary) String() string {
	return fmt.Sprintf("summary: produce %d issued: %d completed, %d expired, %d closed | fetch %d issued: %d completed, %d expired, %d closed | "+
		"ended twice %d\n"+
		"shutdown: %d simulated replica acknowledgements were still in flight and were discarded; every request had already ended, so none lost its answer\n",
		s.producesIssued, s.produces.Completed, s.produces.Expired, s.produces.Closed,
		s.fetchesIssued, s.fetches.Completed, s.fetches.Expired, s.fetches.Closed, s.endedTwice, s.acksLeftOnShutdown)
}

// check proves the purgatory's promise on this run: every request issued ended
// exactly once, as completed, expired or closed at shutdown.
func (s summary) check() error {
	ok := s.endedTwice == 0 && s.wheelCallbackPanics == 0 &&
		s.produces.Added == s.producesIssued && s.produces.Completed+s.produces.Expired+s.produces.Closed == s.producesIssued && s.producesEnded == s.producesIssued &&
		s.fetches.Added == s.fetchesIssued && s.fetches.Completed+s.fetches.Expired+s.fetches.Closed == s.fetchesIssued && s.fetchesEnded == s.fetchesIssued
	if !ok {
		return fmt.Errorf("broker: accounting failed: %+v", s)
	}
	return nil
}

// paced calls issue rate times per second until ctx is done, in steps of 1 ms,
// and returns how many it issued.
func paced(ctx context.Context, rate int, issue func()) int64 {
	if rate == 0 {
		<-ctx.Done()
		return 0
	}
	var issued int64
	begin := time.Now()
	for ctx.Err() == nil {
		for due := int64(time.Since(begin).Seconds() * float64(rate)); issued < due; issued++ {
			issue()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
	return issued
}

func produceLoad(ctx context.Context, b *broker, c config) int64 {
	rng := rand.New(rand.NewPCG(1, 2))
	latency := func(replica int) time.Duration {
		if replica == c.replicas-1 && c.replicas > 1 {
			return c.slowLatency/2 + rand.N(c.slowLatency)
		}
		return c.replicaLatency/10 + rand.N(c.replicaLatency*9/10)
	}
	return paced(ctx, c.produceRate, func() {
		r := &produceRequest{Op: purgatory.Op{Timeout: c.produceTimeout}, ending: ending{b: b}, acks: c.acks, until: map[partition]int64{}}
		var keys []partition
		for range 1 + rng.IntN(3) {
			p := partition(rng.IntN(c.partitions))
			if _, dup := r.until[p]; dup {
				continue
			}
			offset := b.append(p, 100+rng.Int64N(900))
			r.until[p] = offset
			keys = append(keys, p)
			b.replicate(p, offset, latency)
		}
		b.produces.TryCompleteElseWatch(r, keys...)
	})
}

func fetchLoad(ctx context.Context, b *broker, c config) int64 {
	rng := rand.New(rand.NewPCG(3, 4))
	return paced(ctx, c.fetchRate, func() {
		p := partition(rng.IntN(c.partitions))
		b.mu.Lock()
		from := b.logEnd[p]
		b.mu.Unlock()
		r := &fetchRequest{Op: purgatory.Op{Timeout: c.fetchMaxWait}, ending: ending{b: b}, p: p, from: from, minBytes: c.minBytes}
		b.fetches.TryCompleteElseWatch(r, p)
	})
}

// serve exposes reg at http://addr/metrics until the returned function is called.
func serve(addr string, reg *prometheus.Registry, out io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("broker: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(out, "broker: metrics server:", err)
		}
	}()
	fmt.Fprintf(out, "broker: metrics at http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
