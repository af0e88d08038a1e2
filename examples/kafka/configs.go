package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic configs, truthfully: a topic takes the configs this broker honours,
// each either set on the topic (CreateTopics, IncrementalAlterConfigs) or the
// broker's default (its flags, named as Kafka's broker configs). Any other
// name, or a value that does not parse or is out of range, is answered
// INVALID_CONFIG with a message that names it, and nothing changes: a broker
// must not accept what it would ignore.
//
//	max.message.bytes    the largest record batch a produce may carry (and so
//	                     the largest a fetch may return): -max-message-bytes
//	min.insync.replicas  in-sync replicas an acks=all produce needs:
//	                     -min-insync-replicas
//	retention.ms         batches older than this are dropped, oldest first
//	                     (-1: kept): -log-retention-ms
//	retention.bytes      the oldest batches are dropped while the partition
//	                     stays over this size (-1: no limit):
//	                     -log-retention-bytes
//	cleanup.policy       delete, the only policy served (no compaction)
//
// Retention drops whole batches, and only batches the in-sync replicas all
// hold (below the high watermark), as Kafka drops whole segments below it: the
// log start offset moves, ListOffsets' earliest with it, and a fetch below it
// is answered OFFSET_OUT_OF_RANGE.

// topicConfig is a topic's configs, as set on it; what is not set is the
// broker's default. It is never changed once made: an alteration makes a new
// one.
type topicConfig struct {
	set map[string]string // name -> value, as given
}

// configSpec is a config this broker honours: how to check a value, and the
// broker's default for it.
type configSpec struct {
	check func(value string, cfg Config) error
	def   func(cfg Config) string
	doc   string
}

var topicConfigs = map[string]configSpec{
	"max.message.bytes": {
		check: intIn(0, 1<<31-1),
		def:   func(c Config) string { return strconv.Itoa(c.MaxMessageBytes) },
		doc:   "the largest record batch a produce may carry",
	},
	"min.insync.replicas": {
		check: func(v string, c Config) error { return intIn(1, int64(c.Replicas))(v, c) },
		def:   func(c Config) string { return strconv.Itoa(c.MinInsyncReplicas) },
		doc:   "in-sync replicas, the leader included, that an acks=all produce needs",
	},
	"retention.ms": {
		check: intIn(-1, 1<<63-1),
		def:   func(c Config) string { return strconv.FormatInt(c.LogRetention.Milliseconds(), 10) },
		doc:   "how long a batch is kept (-1: for ever)",
	},
	"retention.bytes": {
		check: intIn(-1, 1<<63-1),
		def:   func(c Config) string { return strconv.FormatInt(c.LogRetentionBytes, 10) },
		doc:   "the size a partition is cut back to, oldest batches first (-1: no limit)",
	},
	"cleanup.policy": {
		check: func(v string, _ Config) error {
			if v != "delete" {
				return fmt.Errorf("%q: this broker serves delete only (no compaction)", v)
			}
			return nil
		},
		def: func(Config) string { return "delete" },
		doc: "delete: old batches are dropped by retention",
	},
}

// intIn returns a check that a value is an integer in [lo, hi].
func intIn(lo, hi int64) func(string, Config) error {
	return func(v string, _ Config) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q: want an integer from %d to %d", v, lo, hi)
		}
		return nil
	}
}

// honoured lists the configs this broker honours, for messages.
func honoured() string { return strings.Join(slices.Sorted(maps.Keys(topicConfigs)), ", ") }

// checkConfig returns the INVALID_CONFIG message for name=value, "" if the
// broker honours it.
func checkConfig(name string, value *string, cfg Config) string {
	spec, ok := topicConfigs[name]
	switch {
	case !ok:
		return fmt.Sprintf("config %s is not one this broker honours (it honours %s); nothing was changed", name, honoured())
	case value == nil:
		return fmt.Sprintf("config %s: a null value; set one, or delete the config", name)
	}
	if err := spec.check(*value, cfg); err != nil {
		return fmt.Sprintf("config %s: %v; nothing was changed", name, err)
	}
	return ""
}

// value returns the config name of a topic with configs tc: its own, or the
// broker's default (fromTopic false).
func (tc *topicConfig) value(name string, cfg Config) (v string, fromTopic bool) {
	if v, ok := tc.set[name]; ok {
		return v, true
	}
	return topicConfigs[name].def(cfg), false
}

