package main

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxOffsetMetadata is Kafka's offset.metadata.max.bytes.
const maxOffsetMetadata = 4096

// offsetCommit is Kafka's handleCommitOffsets: a member of the current
// generation commits (also while the group rebalances, so that it can commit
// before it rejoins, but not while the assignment is being handed out), and
// so may a client outside any group (generation -1, no member ID) while the
// group is Empty. The offsets are kept for the broker's life.
func (c *coordinator) offsetCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	simple := req.Generation < 0 && req.MemberID == ""
	code := int16(0)
	g := c.group(req.Group, simple)
	switch {
	case req.Group == "":
		code = kerr.InvalidGroupID.Code
	case g == nil && simple:
		code = kerr.NotCoordinator.Code // shutting down
	case g == nil:
		code = kerr.IllegalGeneration.Code
	}
	if g != nil && code == 0 {
		g.mu.Lock()
		defer g.mu.Unlock()
		switch {
		case simple && g.state == groupEmpty:
		case g.state == groupCompletingRebalance:
			code = kerr.RebalanceInProgress.Code
		default:
			var m *member
			if m, code = g.member(req.MemberID, req.InstanceID, req.Generation); m != nil {
				m.beat() // a commit counts as a heartbeat
			}
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			switch {
			case code != 0:
			case c.b.partition(t.Topic, p.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > maxOffsetMetadata:
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				g.offsets[topicPartition{t.Topic, p.Partition}] = committed{p.Offset, p.LeaderEpoch, p.Metadata}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// offsetFetch answers the offsets committed for the partitions asked for, or
// for every partition with one (no topics, v2 and later); -1 where none is.
func (c *coordinator) offsetFetch(req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	g := c.group(req.Group, false)
	offsets := map[topicPartition]committed{}
	if g != nil {
		g.mu.Lock()
		for tp, o := range g.offsets {
			offsets[tp] = o
		}
		g.mu.Unlock()
	}
	find := func(topic string, partition int32) kmsg.OffsetFetchResponseTopicPartition {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = partition, -1, -1
		if o, ok := offsets[topicPartition{topic, partition}]; ok {
			rp.Offset, rp.LeaderEpoch, rp.Metadata = o.offset, o.epoch, o.metadata
		}
		return rp
	}
	if req.Topics == nil && req.Version >= 2 {
		byTopic := map[string]int{} // index in resp.Topics
		for tp := range offsets {
			i, ok := byTopic[tp.topic]
			if !ok {
				t := kmsg.NewOffsetFetchResponseTopic()
				t.Topic = tp.topic
				i = len(resp.Topics)
				resp.Topics = append(resp.Topics, t)
				byTopic[tp.topic] = i
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, find(tp.topic, tp.partition))
		}
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, find(t.Topic, p))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
