package purgatory_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purgatory-go/purgatory/internal/testkit"
	"github.com/purgatory-go/purgatory/purgatory"
)

// poll is a long-poll request: it waits for news on its key.
type poll struct {
	purgatory.Op
	news   func() bool
	answer chan purgatory.Outcome // room for one answer: OnComplete must not block
}

func (p *poll) TryComplete() bool { return p.news() }
func (p *poll) OnComplete()       { p.answer <- p.Outcome() }
func (p *poll) OnExpiration()     {}

// longPollHandler parks each request in polls until news, its timeout, the
// client going away, or Close; parked (if not nil) hears of each request
// parked.
func longPollHandler(polls *purgatory.Purgatory[string], parked chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := &poll{
			Op:     purgatory.Op{Timeout: time.Minute, Context: r.Context()},
			news:   func() bool { return false },
			answer: make(chan purgatory.Outcome, 1),
		}
		polls.TryCompleteElseWatch(op, r.URL.Query().Get("key"))
		if parked != nil {
			parked <- struct{}{}
		}
		fmt.Fprint(w, <-op.answer)
	})
}

// A long-poll service on net/http shuts down gracefully when the purgatory's
// Close is registered with the server before Shutdown: Shutdown waits for the
// handlers, and each handler waits for its parked operation, which Close ends.
func Example_httpLongPoll() {
	polls, err := purgatory.New[string]("polls")
	if err != nil {
		panic(err)
	}
	parked := make(chan struct{}, 1)
	srv := &http.Server{Handler: longPollHandler(polls, parked)}
	srv.RegisterOnShutdown(polls.Close) // before srv.Shutdown is called

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	answer := make(chan string)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/?key=orders")
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answer <- string(body)
	}()
	<-parked
	if err := srv.Shutdown(context.Background()); err != nil { // returns once the poll is answered
		panic(err)
	}
	fmt.Println("the parked poll was answered:", <-answer)
	// Output:
	// the parked poll was answered: closed
}

// TestLongPollShutdownOrder plays both orders on an in-memory network in fake
// time: with Close registered, Shutdown returns as soon as the parked polls
// are answered; in the obvious order (Shutdown, then Close), Shutdown waits
// out its whole grace period, because the handlers wait for their operations.
func TestLongPollShutdownOrder(t *testing.T) {
	for _, registered := range []bool{true, false} {
		t.Run(fmt.Sprintf("RegisterOnShutdown=%v", registered), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				polls := newPurgatory(t)
				parked := make(chan struct{}, 10)
				srv := &http.Server{Handler: longPollHandler(polls, parked)}
				if registered {
					srv.RegisterOnShutdown(polls.Close)
				}
				ln := testkit.NewPipeListener()
				go srv.Serve(ln)
				client := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
				var answers sync.WaitGroup
				for i := range 10 {
					answers.Go(func() {
						resp, err := client.Get(fmt.Sprintf("http://pipe/?key=k%d", i%3))
						if err != nil {
							return // the obvious order: the connection is closed under it
						}
						defer resp.Body.Close()
						body, err := io.ReadAll(resp.Body)
						require.NoError(t, err)
						require.Equal(t, "closed", string(body))
					})
				}
				for range 10 {
					<-parked
				}
				const grace = 30 * time.Second
				ctx, cancel := context.WithTimeout(context.Background(), grace)
				defer cancel()
				begin := time.Now()
				err := srv.Shutdown(ctx)
				took := time.Since(begin)
				polls.Close()
				answers.Wait()
				client.CloseIdleConnections()
				if registered {
					require.NoError(t, err)
					require.Less(t, took, time.Second, "answered at once")
				} else {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					require.Equal(t, grace, took, "the whole grace period")
					srv.Close()
				}
			})
		})
	}
}
