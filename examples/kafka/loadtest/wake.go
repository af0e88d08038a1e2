package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runWake parks n consumers' fetches on the one partition of topic wake, each
// on a connection of its own (n consumers long-polling the end of the log),
// then produces one record (acks=1) and measures the time from the produce to
// each fetch's answer: all n must be answered, with the record. It does so
// rounds times and reports the medians over the rounds of the last answer
// and of the median one.
func runWake(s *server, n, rounds int) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic("wake"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	readers := make([]*bufio.Reader, n)
	conns := make([]net.Conn, n)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", s.addr); err != nil {
			return nil, err
		}
		defer conns[i].Close()
		readers[i] = bufio.NewReader(conns[i])
	}
	var lasts, medians []float64
	for round := range rounds {
		answered := make([]time.Time, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i, nc := range conns {
			if _, err := nc.Write(fetchFrame("wake", 0, int64(round), time.Minute, int32(round))); err != nil {
				return nil, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := readFetch(readers[i])
				if err == nil && len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
					err = fmt.Errorf("a parked fetch was answered with no record (error %d)", resp.Topics[0].Partitions[0].ErrorCode)
				}
				answered[i] = time.Now()
				errs <- err
			}()
		}
		time.Sleep(time.Second) // all parked: neither server says, so give them time
		start := time.Now()
		r := &kgo.Record{Partition: 0, Value: record(start).Value}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			return nil, fmt.Errorf("wake-up produce: %w", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return nil, err
			}
		}
		ms := make([]float64, n)
		for i, at := range answered {
			ms[i] = float64(at.Sub(start)) / float64(time.Millisecond)
		}
		slices.Sort(ms)
		lasts, medians = append(lasts, ms[n-1]), append(medians, ms[n/2])
	}
	slices.Sort(lasts)
	slices.Sort(medians)
	return map[string]float64{
		"wake_last_answer_ms":   lasts[len(lasts)/2],
		"wake_median_answer_ms": medians[len(medians)/2],
	}, nil
}
