package main

import (
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator's requests (group.go has its states and
// purgatories): FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, ListGroups and DescribeGroups here; OffsetCommit and
// OffsetFetch in offsets.go.

// findCoordinator names node 0, this broker, as every group's coordinator.
// Transactions are not served, so a transaction coordinator is not found.
func (b *Broker) findCoordinator(c *conn, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port, _ := net.SplitHostPort(c.nc.LocalAddr().String())
	p, _ := strconv.Atoi(port)
	answer := func(keyType int8) (code int16, msg *string) {
		if keyType != 0 {
			return kerr.InvalidRequest.Code, kmsg.StringPtr("this broker coordinates consumer groups only; transactions are not served")
		}
		return 0, nil
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = answer(req.CoordinatorType)
		if resp.ErrorCode == 0 {
			resp.NodeID, resp.Host, resp.Port = 0, host, int32(p)
		}
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.ErrorCode, rc.ErrorMessage = answer(req.CoordinatorType)
		if rc.ErrorCode == 0 {
			rc.NodeID, rc.Host, rc.Port = 0, host, int32(p)
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp
}

// client is who sent a JoinGroup: its client ID and host, as a member is
// described.
type client struct{ id, host string }

// joinGroup is Kafka's handleJoinGroup for the classic protocol.
func (c *coordinator) joinGroup(client client, req *kmsg.JoinGroupRequest, reply func(kmsg.Response)) {
	j := &pendingJoin{req, reply}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session
	}
	switch {
	case req.Group == "":
		j.fail(kerr.InvalidGroupID.Code, req.MemberID)
		return
	case session < minSessionTimeout || session > maxSessionTimeout:
		j.fail(kerr.InvalidSessionTimeout.Code, req.MemberID)
		return
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		j.fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		return
	}
	g := c.group(req.Group, req.MemberID == "")
	if g == nil {
		j.fail(kerr.UnknownMemberID.Code, req.MemberID)
		return
	}
	g.mu.Lock()
	next, check := c.joinLocked(g, client, j, session, rebalance)
	g.mu.Unlock()
	if next != nil || check {
		c.watchJoin(g, next)
	}
}

// joinLocked handles a JoinGroup under g.mu. It returns a join operation to
// watch, or check set if the one under way should be checked.
func (c *coordinator) joinLocked(g *group, client client, j *pendingJoin, session, rebalance time.Duration) (next *delayedJoin, check bool) {
	req := j.req
	if g.state == groupDead {
		j.fail(kerr.NotCoordinator.Code, req.MemberID)
		return nil, false
	}
	if g.state != groupEmpty && (req.ProtocolType != g.protocolType || !g.sharesProtocol(req.Protocols)) {
		j.fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		return nil, false
	}
	id := req.MemberID
	m := g.members[id]
	switch {
	case id == "" && req.Version >= 4:
		// KIP-394: the client must come back with this ID, within its
		// session, before it counts as a member.
		m = c.newMember(g, newMemberID(client.id))
		m.session = session
		g.pending[m.id] = m
		c.beat(m)
		j.fail(kerr.MemberIDRequired.Code, m.id)
		return nil, false
	case id == "" || g.pending[id] != nil:
		if id == "" {
			id = newMemberID(client.id)
		} else {
			m = g.pending[id]
			delete(g.pending, id)
		}
		if m == nil {
			m = c.newMember(g, id)
		}
		m.clientID, m.host = client.id, client.host
		g.members[id] = m
		if g.leader == "" {
			g.leader = id
		}
		if g.state == groupEmpty {
			g.protocolType = req.ProtocolType
		}
		if g.join != nil && g.join.initial {
			g.joinedLate = true
		}
	case m == nil:
		j.fail(kerr.UnknownMemberID.Code, id)
		return nil, false
	}
	changed := !slices.EqualFunc(m.protocols, req.Protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
	m.session, m.rebalance, m.protocols = session, rebalance, req.Protocols
	if m.joining != nil { // a JoinGroup sent again: the older one is answered as a retry
		m.joining.fail(kerr.RebalanceInProgress.Code, m.id)
	}
	m.joining = j
	switch g.state {
	case groupPreparingRebalance:
		return nil, true
	case groupCompletingRebalance, groupStable:
		if !changed && (g.state == groupCompletingRebalance || m.id != g.leader) {
			// Nothing changed for the group: the answer of its
			// generation (a client that lost the first one).
			m.joining = nil
			j.answer(g, m)
			c.beat(m)
			return nil, false
		}
	}
	return c.prepareRebalance(g), false
}

// sharesProtocol reports whether one of protocols is one every member
// supports. The caller holds g.mu.
func (g *group) sharesProtocol(protocols []kmsg.JoinGroupRequestProtocol) bool {
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			all = all && m.supports(p.Name)
		}
		if all {
			return true
		}
	}
	return false
}

// member returns the member of the group named id, with the error Kafka
// answers if there is none or its generation is not the group's. The caller
// holds g.mu.
func (g *group) member(id string, generation int32) (*member, int16) {
	m := g.members[id]
	switch {
	case g.state == groupDead:
		return nil, kerr.NotCoordinator.Code
	case m == nil:
		return nil, kerr.UnknownMemberID.Code
	case generation != g.generation:
		return nil, kerr.IllegalGeneration.Code
	}
	return m, 0
}

// syncGroup is Kafka's handleSyncGroup: the leader's brings the assignment,
// which answers every member's.
func (c *coordinator) syncGroup(req *kmsg.SyncGroupRequest, reply func(kmsg.Response)) {
	s := &pendingSync{req, reply}
	g := c.group(req.Group, false)
	if g == nil {
		s.fail(kerr.UnknownMemberID.Code)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m, code := g.member(req.MemberID, req.Generation)
	switch {
	case code != 0:
		s.fail(code)
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		s.fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	switch g.state {
	case groupPreparingRebalance:
		s.fail(kerr.RebalanceInProgress.Code)
	case groupStable:
		s.answer(m.assignment, g)
		c.beat(m)
	case groupCompletingRebalance:
		if m.syncing != nil {
			m.syncing.fail(kerr.RebalanceInProgress.Code)
		}
		m.syncing = s
		c.beat(m)
		if m.id != g.leader {
			return
		}
		for _, other := range g.members {
			other.assignment = nil
		}
		for _, a := range req.GroupAssignment {
			if other := g.members[a.MemberID]; other != nil {
				other.assignment = a.MemberAssignment
			}
		}
		g.state = groupStable
		for _, other := range g.members {
			if other.syncing != nil {
				other.syncing.answer(other.assignment, g)
				other.syncing = nil
			}
		}
	}
}

// heartbeat is Kafka's handleHeartbeat: it starts the member's session anew,
// and tells it to rejoin while the group rebalances.
func (c *coordinator) heartbeat(req *kmsg.HeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	g := c.group(req.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m, code := g.member(req.MemberID, req.Generation)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	c.beat(m)
	if g.state == groupPreparingRebalance {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
	return resp
}

// leaveGroup removes the members named, one (v0 to v2) or several, and
// starts the rebalance that follows.
func (c *coordinator) leaveGroup(req *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	ids := []string{req.MemberID}
	if req.Version >= 3 {
		ids = ids[:0]
		for _, m := range req.Members {
			ids = append(ids, m.MemberID)
		}
	}
	g := c.group(req.Group, false)
	codes := make([]int16, len(ids))
	var next *delayedJoin
	check := false
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
	} else {
		g.mu.Lock()
		for i, id := range ids {
			switch m := g.members[id]; {
			case g.pending[id] != nil:
				p := g.pending[id]
				delete(g.pending, id)
				p.alive.Stop()
				check = true
			case m == nil:
				codes[i] = kerr.UnknownMemberID.Code
			default:
				if d := c.remove(g, m); d != nil {
					next = d
				}
				check = true
			}
		}
		g.mu.Unlock()
	}
	if next != nil || check {
		c.watchJoin(g, next)
	}
	if req.Version < 3 {
		resp.ErrorCode = codes[0]
		return resp
	}
	for i, id := range ids {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.ErrorCode = id, codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// listGroups lists every group, filtered by state (v4) if asked.
func (c *coordinator) listGroups(req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, g := range c.all() {
		g.mu.Lock()
		state, protocolType := g.state.String(), g.protocolType
		g.mu.Unlock()
		if len(req.StatesFilter) > 0 && !slices.Contains(req.StatesFilter, state) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = g.id, protocolType, state
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// describeGroups describes each group asked for: its state and members, with
// their metadata and assignments once Stable (as Kafka does). A group that
// does not exist is Dead.
func (c *coordinator) describeGroups(req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.State = id, groupDead.String()
		if g := c.group(id, false); g != nil {
			g.mu.Lock()
			rg.State, rg.ProtocolType = g.state.String(), g.protocolType
			if g.state == groupStable {
				rg.Protocol = g.protocol
			}
			for _, m := range g.members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.host
				if g.state == groupStable {
					rm.ProtocolMetadata, rm.MemberAssignment = m.metadata(g.protocol), m.assignment
				}
				rg.Members = append(rg.Members, rm)
			}
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
