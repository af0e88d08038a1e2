package main

import (
	"bufio"
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pushAll pushes elements e0 ... e(n-1) to key from one client, in batches
// of up to 8 with a pause now and then, so that pops race the pushes.
func pushAll(t *testing.T, addr, key string, n int) {
	t.Helper()
	p := dial(t, addr)
	defer p.conn.Close()
	for i := 0; i < n; {
		args := []string{"rpush", key}
		for j := 0; j < 1+rand.IntN(8) && i < n; j++ {
			args = append(args, "e"+strconv.Itoa(i))
			i++
		}
		p.do(args...)
		if rand.IntN(16) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// received is what the consumers read, element by element: a count per
// element, to find one read twice.
type received struct {
	mu   sync.Mutex
	seen map[string]int
}

func (r *received) add(v string) {
	r.mu.Lock()
	r.seen[v]++
	r.mu.Unlock()
}

func (r *received) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// twice returns the elements read more than once.
func (r *received) twice() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for v, n := range r.seen {
		if n > 1 {
			out = append(out, v)
		}
	}
	return out
}

// 64 go-redis clients in BLPOP loops with 50 ms timeouts, against pushes
// racing them: every element is read once, none twice, none left.
func TestConcurrentBlockingPops(t *testing.T) {
	const consumers, elements = 64, 5000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, addr := testServer(t)
	rdb := goRedis(t, addr, consumers+4)
	got := &received{seen: map[string]int{}}
	var wg sync.WaitGroup
	var timeouts atomic.Int64
	for range consumers {
		wg.Go(func() {
			for ctx.Err() == nil {
				v, ok, err := blpopDo(t, ctx, rdb, "q", 50*time.Millisecond)
				switch {
				case err != nil && ctx.Err() == nil:
					t.Errorf("BLPOP: %v", err)
					return
				case ok:
					got.add(v)
				default:
					timeouts.Add(1)
				}
			}
		})
	}
	pushAll(t, addr, "q", elements)
	require.Eventually(t, func() bool { return got.len() == elements }, 30*time.Second, time.Millisecond,
		"every element read")
	cancel()
	wg.Wait()
	require.Empty(t, got.twice(), "read twice")
	require.EqualValues(t, 0, rdb.LLen(context.Background(), "q").Val(), "none left")
	t.Logf("%d elements read by %d clients, %d BLPOP timeouts", elements, consumers, timeouts.Load())
}

// 64 clients in BLPOP loops, some killed mid-stream: a killed client closes
// its connection with a BLPOP unanswered, or with its reply unread. Every
// element is then in the list, was read by a live client, was written to a
// connection that was open when written, or was dropped with a client whose
// connection ended before it took the reply (the server counts these two:
// popWritten, dropped); none is read twice or both read and in the list.
func TestKilledClients(t *testing.T) {
	const consumers, elements = 64, 5000
	s, addr := testServer(t)
	got := &received{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var killed atomic.Int64
	for range consumers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if killedOne, err := popUntilKilled(ctx, addr, got); err != nil {
					t.Error(err)
					return
				} else if killedOne {
					killed.Add(1)
				}
			}
		})
	}
	pushAll(t, addr, "q", elements)
	r := dial(t, addr)
	// Until every element has been written to a connection (read or not), or
	// dropped with a killed client whose write failed.
	require.Eventually(t, func() bool {
		return r.do("llen", "q") == "0" && s.stats.popWritten.Load()+s.stats.dropped.Load() >= elements
	}, 30*time.Second, time.Millisecond, "elements neither in the list nor written to a connection nor dropped: lost")
	cancel()
	wg.Wait()
	// The killed clients' ends are over once the server has only r.
	require.Eventually(t, func() bool {
		n := 0
		onLoop(t, s, func() { n = len(s.clients) })
		return n == 1
	}, 10*time.Second, time.Millisecond)

	left := map[string]bool{}
	for _, v := range r.do("lrange", "q", "0", "-1").([]any) {
		left[v.(string)] = true
	}
	require.Empty(t, got.twice(), "read twice")
	got.mu.Lock()
	defer got.mu.Unlock()
	for v := range got.seen {
		require.False(t, left[v], "%s read and still in the list", v)
	}
	missing := elements - len(got.seen) - len(left)
	written, dropped := int(s.stats.popWritten.Load()), int(s.stats.dropped.Load())
	require.Equal(t, written-len(got.seen)+dropped, missing,
		"elements neither in the list nor read are those written to connections killed before they read them, or dropped with one whose write failed")
	t.Logf("%d clients killed; of %d elements %d read, %d left in the list, %d written to killed connections, %d dropped by the server",
		killed.Load(), elements, len(got.seen), len(left), missing-dropped, dropped)
}

// popUntilKilled opens a connection and pops from q with 50 ms timeouts,
// adding each element it reads to got, until one in 20 of its BLPOPs, at
// random, kills it: the connection closes before the reply is read (at
// once, or after up to a millisecond). It reports whether it killed one.
func popUntilKilled(ctx context.Context, addr string, got *received) (bool, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	for ctx.Err() == nil {
		if _, err := conn.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$4\r\n0.05\r\n")); err != nil {
			return false, err
		}
		if rand.IntN(20) == 0 {
			time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			return true, nil // closed by the defer, the reply unread
		}
		v, err := readReply(rd)
		if err != nil {
			return false, err
		}
		if pair, ok := v.([]any); ok {
			got.add(pair[1].(string))
		}
	}
	return false, nil
}
