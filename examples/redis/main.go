// Command redis is a Redis-protocol server whose blocking list commands
// (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) wait in a purgatory: each
// blocked client is an operation watched under its keys, with its timeout on
// the purgatory's timing wheel, and each push hands its elements to the
// clients blocked on the key, first come, first served (purgatory.HandOff).
// It serves Redis's lists and what Redis's own list tests need besides; see
// README.md beside this file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/purgatory-go/purgatory/metrics"
)

type options struct {
	addr, metricsAddr string
	queryBufferLimit  int64
	grace             time.Duration
	cpuProfile        string
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:6379", "listen for Redis clients here (port 0: any free port; the server prints the one it got)")
	flag.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:2114", "serve Prometheus metrics at http://ADDR/metrics (empty: off)")
	flag.Int64Var(&o.queryBufferLimit, "query-buffer-limit", defaultQueryBufferLimit, "close a client whose unrun commands pass this many bytes (Redis's client-query-buffer-limit; CONFIG SET changes it)")
	flag.DurationVar(&o.grace, "grace", 10*time.Second, "how long shutdown may take")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if o.queryBufferLimit < 1<<20 {
		log.Fatalf("redis: -query-buffer-limit must be at least 1 MiB, as Redis's client-query-buffer-limit (it is %d)", o.queryBufferLimit)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		log.Print(err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// defaultQueryBufferLimit is Redis's default client-query-buffer-limit.
const defaultQueryBufferLimit = 1 << 30

func run(ctx context.Context, o options, out io.Writer) error {
	var obs *observers
	if o.metricsAddr != "" {
		obs = newObservers()
	}
	s, err := newServer(defaultConfig(o.queryBufferLimit), slog.Default(), obs)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		s.shutdown(context.Background())
		return err
	}
	var msrv *http.Server
	if o.metricsAddr != "" {
		if msrv, err = serveMetrics(s, obs, o.metricsAddr); err != nil {
			ln.Close()
			s.shutdown(context.Background())
			return err
		}
	}
	fmt.Fprintf(out, "redis: listening on %s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- s.serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "redis: shutting down: answering blocked clients")
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	err = errors.Join(err, s.shutdown(sctx))
	if msrv != nil {
		err = errors.Join(err, msrv.Shutdown(sctx))
	}
	if err == nil {
		err = <-served
	}
	st := s.blocked.Stats()
	fmt.Fprintf(out, "redis: stopped; clients blocked %d (served %d, timed out %d, unblocked %d, gone %d, answered at shutdown %d)\n",
		st.Added, st.Completed, st.Expired, st.Forced, st.ContextDone, st.Closed)
	return err
}

// observers feed the histograms /metrics serves: how long clients stayed
// blocked, and how late their timeouts fired.
type observers struct {
	blocked *metrics.PurgatoryObserver
	wheel   *metrics.TimingWheelObserver
}

func newObservers() *observers {
	return &observers{blocked: metrics.NewPurgatoryObserver(nil), wheel: metrics.NewTimingWheelObserver(nil)}
}

func serveMetrics(s *server, obs *observers, addr string) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg,
		metrics.NewPurgatoryCollector(s.blocked, metrics.WithDurationHistogram(obs.blocked)),
		metrics.NewTimingWheelCollector(s.tw, "redis", metrics.WithLatenessHistogram(obs.wheel)),
		newServerCollector(s),
	); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv, nil
}
