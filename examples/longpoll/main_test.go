package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/purgatory-go/purgatory/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server runs serve on an in-memory listener until the test's bubble ends it
// with stop, which returns what serve printed.
func server(t *testing.T, c config) (client *http.Client, stop func() string) {
	t.Helper()
	ln := testkit.NewPipeListener()
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- serve(ctx, c, ln, &out) }()
	client = &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
	return client, func() string {
		cancel()
		require.NoError(t, <-done)
		client.CloseIdleConnections()
		return out.String()
	}
}

func get(t *testing.T, client *http.Client, url string) (*http.Response, job) {
	t.Helper()
	resp, err := client.Get("http://longpoll" + url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var j job
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&j))
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	return resp, j
}

func testConfig() config {
	return config{wait: 30 * time.Second, maxWaiting: 2, grace: 10 * time.Second}
}

// A poll parks until the job changes, and is answered at the moment of the
// update with the new version; one with no news is answered at the wait's
// end with the job as it is.
func TestPollIsAnsweredByTheUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, stop := server(t, testConfig())
		answered := make(chan job)
		begin := time.Now()
		go func() {
			_, j := get(t, client, "/jobs/7?after=0")
			answered <- j
		}()
		time.Sleep(3 * time.Second)
		req, _ := http.NewRequest(http.MethodPut, "http://longpoll/jobs/7?status=done", nil)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, job{Status: "done", Version: 1}, <-answered)
		require.Equal(t, 3*time.Second, time.Since(begin))

		begin = time.Now()
		resp, j := get(t, client, "/jobs/7?after=1")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, job{Status: "done", Version: 1}, j, "no news: the job as it is")
		require.Equal(t, 30*time.Second, time.Since(begin), "at the wait's end")
		require.Contains(t, stop(), "shut down: 1 polls answered with news, 1 at their wait's end, 0 closed by the shutdown, 0 shed with 503, 0 clients gone")
	})
}

// Over -max-waiting parked polls, a poll is answered at once with 503 and
// Retry-After; a shutdown answers the parked ones with the job as it is, and
// returns at once.
func TestShedAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, stop := server(t, testConfig())
		parked := make(chan int, 2)
		for range 2 {
			go func() {
				resp, _ := get(t, client, "/jobs/1?after=0")
				parked <- resp.StatusCode
			}()
		}
		synctest.Wait()
		resp, _ := get(t, client, "/jobs/2?after=0")
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))

		begin := time.Now()
		out := stop()
		require.Less(t, time.Since(begin), time.Second, "the parked polls were answered by Close, at once (Shutdown polls its idle connections from 1 ms on)")
		require.Equal(t, http.StatusOK, <-parked)
		require.Equal(t, http.StatusOK, <-parked)
		require.Contains(t, out, "0 polls answered with news, 0 at their wait's end, 2 closed by the shutdown, 1 shed with 503")
	})
}

func TestBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, stop := server(t, testConfig())
		resp, _ := get(t, client, "/jobs/1?after=x")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		req, _ := http.NewRequest(http.MethodPut, "http://longpoll/jobs/1", nil)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		stop()
	})
}

// The load run, in fake time: every poll answer is counted once, none fails,
// updates wake polls, and a bound below the pollers sheds.
func TestLoadRun(t *testing.T) {
	for _, bound := range []int{0, 20} {
		synctest.Test(t, func(t *testing.T) {
			c := config{wait: 30 * time.Second, maxWaiting: bound, grace: 10 * time.Second,
				load: true, pollers: 50, jobs: 10, updateRate: 100, duration: 3 * time.Second}
			ln := testkit.NewPipeListener()
			r, err := drive(t.Context(), c, ln, ln.Dial)
			require.NoError(t, err)
			require.Zero(t, r.failed.Load())
			require.NotZero(t, r.updates.Load())
			require.NotZero(t, r.news.Load())
			if bound == 0 {
				require.Zero(t, r.shed.Load())
			} else {
				require.NotZero(t, r.shed.Load())
			}
			var out strings.Builder
			r.print(&out, c)
			require.Contains(t, out.String(), "load: 50 pollers on 10 jobs")
		})
	}
}
