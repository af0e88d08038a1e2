package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/metrics"
	"github.com/purgatory-go/purgatory/purgatory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testConfig() config {
	return config{
		duration: 3 * time.Second, produceRate: 500, fetchRate: 200, partitions: 4, replicas: 3,
		produceTimeout: 300 * time.Millisecond, fetchMaxWait: 250 * time.Millisecond, minBytes: 16 << 10,
		replicaLatency: 20 * time.Millisecond, slowLatency: 400 * time.Millisecond, status: time.Second,
	}
}

// The broker's run, in fake time: every request issued ends exactly once, and
// the output has its status lines and summary.
func TestRunAccountsForEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		s, err := run(t.Context(), testConfig(), &out)
		require.NoError(t, err, out.String())
		require.NoError(t, s.check())
		require.NotZero(t, s.producesIssued)
		require.NotZero(t, s.fetchesIssued)
		require.Zero(t, s.endedTwice)
		require.Equal(t, 3, strings.Count(out.String(), "produce +"), "a status line per second:\n%s", out.String())
		require.Contains(t, out.String(), "summary: produce")
		// What shutdown discards is said for what it is: not lost work.
		require.Regexp(t, `shutdown: \d+ simulated replica acknowledgements were still in flight and were discarded; every request had already ended, so none lost its answer`, out.String())
		require.NotContains(t, out.String(), "dropped")
	})
}

func TestCtrlCStopsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testConfig()
		c.duration = time.Hour
		ctx, cancel := contextWithCancelAfter(t.Context(), 1500*time.Millisecond) // Ctrl-C

		defer cancel()
		s, err := run(ctx, c, io.Discard)
		require.NoError(t, err)
		require.NoError(t, s.check())
	})
}

func TestRejectsBadFlags(t *testing.T) {
	for _, mutate := range []func(*config){
		func(c *config) { c.duration = 0 },
		func(c *config) { c.partitions = 0 },
		func(c *config) { c.acks = 4 },
		func(c *config) { c.minBytes = 0 },
		func(c *config) { c.produceTimeout = -time.Second },
	} {
		c := testConfig()
		mutate(&c)
		_, err := run(t.Context(), c, io.Discard)
		require.Error(t, err)
	}
}

// The metrics endpoint serves the purgatory's series over real loopback HTTP.
func TestMetricsEndpoint(t *testing.T) {
	p, err := purgatory.New[partition]("produce")
	require.NoError(t, err)
	defer p.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewPurgatoryCollector(p))
	var out bytes.Buffer
	stop, err := serve("127.0.0.1:0", reg, &out)
	require.NoError(t, err)
	defer stop()
	addr := regexp.MustCompile(`http://(\S+)/metrics`).FindStringSubmatch(out.String())
	require.Len(t, addr, 2, out.String())
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `purgatory_delayed_operations{purgatory="produce"} 0`)
}

func contextWithCancelAfter(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	time.AfterFunc(d, cancel)
	return ctx, cancel
}