// int returns a config known to be an integer.
func (tc *topicConfig) int(name string, cfg Config) int64 {
	v, _ := tc.value(name, cfg)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// with returns a copy of tc with name set to value, or deleted if value is
// nil.
func (tc *topicConfig) with(name string, value *string) *topicConfig {
	next := &topicConfig{set: maps.Clone(tc.set)}
	if next.set == nil {
		next.set = map[string]string{}
	}
	if value == nil {
		delete(next.set, name)
	} else {
		next.set[name] = *value
	}
	return next
}

// configsOf checks a CreateTopics request's configs for one topic and returns
// them, or the INVALID_CONFIG message for the first bad one.
func configsOf(configs []kmsg.CreateTopicsRequestTopicConfig, cfg Config) (*topicConfig, string) {
	tc := &topicConfig{set: map[string]string{}}
	for _, c := range configs {
		if msg := checkConfig(c.Name, c.Value, cfg); msg != "" {
			return nil, msg
		}
		tc.set[c.Name] = *c.Value
	}
	return tc, ""
}

// The resource types of DescribeConfigs and IncrementalAlterConfigs.
const (
	resourceTopic  = 2
	resourceBroker = 4
)

// describeConfigs answers DescribeConfigs for topics (each config the broker
// honours, the topic's own or the default) and for this broker (its
// defaults, read-only: they come from its flags).
func (b *Broker) describeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var tc *topicConfig
		switch {
		case r.ResourceType == resourceBroker && r.ResourceName == "0", r.ResourceType == resourceBroker && r.ResourceName == "":
			tc = &topicConfig{}
		case r.ResourceType == resourceTopic:
			if t := b.topic(r.ResourceName); t != nil {
				tc = t.cfg.Load()
			} else {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = kmsg.StringPtr("this broker describes topics, and itself as broker 0")
		}
		if tc != nil {
			rr.Configs = b.describedConfigs(tc, r, req.IncludeDocumentation)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (b *Broker) describedConfigs(tc *topicConfig, r kmsg.DescribeConfigsRequestResource, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, v := range tc.values(b.cfg) {
		if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, v.name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source, c.IsDefault = v.name, kmsg.StringPtr(v.value), v.source(), !v.own
		c.ReadOnly = r.ResourceType == resourceBroker
		if docs {
			c.Documentation = kmsg.StringPtr(topicConfigs[v.name].doc)
		}
		out = append(out, c)
	}
	return out
}

// configValue is a config of a topic as described: its value, and whether
// the topic sets it (own) or it is the broker's default.
type configValue struct {
	name, value string
	own         bool
}

// values lists every config the broker honours, in name order, with tc's
// value of each.
func (tc *topicConfig) values(cfg Config) []configValue {
	var out []configValue
	for _, name := range slices.Sorted(maps.Keys(topicConfigs)) {
		v, own := tc.value(name, cfg)
		out = append(out, configValue{name, v, own})
	}
	return out
}

// source is where v comes from, as DescribeConfigs and CreateTopics say it:
// the topic's own config, or the broker's (its flags).
func (v configValue) source() kmsg.ConfigSource {
	if v.own {
		return kmsg.ConfigSourceDynamicTopicConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}

// incrementalAlterConfigs answers IncrementalAlterConfigs for topics: SET
// checks and sets a config, DELETE returns it to the broker's default; there
// are no list configs to APPEND to or SUBTRACT from. A resource with a bad
// change keeps all its configs. The broker's defaults are its flags.
func (b *Broker) incrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		code, msg := b.alterTopicConfigs(r, req.ValidateOnly)
		rr.ErrorCode = code
		if msg != "" {
			rr.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (b *Broker) alterTopicConfigs(r kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	if r.ResourceType != resourceTopic {
		return kerr.InvalidRequest.Code, "this broker alters topic configs only; its own defaults are its flags"
	}
	t := b.topic(r.ResourceName)
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	b.mu.Lock() // one alteration of a topic at a time
	defer b.mu.Unlock()
	next := t.cfg.Load()
	for _, c := range r.Configs {
		switch c.Op {
		case 0: // SET
			if msg := checkConfig(c.Name, c.Value, b.cfg); msg != "" {
				return kerr.InvalidConfig.Code, msg
			}
			next = next.with(c.Name, c.Value)
		case 1: // DELETE
			if _, ok := topicConfigs[c.Name]; !ok {
				return kerr.InvalidConfig.Code, checkConfig(c.Name, nil, b.cfg)
			}
			next = next.with(c.Name, nil)
		default:
			return kerr.InvalidConfig.Code, fmt.Sprintf("config %s: operation %d (APPEND or SUBTRACT) on a config that is not a list; nothing was changed", c.Name, c.Op)
		}
	}
	if !validateOnly {
		t.cfg.Store(next)
	}
	return 0, ""
}

// retention is a partition's retention as its topic's configs set it.
type retention struct {
	age   time.Duration // -1: no limit
	bytes int64         // -1: no limit
}

func (t *topic) retention(cfg Config) retention {
	tc := t.cfg.Load()
	ms := tc.int("retention.ms", cfg)
	age := time.Duration(-1)
	if ms >= 0 {
		age = time.Duration(ms) * time.Millisecond
	}
	return retention{age: age, bytes: tc.int("retention.bytes", cfg)}
}

// applyRetention applies every partition's retention: the broker's
// retention task, every LogRetentionCheck.
func (b *Broker) applyRetention() {
	now := time.Now()
	for _, l := range b.allPartitions() {
		l.retain(l.owner.retention(b.cfg), now)
	}
}
