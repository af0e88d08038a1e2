package main

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAFetchGetsAllOfAProduce: a consumer's fetch of several partitions,
// parked, is answered with everything one produce wrote to them, not with
// the first partition's records alone (and the rest one fetch later). The
// produce wakes what waits only once it has written every partition, and at
// R = 3 a follower's fetch wakes what waits on the high watermarks it moved
// only once it has told every position, as Kafka runs its delayed actions
// once the request is handled.
func TestAFetchGetsAllOfAProduce(t *testing.T) {
	for _, replicas := range []int{1, 3} {
		t.Run(fmt.Sprintf("R=%d", replicas), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { fetchGetsAllOfAProduce(t, replicas) })
		})
	}
}

func fetchGetsAllOfAProduce(t *testing.T, replicas int) {
	const partitions = 4
	b := fakeBroker(t, Config{Replicas: replicas})
	if _, err := b.CreateTopic("t", partitions); err != nil {
		t.Fatal(err)
	}
	fetch := fetchReq("t", 0, 0, time.Minute, 1)
	produce := produceReq(t, "t", 0, -1, time.Minute, "r0")
	for p := int32(1); p < partitions; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		fetch.Topics[0].Partitions = append(fetch.Topics[0].Partitions, fp)
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p, recordBatch(t, fmt.Sprintf("r%d", p))
		produce.Topics[0].Partitions = append(produce.Topics[0].Partitions, pp)
	}

	fetched := answers(make(chan kmsg.Response, 1))
	b.handleFetch(fetch, fetched.reply)
	fetched.none(t, "fetch before the produce")
	acked := answers(make(chan kmsg.Response, 1))
	b.handleProduce(produce, acked.reply)
	for _, p := range acked.next(t, "produce").(*kmsg.ProduceResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("produce to partition %d: error %d", p.Partition, p.ErrorCode)
		}
	}

	var with []int32
	for _, p := range fetched.next(t, "fetch").(*kmsg.FetchResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("fetch of partition %d: error %d", p.Partition, p.ErrorCode)
		}
		if len(p.RecordBatches) > 0 {
			with = append(with, p.Partition)
		}
	}
	if len(with) != partitions {
		t.Errorf("the fetch was answered with records of partitions %v; want all %d the produce wrote", with, partitions)
	}
}
