package main

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/purgatory-go/purgatory/purgatory"
)

// The steps that move a group between its states (group.go), each named for
// where it takes the group, as Kafka's GroupCoordinator names them. Every one
// runs under the group's mu.
//
//	Empty, Stable, CompletingRebalance -> PreparingRebalance   prepareRebalance
//	PreparingRebalance -> PreparingRebalance                    extendInitialDelay
//	PreparingRebalance -> CompletingRebalance, or Empty         startGeneration
//	CompletingRebalance -> Stable                               becomeStable
//	any -> Dead                                                 markDead
//
// and, within a state: requireMemberID and admitMember (a JoinGroup of a new
// member), replaceStatic (static.go: a static member's new self),
// removeMember (LeaveGroup, a session's end).

// delayedJoin holds a rebalance's JoinGroups (Kafka's DelayedJoin, and
// InitialDelayedJoin with initial set).
type delayedJoin struct {
	purgatory.Op
	g         *group
	initial   bool          // the first rebalance's delay: it only expires
	remaining time.Duration // of the rebalance timeout, for an initial delay's extensions
}

// TryComplete reports whether every member has rejoined and no member ID
// handed out is still to come back.
func (d *delayedJoin) TryComplete() bool {
	if d.initial {
		return false
	}
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	return d.g.allJoined()
}

// OnComplete ends the rebalance's wait, whichever way it ended: at an
// initial delay's end it waits once more if members joined meanwhile and the
// rebalance timeout allows; otherwise the next generation starts. A join
// ended by shutdown leaves the group Dead.
func (d *delayedJoin) OnComplete() {
	g := d.g
	g.lock()
	defer g.unlock()
	switch {
	case g.join != d:
	case d.Outcome() == purgatory.Closed:
		g.markDead()
	case d.initial && g.joinedLate && d.remaining > 0:
		g.extendInitialDelay(d)
	default:
		g.startGeneration()
	}
}

func (d *delayedJoin) OnExpiration() {}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joining == nil {
			return false
		}
	}
	return true
}

// prepareRebalance moves g to PreparingRebalance: a join operation, which
// unlock watches, holds the members' JoinGroups until all have rejoined or
// the largest rebalance timeout passes; a group's first rebalance waits the
// initial delay instead. Syncs waiting for an assignment are answered
// REBALANCE_IN_PROGRESS: they must rejoin.
func (g *group) prepareRebalance() {
	if g.state == groupCompletingRebalance {
		for _, m := range g.members {
			if m.syncing != nil {
				m.syncing.fail(kerr.RebalanceInProgress.Code)
				m.syncing = nil
			}
		}
	}
	d := &delayedJoin{g: g}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalance)
	}
	d.Timeout = due(timeout)
	if delay := g.c.initialDelay; g.state == groupEmpty && delay > 0 {
		d.initial = true
		d.Timeout = due(min(delay, timeout))
		d.remaining = timeout - min(delay, timeout)
		g.joinedLate = false
	}
	g.state = groupPreparingRebalance
	g.join, g.starting = d, d
}

// extendInitialDelay keeps g in PreparingRebalance for one more initial
// delay, within what is left of the rebalance timeout, because members
// joined during the last one: a fleet starting together gets one rebalance.
func (g *group) extendInitialDelay(last *delayedJoin) {
	next := &delayedJoin{g: g, initial: true}
	wait := min(g.c.initialDelay, last.remaining)
	next.Timeout, next.remaining = due(wait), last.remaining-wait
	g.join, g.starting, g.joinedLate = next, next, false
}

// due is a wait as an operation's Timeout: a wait of zero (a rebalance
// timeout of 0) is due at once, where a zero Timeout would be a mistake.
func due(wait time.Duration) time.Duration {
	if wait <= 0 {
		return -1
	}
	return wait
}

