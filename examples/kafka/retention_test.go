package main

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRetentionBySize: retention.bytes keeps a partition at the newest
// batches that make up at least that size, dropped oldest first from the
// leader's log and the follower's copy: ListOffsets' earliest moves, a fetch
// below it is answered OFFSET_OUT_OF_RANGE with the new log start, and a
// fetch from it reads what is left.
func TestRetentionBySize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 2, LogRetentionCheck: time.Second})
		batch := len(recordBatch(t, "r0")) // every value below is as long
		cfg := "retention.bytes=" + itoa(3*batch)
		if code := call[*kmsg.CreateTopicsResponse](t, b, createReq("sized", false, cfg)).Topics[0].ErrorCode; code != 0 {
			t.Fatalf("CreateTopics: error %d", code)
		}
		for i := range 10 {
			if code := produced(t, b, "sized", -1, "r"+itoa(i)); code != 0 {
				t.Fatalf("produce %d: error %d", i, code)
			}
		}
		time.Sleep(time.Second) // a retention check: the last batches are below the high watermark now
		synctest.Wait()
		if start := offsetOf(t, b, "sized", -2); start != 7 {
			t.Errorf("earliest offset %d; want 7 (three batches of %d bytes kept at retention.bytes %d)", start, batch, 3*batch)
		}
		if end := offsetOf(t, b, "sized", -1); end != 10 {
			t.Errorf("latest offset %d; want 10", end)
		}
		l := b.partition("sized", 0)
		l.copies[0].mu.Lock()
		copied := l.copies[0].batches.len()
		l.copies[0].mu.Unlock()
		if copied != 3 {
			t.Errorf("the follower's copy holds %d batches; want the leader's 3", copied)
		}

		below := call[*kmsg.FetchResponse](t, b, fetchReq("sized", 0, 6, 0, 1)).Topics[0].Partitions[0]
		if below.ErrorCode != kerr.OffsetOutOfRange.Code || below.LogStartOffset != 7 {
			t.Errorf("fetch from 6: error %d, log start %d; want OFFSET_OUT_OF_RANGE and 7", below.ErrorCode, below.LogStartOffset)
		}
		from := call[*kmsg.FetchResponse](t, b, fetchReq("sized", 0, 7, 0, 1)).Topics[0].Partitions[0]
		if from.ErrorCode != 0 || len(from.RecordBatches) != 3*batch || !strings.Contains(string(from.RecordBatches), "r7") {
			t.Errorf("fetch from 7: error %d, %d bytes; want 0 and the three batches kept (%d bytes, from r7)", from.ErrorCode, len(from.RecordBatches), 3*batch)
		}
	})
}

// TestRetentionByAge: retention.ms drops batches whose newest record is
// older than it, at the retention check after they age out (never before),
// down to an empty log whose start is its end; offsets go on from there.
func TestRetentionByAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 1, LogRetentionCheck: time.Second})
		if code := call[*kmsg.CreateTopicsResponse](t, b, createReq("aged", false, "retention.ms=5000")).Topics[0].ErrorCode; code != 0 {
			t.Fatalf("CreateTopics: error %d", code)
		}
		produce := func(values ...string) {
			for _, v := range values {
				if code := produced(t, b, "aged", 1, v); code != 0 {
					t.Fatalf("produce %s: error %d", v, code)
				}
			}
		}
		produce("a", "b") // at 0 s
		time.Sleep(3 * time.Second)
		produce("c", "d") // at 3 s
		time.Sleep(2 * time.Second)
		synctest.Wait() // 5 s: the check at 5 s keeps a and b (exactly 5 s old)
		if start := offsetOf(t, b, "aged", -2); start != 0 {
			t.Errorf("at 5 s: earliest offset %d; want 0 (a and b are not older than retention.ms yet)", start)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if start := offsetOf(t, b, "aged", -2); start != 2 {
			t.Errorf("at 6 s: earliest offset %d; want 2 (a and b dropped)", start)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if start, end := offsetOf(t, b, "aged", -2), offsetOf(t, b, "aged", -1); start != 4 || end != 4 {
			t.Errorf("at 9 s: earliest %d, latest %d; want 4 and 4 (every batch dropped)", start, end)
		}
		produce("e")
		if end := offsetOf(t, b, "aged", -1); end != 5 {
			t.Errorf("after one more produce: latest %d; want 5", end)
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }
