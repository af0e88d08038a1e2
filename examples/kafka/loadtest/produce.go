package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceResult is one run of the produce workload against one server.
type produceResult struct {
	Rate                   int     `json:"rate"`
	Records                int     `json:"records"`
	ProduceP50, ProduceP99 float64 `json:"-"`
	E2EP50, E2EP99         float64 `json:"-"`
	CPUPer1000             float64 `json:"-"` // ms of broker CPU per 1,000 records
	Metrics                map[string]float64
}

// runProduce produces rate records per second for d, with acks=all, to the
// topic bench (8 partitions) while a consumer long-polls it, and measures
// each record's produce latency (send to acknowledgement) and
// produce-to-consume latency (send to the consumer's poll returning it), and
// the broker's CPU over the whole.
func runProduce(s *server, rate int, d time.Duration) (produceResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return produceResult{}, err
	}
	defer prod.Close()
	offsets := map[int32]kgo.Offset{}
	for p := range int32(8) {
		offsets[p] = kgo.NewOffset().AtEnd()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": offsets}),
		kgo.FetchMaxWait(5*time.Second))
	if err != nil {
		return produceResult{}, err
	}
	defer cons.Close()

	// Warm up until both clients are connected and the consumer, which
	// looks up the log's end lazily, reads what is produced.
	for got := false; !got; {
		warm := &kgo.Record{Key: []byte("warm-up"), Value: make([]byte, 100)}
		if err := prod.ProduceSync(ctx, warm).FirstErr(); err != nil {
			return produceResult{}, fmt.Errorf("warm-up produce: %w", err)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if err := fs.Err0(); err != nil && pctx.Err() == nil {
			return produceResult{}, fmt.Errorf("warm-up fetch: %w", err)
		}
		got = fs.NumRecords() > 0
	}

	n := int(int64(rate) * int64(d) / int64(time.Second))
	var mu sync.Mutex
	prodLat := make([]float64, 0, n)
	e2eLat := make([]float64, 0, n)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for len(e2eLat) < n && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if r.Key == nil { // not a warm-up record
					e2eLat = append(e2eLat, ms(now.Sub(sentAt(r))))
				}
			})
		}
	}()

	cpu0, err := s.cpu()
	if err != nil {
		return produceResult{}, err
	}
	paced(rate, n, func() {
		prod.Produce(ctx, record(time.Now()), func(r *kgo.Record, err error) {
			l := ms(time.Since(sentAt(r)))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				prodLat = append(prodLat, l)
			}
		})
	})
	if err := prod.Flush(ctx); err != nil {
		return produceResult{}, err
	}
	<-consumed
	cpu1, err := s.cpu()
	if err != nil {
		return produceResult{}, err
	}
	if len(prodLat) != n || len(e2eLat) != n {
		return produceResult{}, fmt.Errorf("rate %d: %d records sent, %d acknowledged, %d consumed", rate, n, len(prodLat), len(e2eLat))
	}
	return produceResult{
		Rate: rate, Records: n,
		Metrics: map[string]float64{
			"produce_p50_ms": pct(prodLat, 50), "produce_p99_ms": pct(prodLat, 99),
			"e2e_p50_ms": pct(e2eLat, 50), "e2e_p99_ms": pct(e2eLat, 99),
			"cpu_ms_per_1000_records": ms(cpu1-cpu0) * 1000 / float64(n),
		},
	}, nil
}

// paced calls send n times, rate times a second, on a 1 ms ticker: each
// tick catches up with the records due by then.
func paced(rate, n int, send func()) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent := 0; sent < n; {
		<-tick.C
		due := min(n, int(float64(rate)*time.Since(start).Seconds())+1)
		for ; sent < due; sent++ {
			send()
		}
	}
}

// record is 100 bytes whose first 8 say when it was sent.
func record(at time.Time) *kgo.Record {
	v := make([]byte, 100)
	binary.BigEndian.PutUint64(v, uint64(at.UnixNano()))
	return &kgo.Record{Value: v}
}

func sentAt(r *kgo.Record) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(r.Value))) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func pct(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}
