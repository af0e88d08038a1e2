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

// joinGroup is Kafka's handleJoinGroup for the classic protocol: the
// request is checked, its member found or admitted (joiningMember), and its
// JoinGroup recorded (rejoin).
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
	g.lock()
	defer g.unlock()
	if code := g.accepts(req); code != 0 {
		j.fail(code, req.MemberID)
		return
	}
	if m := g.joiningMember(client, j, session, rebalance); m != nil {
		g.rejoin(m, j, session, rebalance)
	}
}

// accepts returns the error a JoinGroup gets from g as it is, 0 if none: a
// Dead group is not coordinated here any more, and a group with members
// takes only a member that supports its protocol type and a protocol of
// every member's.
func (g *group) accepts(req *kmsg.JoinGroupRequest) int16 {
	switch {
	case g.state == groupDead:
		return kerr.NotCoordinator.Code
	case g.state != groupEmpty && (req.ProtocolType != g.protocolType || !g.sharesProtocol(req.Protocols)):
		return kerr.InconsistentGroupProtocol.Code
	}
	return 0
}

// joiningMember returns the member a JoinGroup is for: one of g's, one
// admitted now, or a static member's new self (replaceStatic). A first
// JoinGroup of v4 and later from a dynamic member is given an ID to come back
// with instead (a static member is known by its instance id and joins at
// once), one with an ID g does not know is answered UNKNOWN_MEMBER_ID, and
// one with a stale ID for its instance id FENCED_INSTANCE_ID: those are
// answered here, and nil is returned.
func (g *group) joiningMember(client client, j *pendingJoin, session, rebalance time.Duration) *member {
	id, instance := j.req.MemberID, j.req.InstanceID
	switch {
	case id == "" && instance != nil && g.static[*instance] != nil:
		return g.replaceStatic(g.static[*instance], client, j, session, rebalance)
	case id == "" && j.req.Version >= 4 && instance == nil:
		g.requireMemberID(client, j, session)
		return nil
	case id == "":
		return g.admitMember(g.c.newMember(g, newMemberID(client.id)), client, j.req)
	}
	if code := g.fenced(id, instance); code != 0 {
		j.fail(code, id)
		return nil
	}
	switch {
	case g.pending[id] != nil:
		m := g.pending[id]
		delete(g.pending, id)
		return g.admitMember(m, client, j.req)
	case g.members[id] == nil:
		j.fail(kerr.UnknownMemberID.Code, id)
		return nil
	}
	return g.members[id]
}

// rejoin records m's JoinGroup. During a rebalance it waits for the others
// (unlock checks whether it was the last). Otherwise, if nothing changed for
// the group, it is answered at once with the current generation (a client
// that lost the first answer); else a rebalance begins.
func (g *group) rejoin(m *member, j *pendingJoin, session, rebalance time.Duration) {
	changed := !sameProtocols(m.protocols, j.req.Protocols)
	m.session, m.rebalance, m.protocols = session, rebalance, j.req.Protocols
	if m.joining != nil { // a JoinGroup sent again: the older one is answered as a retry
		m.joining.fail(kerr.RebalanceInProgress.Code, m.id)
	}
	m.joining = j
	switch g.state {
	case groupPreparingRebalance:
		return
	case groupCompletingRebalance, groupStable:
		if !changed && (g.state == groupCompletingRebalance || m.id != g.leader) {
			m.joining = nil
			j.answer(g, m)
			m.beat()
			return
		}
	}
	g.prepareRebalance()
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
// answers if there is none, if instance (its group.instance.id, nil for a
// dynamic member) is held by another member id, or if its generation is not
// the group's. The caller holds g.mu.
func (g *group) member(id string, instance *string, generation int32) (*member, int16) {
	m := g.members[id]
	switch {
	case g.state == groupDead:
		return nil, kerr.NotCoordinator.Code
	case g.fenced(id, instance) != 0:
		return nil, g.fenced(id, instance)
	case m == nil:
		return nil, kerr.UnknownMemberID.Code
	case generation != g.generation:
		return nil, kerr.IllegalGeneration.Code
	}
	return m, 0
}

// syncGroup is Kafka's handleSyncGroup: a member of the current generation
// waits for its assignment, which the leader's SyncGroup brings, or is
// answered with it at once once the group is Stable.
func (c *coordinator) syncGroup(req *kmsg.SyncGroupRequest, reply func(kmsg.Response)) {
	s := &pendingSync{req, reply}
	g := c.group(req.Group, false)
	if g == nil {
		s.fail(kerr.UnknownMemberID.Code)
		return
	}
	g.lock()
	defer g.unlock()
	m, code := g.member(req.MemberID, req.InstanceID, req.Generation)
	if code == 0 && (req.ProtocolType != nil && *req.ProtocolType != g.protocolType ||
		req.Protocol != nil && *req.Protocol != g.protocol) {
		code = kerr.InconsistentGroupProtocol.Code
	}
	switch {
	case code != 0:
		s.fail(code)
	case g.state == groupPreparingRebalance:
		s.fail(kerr.RebalanceInProgress.Code)
	case g.state == groupStable:
		s.answer(m.assignment, g)
		m.beat()
	case g.state == groupCompletingRebalance:
		g.awaitAssignment(m, s)
	}
}

// awaitAssignment parks m's SyncGroup until the leader's brings the
// assignment; the leader's makes the group Stable.
func (g *group) awaitAssignment(m *member, s *pendingSync) {
	if m.syncing != nil {
		m.syncing.fail(kerr.RebalanceInProgress.Code)
	}
	m.syncing = s
	m.beat()
	if m.id == g.leader {
		g.becomeStable(s.req.GroupAssignment)
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
	m, code := g.member(req.MemberID, req.InstanceID, req.Generation)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	m.beat()
	if g.state == groupPreparingRebalance {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
	return resp
}

// leaveGroup removes the members named, one (v0 to v2) or several, by member
// id or (static members, v3 and later) by instance id, and starts the
// rebalance that follows.
func (c *coordinator) leaveGroup(req *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	codes := c.leave(req.Group, leaving)
	if req.Version < 3 {
		resp.ErrorCode = codes[0]
		return resp
	}
	for i, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = l.MemberID, l.InstanceID, codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// leave removes the members of group named by leaving, and returns the error
// code for each: UNKNOWN_MEMBER_ID for one the group does not have,
// FENCED_INSTANCE_ID for a stale member id of an instance id. A member ID
// handed out and not yet brought back is forgotten. Each of leaving named by
// its instance id alone is given the member id that held it.
func (c *coordinator) leave(groupID string, leaving []kmsg.LeaveGroupRequestMember) []int16 {
	codes := make([]int16, len(leaving))
	g := c.group(groupID, false)
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return codes
	}
	g.lock()
	defer g.unlock()
	for i := range leaving {
		id, code := g.leaving(leaving[i])
		leaving[i].MemberID, codes[i] = id, code
		switch m := g.members[id]; {
		case code != 0:
		case g.pending[id] != nil:
			g.pending[id].alive.Stop()
			delete(g.pending, id)
		case m == nil:
			codes[i] = kerr.UnknownMemberID.Code
		default:
			g.removeMember(m)
		}
	}
	return codes
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
				if m.instance != "" {
					rm.InstanceID = kmsg.StringPtr(m.instance)
				}
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
