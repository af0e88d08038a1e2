package main

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Static membership (KIP-345). A member that gives a group.instance.id is
// known by it: g.static maps each instance id to the member that holds it
// now. Every step runs under the group's mu.

// fenced returns the error for a request that names instance as its sender's
// instance id and id as its member id: UNKNOWN_MEMBER_ID if no member holds
// the instance id, FENCED_INSTANCE_ID if another member id holds it (the
// sender was replaced by a newer instance of itself), 0 if it names none or
// the right one.
func (g *group) fenced(id string, instance *string) int16 {
	if instance == nil {
		return 0
	}
	switch s := g.static[*instance]; {
	case s == nil:
		return kerr.UnknownMemberID.Code
	case s.id != id:
		return kerr.FencedInstanceID.Code
	}
	return 0
}

// replaceStatic is a static member coming back (a JoinGroup with its
// instance id and no member id): a new member takes old's place, with a new
// id, old's assignment and leadership, and old is fenced (what it waits for
// is answered FENCED_INSTANCE_ID). In a Stable group whose protocols it did
// not change, it is answered at once with the current generation, and no
// rebalance begins; it returns nil then. Otherwise it returns the new member
// to rejoin, which rebalances the group.
func (g *group) replaceStatic(old *member, client client, j *pendingJoin, session, rebalance time.Duration) *member {
	m := g.c.newMember(g, newMemberID(client.id))
	m.instance, m.assignment = old.instance, old.assignment
	m.clientID, m.host = client.id, client.host
	m.session, m.rebalance = session, rebalance
	old.release(kerr.FencedInstanceID.Code)
	delete(g.members, old.id)
	g.members[m.id], g.static[m.instance] = m, m
	if g.leader == old.id {
		g.leader = m.id
	}
	if g.state == groupStable && sameProtocols(old.protocols, j.req.Protocols) {
		m.protocols = j.req.Protocols
		j.answerReplaced(g, m, old.id)
		m.beat()
		return nil
	}
	return m // its protocols unset: rejoin sees a change and rebalances
}

// answerReplaced answers the JoinGroup of a static member that took its old
// place in a Stable group: the current generation, no rebalance. A leader of
// JoinGroup v9 and later is told to skip the assignment and send the one it
// has (KIP-814); an older leader is told that its old id leads, so that it
// does not assign at all (a Stable group would not hand a new one out).
func (j *pendingJoin) answerReplaced(g *group, m *member, oldID string) {
	resp := j.generation(g, m)
	if m.id == g.leader {
		if j.req.Version >= 9 {
			resp.SkipAssignment = true
		} else {
			resp.LeaderID, resp.Members = oldID, nil
		}
	}
	j.reply(resp)
}

// sameProtocols reports whether two JoinGroups offer the same protocols
// with the same metadata, in the same order.
func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// leaving returns the member a LeaveGroup names, by its instance id if it
// gives one (then the member id, if also given, must be the one that holds
// it), with the error for one it does not name rightly.
func (g *group) leaving(l kmsg.LeaveGroupRequestMember) (id string, code int16) {
	if l.InstanceID == nil {
		return l.MemberID, 0
	}
	s := g.static[*l.InstanceID]
	switch {
	case s == nil:
		return l.MemberID, kerr.UnknownMemberID.Code
	case l.MemberID != "" && l.MemberID != s.id:
		return l.MemberID, kerr.FencedInstanceID.Code
	}
	return s.id, 0
}
