package main

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteTopics deletes each topic named (by name, or by id from v6), as
// deleteTopic does.
func (b *Broker) deleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	named := req.Topics
	if req.Version < 6 {
		named = nil
		for _, name := range req.TopicNames {
			named = append(named, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
		}
	}
	for _, n := range named {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = n.Topic, n.TopicID
		t := b.topicNamed(n)
		switch {
		case t == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if n.Topic == nil {
				rt.ErrorCode = kerr.UnknownTopicID.Code
			}
		case t.internal:
			rt.ErrorCode = kerr.InvalidTopicException.Code
			rt.ErrorMessage = kmsg.StringPtr(t.name + " is internal: it holds every group's offsets and is not deleted")
		default:
			rt.Topic, rt.TopicID = kmsg.StringPtr(t.name), t.id
			if !b.deleteTopic(t) {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code // deleted meanwhile
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// topicNamed returns the topic a DeleteTopics entry names, by name or by id.
func (b *Broker) topicNamed(n kmsg.DeleteTopicsRequestTopic) *topic {
	if n.Topic != nil {
		return b.topic(*n.Topic)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.order {
		if t.id == n.TopicID {
			return t
		}
	}
	return nil
}

// deleteTopic deletes t, and reports whether this call did. Its partitions
// are marked gone first, then taken out of the broker, so that every request
// that finds one from then on answers UNKNOWN_TOPIC_OR_PARTITION; then every
// produce and fetch parked on them is completed at once, through each
// purgatory's key-wide completion: a produce answers the deleted partitions
// UNKNOWN_TOPIC_OR_PARTITION, a fetch its other partitions their data as
// usual. An operation that was being watched as its key was completed sees
// the mark when it tries after its watch (TryComplete). The followers' next
// fetch leaves t out. Last, every group's committed offsets for t are
// dropped: a topic created again under t's name starts empty, with a new id.
func (b *Broker) deleteTopic(t *topic) bool {
	b.mu.Lock()
	if b.topics[t.name] != t {
		b.mu.Unlock()
		return false
	}
	for _, l := range t.partitions {
		l.gone.Store(true)
	}
	delete(b.topics, t.name)
	b.order = slices.DeleteFunc(b.order, func(o *topic) bool { return o == t })
	b.generation++
	b.mu.Unlock()
	for _, l := range t.partitions {
		b.produces.ForceCompleteForKey(l)
		b.fetches.ForceCompleteForKey(fetchKey{l, false})
		b.fetches.ForceCompleteForKey(fetchKey{l, true})
	}
	for _, g := range b.groups.all() {
		g.mu.Lock()
		maps.DeleteFunc(g.offsets, func(tp topicPartition, _ committed) bool { return tp.topic == t.name })
		g.mu.Unlock()
	}
	b.cfg.Logf("kafka: topic %s deleted", t.name)
	return true
}

// deleteGroups deletes each group named with its committed offsets: one
// with members is answered NON_EMPTY_GROUP and kept, one that does not exist
// GROUP_ID_NOT_FOUND.
func (c *coordinator) deleteGroups(req *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, c.deleteGroup(id)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (c *coordinator) deleteGroup(id string) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil || c.closed {
		return kerr.GroupIDNotFound.Code
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != groupEmpty || len(g.pending) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	g.state = groupDead // a request that found it before answers NOT_COORDINATOR and looks again
	delete(c.groups, id)
	return 0
}