// startGeneration ends a rebalance: the members that did not rejoin are
// dropped and the generation moves on. With members left, g moves to
// CompletingRebalance: a leader and a protocol are chosen and every JoinGroup
// is answered, the leader's with the members. With none, g is Empty.
func (g *group) startGeneration() {
	g.join = nil
	for _, m := range g.members {
		if m.joining == nil {
			g.c.b.cfg.Logf("kafka: group %s: member %s did not rejoin in time", g.id, m.id)
			g.drop(m)
			m.alive.Stop()
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = groupEmpty, "", ""
		return
	}
	if g.members[g.leader] == nil {
		g.leader = g.anyMember()
	}
	g.protocol = g.chooseProtocol()
	g.state = groupCompletingRebalance
	for _, m := range g.members {
		m.joining.answer(g, m)
		m.joining = nil
		m.beat()
	}
}

// anyMember returns the ID of one of g's members, "" if it has none.
func (g *group) anyMember() string {
	for id := range g.members {
		return id
	}
	return ""
}

// becomeStable moves g from CompletingRebalance to Stable with the leader's
// assignment, and answers every SyncGroup waiting for it.
func (g *group) becomeStable(assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = nil
	}
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = a.MemberAssignment
		}
	}
	g.state = groupStable
	for _, m := range g.members {
		if m.syncing != nil {
			m.syncing.answer(m.assignment, g)
			m.syncing = nil
		}
	}
}

// markDead moves g to Dead, for the broker's shutdown: every session stops,
// and every waiting JoinGroup and SyncGroup is answered NOT_COORDINATOR (the
// client looks for the coordinator again).
func (g *group) markDead() {
	g.state, g.join = groupDead, nil
	for _, m := range g.pending {
		m.alive.Stop()
	}
	for _, m := range g.members {
		m.release(kerr.NotCoordinator.Code)
	}
}

// requireMemberID answers a first JoinGroup of v4 and later with an ID to
// come back with, within its session, before it counts as a member (KIP-394).
func (g *group) requireMemberID(client client, j *pendingJoin, session time.Duration) {
	m := g.c.newMember(g, newMemberID(client.id))
	m.session = session
	g.pending[m.id] = m
	m.beat()
	j.fail(kerr.MemberIDRequired.Code, m.id)
}

// admitMember makes m, new or back with the ID it was given, a member of g,
// static if req gives an instance id. The first member leads, and sets an
// Empty group's protocol type; one that joins during the initial delay
// extends it.
func (g *group) admitMember(m *member, client client, req *kmsg.JoinGroupRequest) *member {
	m.clientID, m.host = client.id, client.host
	g.members[m.id] = m
	if req.InstanceID != nil {
		m.instance = *req.InstanceID
		g.static[m.instance] = m
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if g.state == groupEmpty {
		g.protocolType = req.ProtocolType
	}
	if g.join != nil && g.join.initial {
		g.joinedLate = true
	}
	return m
}

// removeMember drops m from g, answering what it waits for
// UNKNOWN_MEMBER_ID; a Stable or CompletingRebalance group rebalances.
func (g *group) removeMember(m *member) {
	g.drop(m)
	m.release(kerr.UnknownMemberID.Code)
	if g.leader == m.id {
		g.leader = g.anyMember()
	}
	switch g.state {
	case groupStable, groupCompletingRebalance:
		g.prepareRebalance()
	}
}

// drop takes m out of g's members, and out of its instance id's place.
func (g *group) drop(m *member) {
	delete(g.members, m.id)
	if m.instance != "" && g.static[m.instance] == m {
		delete(g.static, m.instance)
	}
}

// beat starts m's session anew. The caller holds the group's mu.
func (m *member) beat() {
	m.deadline = time.Now().Add(m.session)
	m.alive.Reset(m.session)
}

// Fire is m's session's end: it removes m, unless it waits in a join or a
// sync (then it is alive: a new session starts), or a heartbeat came since
// the timer fired. A member ID handed out and not brought back is forgotten.
func (m *member) Fire() {
	g := m.g
	g.lock()
	defer g.unlock()
	switch {
	case time.Now().Before(m.deadline):
	case g.pending[m.id] == m:
		delete(g.pending, m.id) // the join may have waited for it: unlock checks
	case g.members[m.id] != m:
	case m.joining != nil || m.syncing != nil:
		m.beat()
	default:
		g.c.b.cfg.Logf("kafka: group %s: member %s expired after %v without a heartbeat", g.id, m.id, m.session)
		g.removeMember(m)
	}
}
