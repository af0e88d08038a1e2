package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicConfigsAreAppliedOrRefused: CreateTopics and
// IncrementalAlterConfigs take the configs the broker honours and apply
// them (a produce over a topic's max.message.bytes is refused, one over the
// broker's default allowed where the topic allows it); any other name, or a
// bad value, is answered INVALID_CONFIG with a message naming it, and
// nothing is created or changed; ValidateOnly creates nothing;
// DescribeConfigs tells a topic's own value from the default.
func TestTopicConfigsAreAppliedOrRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 1, MaxMessageBytes: 1000})
		create := func(name string, validateOnly bool, configs ...string) kmsg.CreateTopicsResponseTopic {
			t.Helper()
			return call[*kmsg.CreateTopicsResponse](t, b, createReq(name, validateOnly, configs...)).Topics[0]
		}
		for _, tc := range []struct{ config, named string }{
			{"kfake.is_internal=true", "kfake.is_internal"},
			{"segment.bytes=1048576", "segment.bytes"},
			{"max.message.bytes=lots", "max.message.bytes"},
			{"min.insync.replicas=2", "min.insync.replicas"}, // more than the replicas
			{"retention.ms=-2", "retention.ms"},
			{"cleanup.policy=compact", "cleanup.policy"},
		} {
			r := create("refused", false, "retention.bytes=100", tc.config)
			if r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, tc.named) {
				t.Errorf("CreateTopics with %s: error %d, message %v; want INVALID_CONFIG naming %s", tc.config, r.ErrorCode, strPtr(r.ErrorMessage), tc.named)
			}
			if b.topic("refused") != nil {
				t.Fatalf("CreateTopics with %s created the topic", tc.config)
			}
		}
		if r := create("checked", true, "max.message.bytes=5000"); r.ErrorCode != 0 || b.topic("checked") != nil {
			t.Errorf("ValidateOnly: error %d, created %v; want 0 and nothing created", r.ErrorCode, b.topic("checked") != nil)
		}
		for _, name := range []string{"small", "large", "plain"} {
			configs := map[string][]string{"small": {"max.message.bytes=200"}, "large": {"max.message.bytes=5000"}}[name]
			if r := create(name, false, configs...); r.ErrorCode != 0 {
				t.Fatalf("CreateTopics %s: error %d", name, r.ErrorCode)
			}
		}

		// A batch of a 500-byte value is about 570 bytes; of 1500, 1570.
		tooLarge := kerr.MessageTooLarge.Code
		for _, tc := range []struct {
			topic string
			value int
			want  int16
		}{
			{"small", 100, 0}, {"small", 500, tooLarge},
			{"plain", 500, 0}, {"plain", 1500, tooLarge}, // the broker's 1000
			{"large", 1500, 0}, {"large", 6000, tooLarge},
		} {
			if code := produced(t, b, tc.topic, 1, strings.Repeat("v", tc.value)); code != tc.want {
				t.Errorf("produce of %d bytes to %s: error %d, want %d", tc.value, tc.topic, code, tc.want)
			}
		}

		described := func(topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
			t.Helper()
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.Version = 4
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			req.Resources = append(req.Resources, rr)
			res := call[*kmsg.DescribeConfigsResponse](t, b, req).Resources[0]
			if res.ErrorCode != 0 {
				t.Fatalf("DescribeConfigs %s: error %d", topic, res.ErrorCode)
			}
			out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
			for _, c := range res.Configs {
				out[c.Name] = c
			}
			return out
		}
		d := described("small")
		if c := d["max.message.bytes"]; *c.Value != "200" || c.IsDefault || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("small's max.message.bytes described %q, default %v, source %v; want 200, its own", *c.Value, c.IsDefault, c.Source)
		}
		if c := d["retention.ms"]; *c.Value != "604800000" || !c.IsDefault {
			t.Errorf("small's retention.ms described %q, default %v; want the broker's 7 days", *c.Value, c.IsDefault)
		}
		if len(d) != len(topicConfigs) {
			t.Errorf("DescribeConfigs lists %d configs, the broker honours %d", len(d), len(topicConfigs))
		}

		alter := func(topic string, changes ...string) kmsg.IncrementalAlterConfigsResponseResource {
			t.Helper()
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.Version = 1
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			for _, c := range changes {
				rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				if name, ok := strings.CutPrefix(c, "-"); ok {
					rc.Name, rc.Op = name, kmsg.IncrementalAlterConfigOpDelete
				} else {
					k, v, _ := strings.Cut(c, "=")
					rc.Name, rc.Value = k, kmsg.StringPtr(v)
				}
				rr.Configs = append(rr.Configs, rc)
			}
			req.Resources = append(req.Resources, rr)
			return call[*kmsg.IncrementalAlterConfigsResponse](t, b, req).Resources[0]
		}
		if r := alter("small", "retention.ms=5000", "retention.bytes=some"); r.ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(strPtr(r.ErrorMessage), "retention.bytes") {
			t.Errorf("a bad alteration: error %d, message %q; want INVALID_CONFIG naming retention.bytes", r.ErrorCode, strPtr(r.ErrorMessage))
		}
		if c := described("small")["retention.ms"]; !c.IsDefault {
			t.Errorf("a refused alteration changed retention.ms to %q", *c.Value)
		}
		if r := alter("small", "max.message.bytes=5000"); r.ErrorCode != 0 {
			t.Fatalf("alter small: error %d", r.ErrorCode)
		}
		if code := produced(t, b, "small", 1, strings.Repeat("v", 1500)); code != 0 {
			t.Errorf("a 1500-byte produce to small at max.message.bytes 5000: error %d", code)
		}
		if r := alter("small", "-max.message.bytes"); r.ErrorCode != 0 {
			t.Fatalf("delete small's max.message.bytes: error %d", r.ErrorCode)
		}
		if c := described("small")["max.message.bytes"]; *c.Value != "1000" || !c.IsDefault {
			t.Errorf("after DELETE: max.message.bytes %q, default %v; want the broker's 1000", *c.Value, c.IsDefault)
		}
		if r := alter("nope", "retention.ms=1"); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("alter a topic that does not exist: error %d, want UNKNOWN_TOPIC_OR_PARTITION", r.ErrorCode)
		}
	})
}

