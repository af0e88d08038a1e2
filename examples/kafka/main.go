// Command kafka is a small Kafka broker that real clients (franz-go, kcat,
// librdkafka) produce to and long-poll from, built on the purgatory: an
// acks=all produce waits in one purgatory until every replica holds its
// records, and a fetch (a consumer's, or a follower's copying the leader)
// waits in another until MinBytes arrive or its MaxWait passes, as in Kafka's
// ReplicaManager. Partitions live in memory, each with R replicas inside the
// process. SIGTERM or Ctrl-C stops it gracefully: it stops accepting, answers
// every parked request, then closes.
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
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/purgatory-go/purgatory/metrics"
)

type options struct {
	addr, metricsAddr string
	topics            string
	cfg               Config
	grace             time.Duration
	cpuProfile        string
	stallFollowers    bool
	retentionMS       int64 // Config.LogRetention, as Kafka's broker config gives it
	retentionCheckMS  int64
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:9092", "listen for Kafka clients here")
	flag.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:2113", "serve Prometheus metrics at http://ADDR/metrics (empty: off)")
	flag.StringVar(&o.topics, "topics", "", "topics to create at start, comma-separated, each NAME or NAME:PARTITIONS")
	flag.IntVar(&o.cfg.Partitions, "partitions", 8, "partitions of a topic created without a count")
	flag.IntVar(&o.cfg.Replicas, "replicas", 3, "replicas per partition, the leader included")
	flag.BoolVar(&o.cfg.AutoCreate, "auto-create", true, "create a topic the first time a client asks for it")
	flag.DurationVar(&o.cfg.FollowerDelay, "follower-delay", 0, "each follower waits this long before each fetch (a slow replica)")
	flag.BoolVar(&o.stallFollowers, "stall-followers", false, "start with every follower stalled, for fault drills; SIGUSR1 stalls or resumes them while the broker runs")
	flag.DurationVar(&o.cfg.ReplicaLagMax, "replica-lag-max", 30*time.Second, "a follower that has not caught up for this long leaves the ISR (Kafka's replica.lag.time.max.ms)")
	flag.IntVar(&o.cfg.MinInsyncReplicas, "min-insync-replicas", 1, "in-sync replicas, the leader included, that an acks=all produce needs (Kafka's min.insync.replicas)")
	flag.IntVar(&o.cfg.MaxMessageBytes, "max-message-bytes", DefaultMaxMessageBytes, "the largest record batch a produce may carry (Kafka's message.max.bytes); larger ones are answered MESSAGE_TOO_LARGE")
	flag.DurationVar(&o.cfg.InitialRebalanceDelay, "group-initial-rebalance-delay", DefaultInitialRebalanceDelay, "how long a consumer group's first rebalance waits for more members (Kafka's group.initial.rebalance.delay.ms; 0: none)")
	flag.Int64Var(&o.retentionMS, "log-retention-ms", 7*24*60*60*1000, "the default retention.ms of a topic: batches older than this are dropped (Kafka's log.retention.ms; -1: kept for ever)")
	flag.Int64Var(&o.cfg.LogRetentionBytes, "log-retention-bytes", -1, "the default retention.bytes of a topic: the size a partition is cut back to, oldest batches first (Kafka's log.retention.bytes; -1: no limit)")
	flag.Int64Var(&o.retentionCheckMS, "log-retention-check-interval-ms", 5*60*1000, "how often retention is applied (Kafka's log.retention.check.interval.ms)")
	flag.DurationVar(&o.grace, "grace", 10*time.Second, "how long shutdown may take")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if o.cfg.InitialRebalanceDelay == 0 {
		o.cfg.InitialRebalanceDelay = -1 // none; in a Config, zero is the default
	}
	if o.retentionMS == 0 || o.retentionMS < -1 || o.retentionCheckMS <= 0 {
		log.Fatalf("kafka: -log-retention-ms must be -1 or positive (it is %d), -log-retention-check-interval-ms positive (it is %d)", o.retentionMS, o.retentionCheckMS)
	}
	o.cfg.LogRetention = time.Duration(o.retentionMS) * time.Millisecond
	o.cfg.LogRetentionCheck = time.Duration(o.retentionCheckMS) * time.Millisecond
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

// run serves until ctx is done, then shuts down within o.grace. It prints the
// address it listens on first, so that a script (or a test) can connect.
func run(ctx context.Context, o options, out io.Writer) error {
	b, err := NewBroker(o.cfg)
	if err != nil {
		return err
	}
	if err := createTopics(b, o.topics); err != nil {
		b.Shutdown(context.Background())
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		b.Shutdown(context.Background())
		return err
	}
	var srv *http.Server
	if o.metricsAddr != "" {
		if srv, err = serveMetrics(b, o.metricsAddr); err != nil {
			ln.Close()
			b.Shutdown(context.Background())
			return err
		}
	}
	fmt.Fprintf(out, "kafka: listening on %s (replicas %d)\n", ln.Addr(), o.cfg.Replicas)
	stopDrills := faultDrills(b, o.stallFollowers, out)
	defer stopDrills()
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "kafka: shutting down: answering parked requests")
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	err = errors.Join(err, b.Shutdown(sctx))
	if srv != nil {
		err = errors.Join(err, srv.Shutdown(sctx))
	}
	if err == nil {
		err = <-served
	}
	ps, fs, js := b.produces.Stats(), b.fetches.Stats(), b.groups.joins.Stats()
	fmt.Fprintf(out, "kafka: stopped; produces waited %d (completed %d, expired %d, closed %d), fetches waited %d (completed %d, expired %d, closed %d), group joins waited %d (completed %d, expired %d, closed %d)\n",
		ps.Added, ps.Completed, ps.Expired, ps.Closed, fs.Added, fs.Completed, fs.Expired, fs.Closed, js.Added, js.Completed, js.Expired, js.Closed)
	return err
}

func createTopics(b *Broker, spec string) error {
	for _, t := range strings.Split(spec, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		name, count, _ := strings.Cut(t, ":")
		n := 0
		if count != "" {
			if _, err := fmt.Sscan(count, &n); err != nil || n < 1 {
				return fmt.Errorf("kafka: -topics %q: partitions of %s must be a positive number", spec, name)
			}
		}
		if _, err := b.CreateTopic(name, n); err != nil {
			return err
		}
	}
	return nil
}

// serveMetrics exports the three purgatories (produce, fetch, join) and
// their wheel, which also runs the group members' sessions.
func serveMetrics(b *Broker, addr string) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		metrics.NewPurgatoryCollector(b.produces),
		metrics.NewPurgatoryCollector(b.fetches),
		metrics.NewPurgatoryCollector(b.groups.joins),
		metrics.NewTimingWheelCollector(b.tw, "kafka"),
	)
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

// faultDrills stalls the followers if stalled is set, and stalls or resumes
// them at each SIGUSR1 (kill -USR1), saying so on out. The function it
// returns stops listening for the signal.
func faultDrills(b *Broker, stalled bool, out io.Writer) (stop func()) {
	if stalled {
		b.StallFollowers(true)
		fmt.Fprintln(out, "kafka: followers stalled (SIGUSR1 resumes them)")
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range usr1 {
			stalled = !stalled
			b.StallFollowers(stalled)
			if stalled {
				fmt.Fprintln(out, "kafka: followers stalled (SIGUSR1 resumes them)")
			} else {
				fmt.Fprintln(out, "kafka: followers resumed")
			}
		}
	}()
	return func() {
		signal.Stop(usr1)
		close(usr1)
		<-done
	}
}
