package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runGroup starts members kgo consumers of one group on topic grp (8
// partitions) together, measures the time from their start until every
// partition is assigned (the rebalance: joins, the leader's assignment,
// syncs), then produces rate records per second for d (acks=all) and
// measures produce-to-consume latency through the group, every record
// consumed exactly once.
func runGroup(s *server, members, rate int, d time.Duration) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var mu sync.Mutex
	assigned := map[int]int{} // member -> partitions it holds
	allAssigned := make(chan struct{})
	var lat []float64
	seen := map[int64]bool{}
	dup := 0
	start := time.Now()
	var joined time.Duration
	var cls []*kgo.Client
	defer func() {
		for _, cl := range cls {
			cl.Close()
		}
	}()
	for m := range members {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.ConsumerGroup("loadtest"), kgo.ConsumeTopics("grp"),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.FetchMaxWait(5*time.Second),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				assigned[m] += len(got["grp"])
				total := 0
				for _, n := range assigned {
					total += n
				}
				if total == 8 && joined == 0 {
					joined = time.Since(start)
					close(allAssigned)
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
				mu.Lock()
				assigned[m] -= len(lost["grp"])
				mu.Unlock()
			}))
		if err != nil {
			return nil, err
		}
		cls = append(cls, cl)
		go func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				now := time.Now()
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					id := int64(r.Partition)<<40 | r.Offset
					if seen[id] {
						dup++
					}
					seen[id] = true
					lat = append(lat, ms(now.Sub(sentAt(r))))
				})
				mu.Unlock()
			}
		}()
	}
	select {
	case <-allAssigned:
	case <-ctx.Done():
		return nil, fmt.Errorf("the group's %d members were not all assigned: %v", members, assigned)
	}
	if err := awaitShares(ctx, &mu, assigned, members); err != nil {
		return nil, err
	}
	time.Sleep(time.Second) // each member's first fetch has found the log's end
	prod, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic("grp"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	n := int(int64(rate) * int64(d) / int64(time.Second))
	paced(rate, n, func() { prod.Produce(ctx, record(time.Now()), nil) })
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	for {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if got >= n {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the group consumed %d of %d records", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if dup > 0 || len(seen) != n {
		return nil, fmt.Errorf("the group consumed %d distinct records of %d, %d twice", len(seen), n, dup)
	}
	slices.Sort(lat)
	return map[string]float64{
		"group_join_ms":    ms(joined),
		"group_e2e_p50_ms": pct(lat, 50),
		"group_e2e_p99_ms": pct(lat, 99),
	}, nil
}

// awaitShares waits until each of the group's members holds its share of
// grp's 8 partitions. The first full assignment may give every partition to
// the first member to join; the cooperative rebalances that follow move some
// to the others. A partition that moves once records flow is read by its new
// owner from the log's end (nothing is committed yet), so records would be
// skipped: the workload produces only once the shares are settled.
func awaitShares(ctx context.Context, mu *sync.Mutex, assigned map[int]int, members int) error {
	for !balanced(mu, assigned, members) {
		if ctx.Err() != nil {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("the group's %d members never shared the 8 partitions evenly: %v", members, assigned)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// balanced reports whether the group's members hold all 8 partitions of grp
// between them, each member floor(8/members) or one more.
func balanced(mu *sync.Mutex, assigned map[int]int, members int) bool {
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for m := range members {
		n := assigned[m]
		if n < 8/members || n > (8+members-1)/members {
			return false
		}
		total += n
	}
	return total == 8
}