// TestMinInsyncReplicasPerTopic: with the ISR down to the leader, an acks=all
// produce to a topic whose min.insync.replicas is 2 is refused
// NOT_ENOUGH_REPLICAS, and nothing is appended; one to a topic at the
// broker's default (1) is acknowledged.
func TestMinInsyncReplicasPerTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 2, ReplicaLagMax: time.Second})
		for _, r := range []*kmsg.CreateTopicsRequest{createReq("strict", false, "min.insync.replicas=2"), createReq("lax", false)} {
			if code := call[*kmsg.CreateTopicsResponse](t, b, r).Topics[0].ErrorCode; code != 0 {
				t.Fatalf("CreateTopics %s: error %d", r.Topics[0].Topic, code)
			}
		}
		if code := produced(t, b, "strict", -1, "while in sync"); code != 0 {
			t.Fatalf("acks=all to strict with both replicas in sync: error %d", code)
		}
		b.StallFollowers(true)
		time.Sleep(3 * time.Second) // past ReplicaLagMax: the follower leaves the ISR
		if n := b.partition("strict", 0).inSyncReplicas(); n != 1 {
			t.Fatalf("%d replicas in sync after the follower stalled; want 1", n)
		}
		if code := produced(t, b, "strict", -1, "alone"); code != kerr.NotEnoughReplicas.Code {
			t.Errorf("acks=all to strict with the leader alone: error %d, want NOT_ENOUGH_REPLICAS", code)
		}
		if _, _, leo := b.partition("strict", 0).offsets(); leo != 1 {
			t.Errorf("strict's log ends at %d after a refused produce; want 1", leo)
		}
		if code := produced(t, b, "lax", -1, "alone"); code != 0 {
			t.Errorf("acks=all to lax with the leader alone: error %d, want 0", code)
		}
	})
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
