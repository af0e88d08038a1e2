package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// goRedis is a go-redis client of the server at addr with a pool of size
// conns, closed when the test ends.
func goRedis(t testing.TB, addr string, size int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: size, MinIdleConns: 0, Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// blpopDo sends BLPOP key timeout with Do: go-redis's BLPop rounds a timeout up
// to whole seconds. It returns the element, or ok false for a timeout.
func blpopDo(t testing.TB, ctx context.Context, rdb *redis.Client, key string, timeout time.Duration) (string, bool, error) {
	v, err := rdb.Do(ctx, "BLPOP", key, timeout.Seconds()).Slice()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	require.Len(t, v, 2)
	require.Equal(t, key, v[0])
	return v[1].(string), true, nil
}

// go-redis, a client of the field, sees Redis's answers: a timeout is
// redis.Nil, a push hands its element to the client blocked longest, the
// wrong type and bad timeouts are Redis's errors.
func TestGoRedis(t *testing.T) {
	ctx := context.Background()
	_, addr := testServer(t)
	rdb := goRedis(t, addr, 8)

	_, ok, err := blpopDo(t, ctx, rdb, "q", 50*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "timed out")

	got := make(chan string, 2)
	for range 2 {
		go func() {
			v, _, err := blpopDo(t, ctx, rdb, "q", 0)
			if err != nil {
				v = err.Error()
			}
			got <- v
		}()
	}
	r := dial(t, addr)
	waitBlocked(t, r, 2)
	require.NoError(t, rdb.RPush(ctx, "q", "a", "b", "c").Err())
	require.ElementsMatch(t, []string{"a", "b"}, []string{<-got, <-got})
	require.Equal(t, []string{"c"}, rdb.LRange(ctx, "q", 0, -1).Val())

	v, err := rdb.BLMove(ctx, "q", "dst", "RIGHT", "LEFT", time.Second).Result()
	require.NoError(t, err)
	require.Equal(t, "c", v)
	require.NoError(t, rdb.Set(ctx, "s", "x", 0).Err())
	require.EqualError(t, rdb.BLPop(ctx, time.Second, "s").Err(), errWrongType)
	require.EqualError(t, rdb.Do(ctx, "BLPOP", "q", -1).Err(), errTimeoutNeg)
	key, vals, err := rdb.BLMPop(ctx, time.Second, "left", 5, "none", "dst").Result()
	require.NoError(t, err)
	require.Equal(t, "dst", key)
	require.Equal(t, []string{"c"}, vals)
}

// redis-cli, Redis's own client: a BLPOP in one is answered by an LPUSH in
// another. It is skipped where redis-cli is not installed, unless
// REDISCLI_REQUIRED is set (CI sets it: its suite step installs
// redis-tools).
func TestRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("REDISCLI_REQUIRED") != "" {
			t.Fatalf("redis-cli not found and REDISCLI_REQUIRED is set: install redis-tools (examples/redis/redis-suite.sh does): %v", err)
		}
		t.Skip("redis-cli not installed (apt-get install redis-tools)")
	}
	_, addr := testServer(t)
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	blpop := exec.CommandContext(ctx, cli, "-h", host, "-p", port, "BLPOP", "jobs", "0")
	out := make(chan []byte, 1)
	errc := make(chan error, 1)
	go func() {
		b, err := blpop.Output()
		out <- b
		errc <- err
	}()
	waitBlocked(t, dial(t, addr), 1)
	pushed, err := exec.CommandContext(ctx, cli, "-h", host, "-p", port, "LPUSH", "jobs", "job 1").Output()
	require.NoError(t, err)
	require.Equal(t, "1\n", string(pushed), "LPUSH's reply: the length before the hand-off")
	require.Equal(t, "jobs\njob 1\n", string(<-out))
	require.NoError(t, <-errc)
	llen, err := exec.CommandContext(ctx, cli, "-h", host, "-p", port, "LLEN", "jobs").Output()
	require.NoError(t, err)
	require.Equal(t, "0\n", string(llen), "handed off, not left in the list")
}
