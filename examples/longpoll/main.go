// Command longpoll is a job-status service with long polls on a purgatory:
// clients wait on GET /jobs/{id}?after=V until the job changes past version
// V (or 30 s pass, or they go away), and PUT /jobs/{id}?status=S changes it
// and answers the polls of that job at once. Each poll is one call of
// Purgatory.Wait in its handler. Over -max-waiting parked polls it answers
// 503 with Retry-After instead of parking more (the overload recipe for
// HTTP); /metrics serves the purgatory's and its wheel's metrics; SIGTERM or
// Ctrl-C shuts it down gracefully, answering every parked poll.
//
//	go run ./examples/longpoll                  # serve on 127.0.0.1:8080
//	curl 'localhost:8080/jobs/7?after=0' &      # parks
//	curl -X PUT 'localhost:8080/jobs/7?status=done'
//
// With -load it serves on a free port and drives itself with -pollers
// clients polling -jobs jobs while -update-rate updates a second land, for
// -duration, then prints what happened: the measurement of the overload
// recipe (docs/operations.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/purgatory-go/purgatory/metrics"
	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

type config struct {
	addr       string
	wait       time.Duration
	maxWaiting int
	grace      time.Duration

	load       bool
	pollers    int
	jobs       int
	updateRate int
	duration   time.Duration

	started func(*purgatory.Purgatory[string]) // if set, told of the purgatory serve made
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address")
	flag.DurationVar(&c.wait, "wait", 30*time.Second, "the longest a poll waits")
	flag.IntVar(&c.maxWaiting, "max-waiting", 10000, "parked polls before new ones get 503 (0: no bound)")
	flag.DurationVar(&c.grace, "grace", 10*time.Second, "how long shutdown waits for handlers")
	flag.BoolVar(&c.load, "load", false, "serve on a free port and drive the service with the load below; print a report")
	flag.IntVar(&c.pollers, "pollers", 2000, "load: clients polling at once")
	flag.IntVar(&c.jobs, "jobs", 500, "load: jobs they poll")
	flag.IntVar(&c.updateRate, "update-rate", 2000, "load: job updates per second")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "load: how long")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) error {
	if !c.load {
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "serving on http://%s (GET /jobs/{id}?after=V, PUT /jobs/{id}?status=S, /metrics)\n", ln.Addr())
		return serve(ctx, c, ln, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ln.Addr().String())
	}
	r, err := drive(ctx, c, ln, dial)
	if err != nil {
		return err
	}
	r.print(out, c)
	return nil
}

// serve serves the API on ln until ctx is done, then shuts down: the
// purgatory's Close is registered with the server, so srv.Shutdown's wait for
// the handlers ends as soon as Close has answered every parked poll.
func serve(ctx context.Context, c config, ln net.Listener, out io.Writer) error {
	tw, err := timingwheel.New()
	if err != nil {
		return err
	}
	defer tw.Stop()
	opts := []purgatory.Option{purgatory.WithTimingWheel(tw)}
	if c.maxWaiting > 0 {
		opts = append(opts, purgatory.WithMaxDelayed(c.maxWaiting))
	}
	polls, err := purgatory.New[string]("polls", opts...)
	if err != nil {
		return err
	}
	if c.started != nil {
		c.started(polls)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewPurgatoryCollector(polls), metrics.NewTimingWheelCollector(tw, "main"))

	s := newService(polls, c.wait)
	mux := s.routes()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(polls.Close)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		polls.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if perr := polls.Shutdown(sctx); err == nil {
		err = perr
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	st := polls.Stats()
	fmt.Fprintf(out, "shut down: %d polls answered with news, %d at their wait's end, %d closed by the shutdown, %d shed with 503, %d clients gone\n",
		st.Completed, st.Expired, st.Closed, st.Shed, st.ContextDone)
	return err
}
