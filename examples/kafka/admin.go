package main

import (
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// served is the requests this broker serves, and the versions of each.
// Produce and Fetch stop before the versions that name topics by id only.
var served map[kmsg.Key]api

type api struct {
	min, max int16
	handle   func(b *Broker, c *conn, req kmsg.Request, reply func(kmsg.Response))
}

func init() { // not a plain initializer: ApiVersions reads the table
	served = map[kmsg.Key]api{
		kmsg.Produce: {3, 9, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			b.handleProduce(r.(*kmsg.ProduceRequest), reply)
		}},
		kmsg.Fetch: {4, 12, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) { b.handleFetch(fetchOf(r), reply) }},
		kmsg.ListOffsets: {1, 7, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.listOffsets(r.(*kmsg.ListOffsetsRequest)))
		}},
		kmsg.Metadata: {0, 12, func(b *Broker, c *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.metadata(c, r.(*kmsg.MetadataRequest)))
		}},
		kmsg.ApiVersions: {0, 3, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) { reply(apiVersions(r)) }},
		kmsg.CreateTopics: {0, 7, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.createTopics(r.(*kmsg.CreateTopicsRequest)))
		}},
		kmsg.DeleteTopics: {0, 6, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.deleteTopics(r.(*kmsg.DeleteTopicsRequest)))
		}},
		kmsg.DescribeConfigs: {0, 4, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.describeConfigs(r.(*kmsg.DescribeConfigsRequest)))
		}},
		kmsg.IncrementalAlterConfigs: {0, 1, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.incrementalAlterConfigs(r.(*kmsg.IncrementalAlterConfigsRequest)))
		}},
		kmsg.InitProducerID: {0, 4, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.initProducerID(r.(*kmsg.InitProducerIDRequest)))
		}},

		// The group coordinator (group.go): the classic protocol, with
		// static membership (KIP-345, static.go). Not the new protocol
		// (ConsumerGroupHeartbeat, KIP-848).
		kmsg.FindCoordinator: {0, 4, func(b *Broker, c *conn, r kmsg.Request, reply func(kmsg.Response)) {
			reply(b.findCoordinator(c, r.(*kmsg.FindCoordinatorRequest)))
		}},
		kmsg.JoinGroup: {0, 9, func(b *Broker, c *conn, r kmsg.Request, reply func(kmsg.Response)) {
			b.groups.joinGroup(client{c.clientID, c.host()}, r.(*kmsg.JoinGroupRequest), reply)
		}},
		kmsg.SyncGroup: {0, 5, func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) {
			b.groups.syncGroup(r.(*kmsg.SyncGroupRequest), reply)
		}},
		kmsg.Heartbeat:      {0, 4, groupAnswer((*coordinator).heartbeat)},
		kmsg.LeaveGroup:     {0, 5, groupAnswer((*coordinator).leaveGroup)},
		kmsg.OffsetCommit:   {0, 8, groupAnswer((*coordinator).offsetCommit)},
		kmsg.OffsetFetch:    {0, 7, groupAnswer((*coordinator).offsetFetch)},
		kmsg.ListGroups:     {0, 4, groupAnswer((*coordinator).listGroups)},
		kmsg.DescribeGroups: {0, 5, groupAnswer((*coordinator).describeGroups)},
		kmsg.DeleteGroups:   {0, 2, groupAnswer((*coordinator).deleteGroups)},
	}
}

// groupAnswer is the handler of a group request that the coordinator
// answers at once.
func groupAnswer[R kmsg.Request](answer func(*coordinator, R) kmsg.Response) func(*Broker, *conn, kmsg.Request, func(kmsg.Response)) {
	return func(b *Broker, _ *conn, r kmsg.Request, reply func(kmsg.Response)) { reply(answer(b.groups, r.(R))) }
}

// fetchOf makes a client's fetch a consumer's: only the broker's own
// followers fetch as replicas.
func fetchOf(r kmsg.Request) *kmsg.FetchRequest {
	req := r.(*kmsg.FetchRequest)
	req.ReplicaID = -1
	return req
}

func apiVersions(r kmsg.Request) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	for key := kmsg.Key(0); key < 100; key++ {
		if s, ok := served[key]; ok {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = key.Int16(), s.min, s.max
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
	}
	return resp
}

