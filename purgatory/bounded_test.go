package purgatory_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// stuck is an operation whose OnComplete waits until released.
type stuck struct {
	*testkit.Op
	release chan struct{}
}

func newStuck(timeout time.Duration) stuck {
	return stuck{testkit.NewOp(timeout), make(chan struct{})}
}

func (s stuck) OnComplete() {
	s.Op.OnComplete()
	<-s.release
}

// Shutdown is bounded by its context on every path an OnComplete can block
// (issue 31): on Close's sweep, which Shutdown runs on a goroutine of its own;
// on the expiry path, which it waits for; and on a CheckAndComplete of the
// caller's, which it does not wait for. In each case it returns when ctx ends
// (or at once, for the caller's own call), and the blocked operation and the
// one behind it still end exactly once when the callback returns.
func TestShutdownIsBoundedOnEveryPath(t *testing.T) {
	paths := map[string]struct {
		start func(p *purgatory.Purgatory[string], op stuck) // leaves op's OnComplete blocked
		want  error                                          // from Shutdown while it blocks
		ended purgatory.Outcome
	}{
		"Close's sweep": {
			start: func(p *purgatory.Purgatory[string], op stuck) {},
			want:  context.DeadlineExceeded,
			ended: purgatory.Closed,
		},
		"expiry": {
			start: func(p *purgatory.Purgatory[string], op stuck) {
				time.Sleep(time.Minute)
				synctest.Wait()
			},
			want:  context.DeadlineExceeded,
			ended: purgatory.Expired,
		},
		"CheckAndComplete": {
			start: func(p *purgatory.Purgatory[string], op stuck) {
				op.Ready.Store(true)
				go p.CheckAndComplete("k")
				synctest.Wait()
			},
			want:  nil, // the caller's own call is the caller's to wait for
			ended: purgatory.Completed,
		},
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := purgatory.New[string]("bounded")
				require.NoError(t, err)
				op := newStuck(time.Minute)
				behind := testkit.NewOp(time.Hour)
				require.False(t, p.TryCompleteElseWatch(op, "k"))
				require.False(t, p.TryCompleteElseWatch(behind, "other"))
				path.start(p, op)

				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				begin := time.Now()
				err = p.Shutdown(ctx)
				if path.want == nil {
					require.NoError(t, err)
					require.Zero(t, time.Since(begin), "returned at once")
				} else {
					require.ErrorIs(t, err, path.want)
					require.Equal(t, time.Second, time.Since(begin), "returned when ctx ended")
				}
				require.True(t, p.TryCompleteElseWatch(readyOp(), "k") == false, "closed: new operations end at once")

				close(op.release)
				require.NoError(t, p.Shutdown(context.Background()))
				require.EqualValues(t, 1, op.Completed.Load())
				require.Equal(t, path.ended, op.Seen)
				require.EqualValues(t, 1, behind.Completed.Load())
				require.Equal(t, purgatory.Closed, behind.Seen)
				s := p.Stats()
				require.Zero(t, s.Delayed)
				require.EqualValues(t, 3, s.Added)
			})
		})
	}
}

func readyOp() *testkit.Op {
	op := testkit.NewOp(time.Minute)
	op.Ready.Store(false)
	return op
}

// Shutdown from OnComplete run by Close's sweep (itself run by an earlier
// Shutdown) cannot wait for the sweep it is part of: it returns
// ErrShutdownInCallback at once.
func TestShutdownFromTheCloseSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPurgatory(t)
		got := make(chan error, 1)
		op := &callsBack{Op: testkit.NewOp(time.Hour), f: func() { got <- p.Shutdown(context.Background()) }}
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		require.NoError(t, p.Shutdown(context.Background()))
		require.ErrorIs(t, <-got, purgatory.ErrShutdownInCallback)
	})
}

// callsBack calls f from OnComplete.
type callsBack struct {
	*testkit.Op
	f func()
}

func (c *callsBack) OnComplete() {
	c.Op.OnComplete()
	c.f()
}

