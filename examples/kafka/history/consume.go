package history

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume runs partition consumers one after another until the run ends.
// Each reads every partition, from the log's start or from where the last
// one got to, in long polls of 100 to 500 ms, until it is killed in one
// (one poll in 20: its connections reset within 50 ms while it waits).
func consume(cfg Config, rec *recorder, r *rand.Rand) {
	from := map[int32]int64{}
	for time.Now().Before(rec.until) {
		if r.IntN(2) == 0 {
			from = map[int32]int64{} // from the start
		}
		if err := session(cfg, rec, r, from); err != nil {
			rec.failed(err)
			return
		}
	}
}

// offsets is where a consumer starts: from's offsets, else the start.
func offsets(cfg Config, from map[int32]int64) map[string]map[int32]kgo.Offset {
	at := map[int32]kgo.Offset{}
	for p := range cfg.Partitions {
		at[p] = kgo.NewOffset().AtStart()
		if o, ok := from[p]; ok {
			at[p] = kgo.NewOffset().At(o)
		}
	}
	return map[string]map[int32]kgo.Offset{cfg.Topic: at}
}

// session is one partition consumer's life; from is updated with the next
// offset of each partition it read.
func session(cfg Config, rec *recorder, r *rand.Rand, from map[int32]int64) error {
	wait := time.Duration(100+r.IntN(400)) * time.Millisecond
	cl, c, err := client(cfg.Addr, kgo.ConsumePartitions(offsets(cfg, from)), kgo.FetchMaxWait(wait))
	if err != nil {
		return err
	}
	defer cl.Close()
	id := rec.session()
	for time.Now().Before(rec.until) {
		kill := r.IntN(20) == 0
		if kill {
			time.AfterFunc(time.Duration(r.IntN(50))*time.Millisecond, c.kill)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		rec.poll(pollsOf(fs, id, false, 0, rec.now(), from)...)
		if kill {
			rec.killed(&rec.h.Consumers)
			return nil
		}
		if err := fetchErr(fs); err != nil {
			return err
		}
	}
	return nil
}

// pollsOf records what a poll returned, and moves from on.
func pollsOf(fs kgo.Fetches, session int, group bool, epoch int, at time.Duration, from map[int32]int64) []Poll {
	var ps []Poll
	fs.EachRecord(func(r *kgo.Record) {
		ps = append(ps, Poll{Session: session, Group: group, Epoch: epoch, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: at})
		if from != nil {
			from[r.Partition] = r.Offset + 1
		}
	})
	return ps
}

// fetchErr is a poll's error that is the broker's or the client's fault,
// not the run's: a poll cut short by its context, or by the client's
// close, is not one.
func fetchErr(fs kgo.Fetches) error {
	for _, e := range fs.Errors() {
		if !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, kgo.ErrClientClosed) {
			return e.Err
		}
	}
	return nil
}

// readToEnd reads every partition from its start to its high watermark,
// once nothing is being produced: so every acknowledged send is at or
// below the highest offset polled.
func readToEnd(cfg Config, rec *recorder) error {
	cl, _, err := client(cfg.Addr, kgo.ConsumePartitions(offsets(cfg, nil)), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	id, next, hwm, idle := rec.session(), map[int32]int64{}, map[int32]int64{}, 0
	for deadline := time.Now().Add(time.Minute); ; {
		if time.Now().After(deadline) {
			return errors.New("history: the final read did not reach every partition's high watermark in a minute")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if err := fetchErr(fs); err != nil {
			return err
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) { hwm[p.Partition] = max(hwm[p.Partition], p.HighWatermark) })
		ps := pollsOf(fs, id, false, 0, rec.now(), next)
		rec.poll(ps...)
		if idle = idle + 1; len(ps) > 0 {
			idle = 0
		}
		if reached(next, hwm) && (len(hwm) == int(cfg.Partitions) || idle >= 5) {
			return nil // a partition that never had a record shows no high watermark
		}
	}
}

// reached reports whether every partition seen is read to its high
// watermark.
func reached(next, hwm map[int32]int64) bool {
	for p, h := range hwm {
		if next[p] < h {
			return false
		}
	}
	return true
}
