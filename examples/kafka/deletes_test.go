package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeleteTopicAnswersWhatWaitsOnIt: deleting a topic answers at once (no
// time passes) every produce and fetch parked on it: the deleted partitions
// UNKNOWN_TOPIC_OR_PARTITION, a fetch's other partition its data. The
// topic's committed offsets go, other topics' stay; a topic created again
// under its name starts empty with a new id; the internal offsets topic and
// a topic that does not exist are refused.
func TestDeleteTopicAnswersWhatWaitsOnIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 2})
		for _, spec := range []string{"doomed:2", "kept:1"} {
			if err := createTopics(b, spec); err != nil {
				t.Fatal(err)
			}
		}
		oldID := b.topic("doomed").id
		if code := produced(t, b, "kept", -1, "stays"); code != 0 {
			t.Fatalf("produce to kept: error %d", code)
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Version, commit.Group, commit.Generation = 8, "g", -1
		for _, topic := range []string{"doomed", "kept"} {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			commit.Topics = append(commit.Topics, rt)
		}
		call[*kmsg.OffsetCommitResponse](t, b, commit)

		b.StallFollowers(true) // an acks=all produce waits for the follower
		produce := send(b, produceReq(t, "doomed", 0, -1, 30*time.Second, "parked"))
		empty := send(b, fetchReq("doomed", 0, 0, 30*time.Second, 1))
		both := fetchReq("doomed", 1, 0, 30*time.Second, 1<<20) // more than kept has
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "kept"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		both.Topics = append(both.Topics, rt)
		mixed := send(b, both)
		for _, a := range []answers{produce, empty, mixed} {
			a.none(t, "a request parked on doomed")
		}

		start := time.Now()
		if code := call[*kmsg.DeleteTopicsResponse](t, b, deleteReq("doomed")).Topics[0].ErrorCode; code != 0 {
			t.Fatalf("DeleteTopics doomed: error %d", code)
		}
		if p := produce.next(t, "the parked produce").(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("the parked produce: error %d, want UNKNOWN_TOPIC_OR_PARTITION", p.ErrorCode)
		}
		if p := empty.next(t, "the parked fetch").(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("the parked fetch: error %d, want UNKNOWN_TOPIC_OR_PARTITION", p.ErrorCode)
		}
		m := mixed.next(t, "the parked fetch of two topics").(*kmsg.FetchResponse)
		if d, k := m.Topics[0].Partitions[0], m.Topics[1].Partitions[0]; d.ErrorCode != kerr.UnknownTopicOrPartition.Code || k.ErrorCode != 0 || len(k.RecordBatches) == 0 {
			t.Errorf("the fetch of doomed-1 and kept-0: errors %d and %d, %d bytes of kept; want UNKNOWN_TOPIC_OR_PARTITION, then kept's record", d.ErrorCode, k.ErrorCode, len(k.RecordBatches))
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the parked requests were answered %v after the delete; want at once", waited)
		}

		fetched := kmsg.NewPtrOffsetFetchRequest()
		fetched.Version, fetched.Group = 7, "g"
		for _, topic := range []string{"doomed", "kept"} {
			ft := kmsg.NewOffsetFetchRequestTopic()
			ft.Topic, ft.Partitions = topic, []int32{0}
			fetched.Topics = append(fetched.Topics, ft)
		}
		offsets := call[*kmsg.OffsetFetchResponse](t, b, fetched).Topics
		if d, k := offsets[0].Partitions[0].Offset, offsets[1].Partitions[0].Offset; d != -1 || k != 1 {
			t.Errorf("committed offsets after the delete: doomed %d, kept %d; want -1 (dropped) and 1", d, k)
		}

		if _, err := b.CreateTopic("doomed", 1); err != nil {
			t.Fatal(err)
		}
		if end := offsetOf(t, b, "doomed", -1); end != 0 || b.topic("doomed").id == oldID {
			t.Errorf("doomed created again: latest offset %d, same id %v; want 0 and a new id", end, b.topic("doomed").id == oldID)
		}
		byID := kmsg.NewPtrDeleteTopicsRequest()
		byID.Version = 6
		byID.Topics = append(byID.Topics, kmsg.DeleteTopicsRequestTopic{TopicID: b.topic("doomed").id})
		if r := call[*kmsg.DeleteTopicsResponse](t, b, byID).Topics[0]; r.ErrorCode != 0 || b.topic("doomed") != nil {
			t.Errorf("DeleteTopics by id: error %d, topic still there %v", r.ErrorCode, b.topic("doomed") != nil)
		}
		for name, want := range map[string]int16{"nope": kerr.UnknownTopicOrPartition.Code, offsetsTopic: kerr.InvalidTopicException.Code} {
			if code := call[*kmsg.DeleteTopicsResponse](t, b, deleteReq(name)).Topics[0].ErrorCode; code != want {
				t.Errorf("DeleteTopics %s: error %d, want %d", name, code, want)
			}
		}
	})
}

// TestDeleteGroups: an Empty group goes with its offsets; one with members
// is answered NON_EMPTY_GROUP and kept; one that does not exist,
// GROUP_ID_NOT_FOUND.
func TestDeleteGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 1, InitialRebalanceDelay: -1})
		if _, err := b.CreateTopic("t", 1); err != nil {
			t.Fatal(err)
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Version, commit.Group, commit.Generation = 8, "empty", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		commit.Topics = append(commit.Topics, rt)
		call[*kmsg.OffsetCommitResponse](t, b, commit)
		joined := answers(make(chan kmsg.Response, 1))
		b.groups.joinGroup(client{"app", "host"}, joinReq("", 3, 10*time.Second, 10*time.Second), joined.reply) // group "grp"
		joined.next(t, "join")

		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = 2, []string{"empty", "grp", "nope"}
		want := []int16{0, kerr.NonEmptyGroup.Code, kerr.GroupIDNotFound.Code}
		for i, g := range call[*kmsg.DeleteGroupsResponse](t, b, req).Groups {
			if g.ErrorCode != want[i] {
				t.Errorf("DeleteGroups %s: error %d, want %d", g.Group, g.ErrorCode, want[i])
			}
		}
		if b.groups.group("empty", false) != nil || b.groups.group("grp", false) == nil {
			t.Errorf("after DeleteGroups: empty still there %v, grp gone %v", b.groups.group("empty", false) != nil, b.groups.group("grp", false) == nil)
		}
	})
}

func deleteReq(name string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TopicNames = 5, []string{name}
	return req
}

// TestTheOffsetsTopicIsInternal: Metadata lists __consumer_offsets as
// internal (a regex subscription skips it), and nobody may produce to it.
func TestTheOffsetsTopicIsInternal(t *testing.T) {
	b, addr, _ := startBroker(t, Config{Replicas: 1}, "t:1")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12 // nil topics: every topic
	resp, err := dialRaw(t, addr).do(md)
	if err != nil {
		t.Fatal(err)
	}
	internal := map[string]bool{}
	for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
		internal[*rt.Topic] = rt.IsInternal
	}
	if in, listed := internal[offsetsTopic]; !listed || !in || internal["t"] {
		t.Errorf("Metadata: internal %v; want %s listed as internal, t not", internal, offsetsTopic)
	}
	a := answers(make(chan kmsg.Response, 1))
	b.handleProduce(produceReq(t, offsetsTopic, 0, 1, time.Second, "x"), a.reply)
	if code := (<-a).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Errorf("produce to %s: error %d, want INVALID_TOPIC_EXCEPTION", offsetsTopic, code)
	}
}