// Purgatory.Shutdown and http.Server.Shutdown, case by case, with the work
// each waits for (a handler; Close's sweep) finishing in time or blocking past
// ctx: at the same moment, the same error, which ours wraps to name the
// callback that held it (http.Server's names nothing).
func TestShutdownAsHTTPServer(t *testing.T) {
	for _, blocks := range []bool{false, true} {
		name := map[bool]string{false: "work finishes", true: "work outlives ctx"}[blocks]
		t.Run(name, func(t *testing.T) {
			var ours, theirs error
			var oursAt, theirsAt time.Duration
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				work := func() {
					if blocks {
						<-release
					} else {
						time.Sleep(100 * time.Millisecond)
					}
				}
				srv, done := serveOnce(t, work)
				p, err := purgatory.New[string]("side-by-side")
				require.NoError(t, err)
				op := &callsBack{Op: testkit.NewOp(time.Hour), f: work}
				require.False(t, p.TryCompleteElseWatch(op, "k"))

				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				begin := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() { theirs = srv.Shutdown(ctx); theirsAt = time.Since(begin) })
				wg.Go(func() { ours = p.Shutdown(ctx); oursAt = time.Since(begin) })
				wg.Wait()
				close(release)
				<-done
				require.NoError(t, p.Shutdown(context.Background()))
			})
			if blocks {
				require.Equal(t, context.DeadlineExceeded, theirs)
				require.ErrorIs(t, ours, theirs)
				require.ErrorContains(t, ours, "callsBack (closed)")
				require.Equal(t, theirsAt, oursAt)
			} else {
				require.NoError(t, theirs)
				require.NoError(t, ours)
			}
		})
	}
}

// serveOnce starts an http.Server on an in-memory listener and makes one
// request whose handler calls work; it returns once the handler runs, with a
// channel closed when the client has its answer (or its error).
func serveOnce(t *testing.T, work func()) (*http.Server, <-chan struct{}) {
	t.Helper()
	ln := testkit.NewPipeListener()
	running := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(running)
		work()
	})}
	go srv.Serve(ln)
	client := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := client.Get("http://pipe/"); err == nil {
			resp.Body.Close()
		}
		client.CloseIdleConnections()
	}()
	<-running
	return srv, done
}

// A short Shutdown names what held it (issue 37): with a 10 ms context and
// a blocking OnComplete on Close's sweep or on the expiry path, the error
// wraps ctx's and names the operation's type, its outcome, how long it has
// run (since the first sample that saw it, or under a second) and the call it
// holds up; the logger gets the same at once, not only at StuckAfter. Four
// blocked ones are named three and "1 more".
func TestShortShutdownNamesWhatHoldsIt(t *testing.T) {
	for _, path := range []struct {
		name  string
		wait  time.Duration // before Shutdown
		count int
		want  []string
	}{
		{"Close's sweep", 0, 1, []string{"purgatory_test.stuck (closed) for under 1s, holding up Close (or Shutdown's sweep, which its context bounds)"}},
		{"expiry", 3 * time.Second, 1, []string{"purgatory_test.stuck (expired) for 1s, holding up a timing-wheel worker"}},
		{"four expired", 3 * time.Second, 4, []string{"with 4 operation callbacks still running", "; and 1 more"}},
	} {
		t.Run(path.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logger, logged := logcapture.Logger()
				p, err := purgatory.New[string]("short", purgatory.WithLogger(logger))
				require.NoError(t, err)
				var ops []stuck
				for range path.count {
					op := newStuck(time.Second)
					ops = append(ops, op)
					require.False(t, p.TryCompleteElseWatch(op, "k"))
				}
				time.Sleep(path.wait) // expired at 1 s, blocked since: first sampled at 2 s
				synctest.Wait()

				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				err = p.Shutdown(ctx)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.ErrorContains(t, err, `purgatory "short": Shutdown: context deadline exceeded with`)
				for _, want := range path.want {
					require.ErrorContains(t, err, want)
				}
				require.Len(t, logged.Lines(), 1, "logged at once")
				require.Contains(t, logged.Lines()[0], `level=WARN msg="purgatory \"short\": Shutdown's context ended with`)
				for _, want := range path.want[1:] {
					require.Contains(t, logged.Lines()[0], want)
				}
				for _, op := range ops {
					close(op.release)
				}
				require.NoError(t, p.Shutdown(context.Background()))
			})
		})
	}
}