// metadata describes node 0, the only broker, as leader of every partition,
// with its replicas (0, and the followers 1 to R-1, which live inside it and
// so are listed by ID only) and the ISR as it is now (isr.go), and creates
// the topics asked for if AutoCreate is set and the request allows it.
func (b *Broker) metadata(c *conn, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port, _ := net.SplitHostPort(c.nc.LocalAddr().String())
	p, _ := strconv.Atoi(port)
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 0, host, int32(p)
	resp.Brokers = append(resp.Brokers, br)
	cluster := "purgatory"
	resp.ClusterID, resp.ControllerID = &cluster, 0

	var names []string
	if req.Topics == nil {
		b.mu.Lock()
		for name := range b.topics {
			names = append(names, name)
		}
		b.mu.Unlock()
	}
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		t := b.topic(name)
		if t == nil && b.cfg.AutoCreate && (req.Version < 4 || req.AllowAutoTopicCreation) {
			if _, err := b.CreateTopic(name, 0); err == nil {
				t = b.topic(name)
			}
		}
		if t == nil {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID, rt.IsInternal = t.id, t.internal
		for _, l := range t.partitions {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.LeaderEpoch = l.index, 0, 0
			rp.Replicas, rp.ISR = l.replicas()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) topic(name string) *topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topics[name]
}

// createTopics creates each topic asked for, with its configs (configs.go):
// one with a config the broker does not honour, or a bad value, is answered
// INVALID_CONFIG and not created. ValidateOnly checks and creates nothing.
func (b *Broker) createTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		code, msg := b.createTopicFor(t, req.ValidateOnly)
		rt.ErrorCode = code
		if msg != "" {
			rt.ErrorMessage = kmsg.StringPtr(msg)
		}
		if tp := b.topic(t.Topic); tp != nil && code == 0 {
			rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = tp.id, int32(len(tp.partitions)), int16(b.cfg.Replicas)
			rt.Configs = createdConfigs(tp.cfg.Load(), b.cfg)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createTopicFor checks one topic of a CreateTopics request and, unless
// validateOnly, creates it; it returns the error code and message.
func (b *Broker) createTopicFor(t kmsg.CreateTopicsRequestTopic, validateOnly bool) (int16, string) {
	n := int(t.NumPartitions)
	if n == -1 {
		n = 0 // the broker's default
	}
	tc, msg := configsOf(t.Configs, b.cfg)
	switch {
	case !validTopic(t.Topic):
		return kerr.InvalidTopicException.Code, ""
	case n < 0 || n > maxPartitions:
		return kerr.InvalidPartitions.Code, "partitions: 1 to " + strconv.Itoa(maxPartitions)
	case t.ReplicationFactor != -1 && int(t.ReplicationFactor) != b.cfg.Replicas:
		return kerr.InvalidReplicationFactor.Code, "this broker runs every partition with " + strconv.Itoa(b.cfg.Replicas) + " replicas; ask for that or -1"
	case len(t.ReplicaAssignment) > 0:
		return kerr.InvalidRequest.Code, "this broker places every replica itself; give a partition count and -1, not a replica assignment"
	case msg != "":
		return kerr.InvalidConfig.Code, msg
	case validateOnly:
		if b.topic(t.Topic) != nil {
			return kerr.TopicAlreadyExists.Code, ""
		}
		return 0, ""
	}
	created, err := b.createTopic(t.Topic, n, tc, false)
	switch {
	case err != nil:
		return kerr.NotLeaderForPartition.Code, err.Error()
	case !created:
		return kerr.TopicAlreadyExists.Code, ""
	}
	return 0, ""
}

// createdConfigs lists a new topic's configs, as CreateTopics v5 and later
// answer them.
func createdConfigs(tc *topicConfig, cfg Config) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, v := range tc.values(cfg) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = v.name, kmsg.StringPtr(v.value), int8(v.source())
		out = append(out, c)
	}
	return out
}

// listOffsets answers the earliest offset (-2), the latest a consumer can
// read (-1: the high watermark), or the first offset of the first batch whose
// newest record is at or after a timestamp.
func (b *Broker) listOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			l := b.partition(t.Topic, p.Partition)
			switch {
			case l == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Timestamp == -2:
				rp.Offset, _, _ = l.offsets()
			case p.Timestamp == -1:
				_, rp.Offset, _ = l.offsets()
			default:
				rp.Offset, rp.Timestamp = l.offsetAt(p.Timestamp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// offsetAt returns the base offset and newest timestamp of the first readable
// batch whose newest record is at or after ts, or the high watermark and -1.
func (l *partitionLog) offsetAt(ts int64) (offset, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, bt := range l.batches.index {
		if bt.base >= l.hw {
			break
		}
		if maxTS := maxTimestamp(l.batches.bytes(i)); maxTS >= ts {
			return bt.base, maxTS
		}
	}
	return l.hw, -1
}

// initProducerID hands out producer ids for idempotent producers.
// Transactions are not supported.
func (b *Broker) initProducerID(req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	b.mu.Lock()
	b.producer++
	resp.ProducerID = b.producer
	b.mu.Unlock()
	resp.ProducerEpoch = 0
	return resp
}
