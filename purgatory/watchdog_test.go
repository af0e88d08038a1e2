package purgatory_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/logcapture"
	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// A callback that runs longer than StuckAfter is logged once, naming the
// operation's type, its outcome and the call it holds up, on each path a
// callback can block: the expiry path, a CheckAndComplete, Close. None is
// logged before StuckAfter, and at most one line a minute.
func TestStuckCallbackIsLogged(t *testing.T) {
	paths := map[string]struct {
		end  func(p *purgatory.Purgatory[string], op stuck)
		want string
	}{
		"expiry": {
			end:  func(p *purgatory.Purgatory[string], op stuck) { time.Sleep(op.Timeout) },
			want: `purgatory_test.stuck (expired) for 5s, holding up a timing-wheel worker`,
		},
		"CheckAndComplete": {
			end: func(p *purgatory.Purgatory[string], op stuck) {
				op.Ready.Store(true)
				go p.CheckAndComplete("k")
			},
			want: `purgatory_test.stuck (completed) for 5s, holding up the CheckAndComplete, HandOff, Advance or TryCompleteElseWatch that completed it`,
		},
		"Close": {
			end:  func(p *purgatory.Purgatory[string], op stuck) { go p.Close() },
			want: `purgatory_test.stuck (closed) for 5s, holding up Close`,
		},
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logger, logged := logcapture.Logger()
				p, err := purgatory.New[string]("slow", purgatory.WithLogger(logger))
				require.NoError(t, err)
				op := newStuck(time.Second)
				require.False(t, p.TryCompleteElseWatch(op, "k"))
				path.end(p, op)
				synctest.Wait() // blocked in OnComplete
				time.Sleep(purgatory.StuckAfter - time.Second)
				synctest.Wait()
				require.Empty(t, logged.String(), "not before StuckAfter")
				time.Sleep(2 * time.Second)
				synctest.Wait()
				require.Len(t, logged.Lines(), 1)
				line := logged.Lines()[0]
				require.Contains(t, line, `level=WARN msg="purgatory \"slow\": 1 operation callbacks (OnComplete, OnExpiration) have run longer than 5s.`)
				require.Contains(t, line, path.want)
				time.Sleep(50 * time.Second)
				synctest.Wait()
				require.Len(t, logged.Lines(), 1, "at most one line a minute")
				time.Sleep(10 * time.Second)
				synctest.Wait()
				require.Len(t, logged.Lines(), 2)
				require.Contains(t, logged.Lines()[1], "for 1m5s")

				close(op.release)
				time.Sleep(time.Hour)
				synctest.Wait()
				require.Len(t, logged.Lines(), 2, "none once it returned")
				p.Close()
			})
		})
	}
}

// Callbacks that return, however many and however often, are never logged,
// and the sampler stops once none runs (the bubble would not end otherwise).
func TestBusyButQuickCallbacksAreNotLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logged := logcapture.Logger()
		p, err := purgatory.New[string]("quick", purgatory.WithLogger(logger))
		require.NoError(t, err)
		defer p.Close()
		for i := range 100 {
			op := testkit.NewOp(time.Duration(i%7+1) * time.Second)
			p.TryCompleteElseWatch(op, "k")
			if i%2 == 0 {
				op.Ready.Store(true)
				p.CheckAndComplete("k")
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, logged.String())
	})
}

// WithLogger takes the purgatory's log lines (a recovered panic here), and
// its own wheel's; nothing reaches the standard logger; nil is refused.
func TestPurgatoryWithLogger(t *testing.T) {
	std := logcapture.Capture(t)
	synctest.Test(t, func(t *testing.T) {
		logger, logged := logcapture.Logger()
		p, err := purgatory.New[string]("logs", purgatory.WithLogger(logger))
		require.NoError(t, err)
		op := testkit.NewOp(time.Second)
		op.PanicIn.Store(testkit.PanicExpire)
		require.False(t, p.TryCompleteElseWatch(op, "k"))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, logged.Lines(), 1)
		require.Contains(t, logged.String(), `level=ERROR msg="purgatory: recovered a panic from an expired operation's OnComplete, OnExpiration or Recycle" panic="injected panic"`)
		p.Close()
		p.TimingWheel().AfterFunc(time.Second, func() {}) // refused: the wheel logs it
		require.Len(t, logged.Lines(), 2)
		require.Contains(t, logged.Lines()[1], "level=WARN msg=\"timingwheel: a timer was scheduled on a stopped wheel")
	})
	require.Empty(t, std.String())
	_, err := purgatory.New[string]("nil", purgatory.WithLogger(nil))
	require.ErrorIs(t, err, purgatory.ErrInvalidOption)
	require.ErrorContains(t, err, "WithLogger(nil)")
}
