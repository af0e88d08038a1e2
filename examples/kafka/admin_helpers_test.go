package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeBroker makes a broker for a test in fake time (synctest), with no
// listener: requests go straight to the handlers. It shuts down when the
// test ends.
func fakeBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	b, err := NewBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.StallFollowers(false)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return b
}

// send hands req to the broker's handler for its key, as a connection does
// (with no connection: only for requests whose handlers do not read it), and
// returns where the answer will arrive.
func send(b *Broker, req kmsg.Request) answers {
	a := answers(make(chan kmsg.Response, 1))
	served[kmsg.Key(req.Key())].handle(b, nil, req, a.reply)
	return a
}

// call sends req and returns its answer, which must be there once
// everything that could answer has run.
func call[R kmsg.Response](t *testing.T, b *Broker, req kmsg.Request) R {
	t.Helper()
	return send(b, req).next(t, kmsg.NameForKey(req.Key())).(R)
}

// createReq is a CreateTopics (v7) of one topic with one partition and
// configs given as name=value.
func createReq(name string, validateOnly bool, configs ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.ValidateOnly = 7, validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, -1
	for _, c := range configs {
		k, v, _ := strings.Cut(c, "=")
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, rc)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// listOffsetsReq asks partition 0 of topic for the offset at ts (-2: the
// earliest, -1: the latest).
func listOffsetsReq(topic string, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 7, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func offsetOf(t *testing.T, b *Broker, topic string, ts int64) int64 {
	t.Helper()
	p := call[*kmsg.ListOffsetsResponse](t, b, listOffsetsReq(topic, ts)).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %s %d: error %d", topic, ts, p.ErrorCode)
	}
	return p.Offset
}

// produced returns the error code of a produce of value to partition 0 of
// topic with acks, answered at once.
func produced(t *testing.T, b *Broker, topic string, acks int16, value string) int16 {
	t.Helper()
	return call[*kmsg.ProduceResponse](t, b, produceReq(t, topic, 0, acks, 30*time.Second, value)).Topics[0].Partitions[0].ErrorCode
}
