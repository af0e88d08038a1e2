package main

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/purgatory-go/purgatory/purgatory"
)

// answers collects a handler's replies, for a test in fake time to read.
type answers chan kmsg.Response

func (a answers) reply(r kmsg.Response) { a <- r }

// next returns the answer there is now, or fails: synctest.Wait has run
// everything that could answer.
func (a answers) next(t *testing.T, what string) kmsg.Response {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-a:
		return r
	default:
		t.Fatalf("%s: no answer at %v", what, time.Now().Format("15:04:05.000"))
		return nil
	}
}

// none fails if there is an answer now.
func (a answers) none(t *testing.T, what string) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-a:
		t.Fatalf("%s: answered early: %+v", what, r)
	default:
	}
}

func joinReq(member string, version int16, session, rebalance time.Duration) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version, r.Group, r.MemberID, r.ProtocolType = version, "grp", member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = int32(session/time.Millisecond), int32(rebalance/time.Millisecond)
	for _, name := range []string{"range", "roundrobin"} {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, []byte(member)
		r.Protocols = append(r.Protocols, p)
	}
	return r
}

func syncReq(member string, generation int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version, r.Group, r.MemberID, r.Generation = 5, "grp", member, generation
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func heartbeatReq(member string, generation int32) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.Generation = 4, "grp", member, generation
	return r
}

// TestGroupProtocolInFakeTime walks a group through its states against the
// clock, in fake time: KIP-394's member ID, the initial delay extended by a
// member that joins during it, the leader's assignment answering a parked
// SyncGroup, the checks of member and generation, a member expired by its
// session (6 s) starting a rebalance that the survivor completes, a member
// that does not rejoin within the rebalance timeout dropped, commits and
// fetches of offsets, and shutdown answering a parked JoinGroup.
func TestGroupProtocolInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBroker(Config{Replicas: 1, InitialRebalanceDelay: 3 * time.Second, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.CreateTopic("t", 2); err != nil {
			t.Fatal(err)
		}
		c := b.groups
		start := time.Now()
		since := func() time.Duration { return time.Since(start).Round(time.Millisecond) }
		const session, rebalance = 6 * time.Second, 10 * time.Second

		// KIP-394: a first JoinGroup (v4+) gets an ID to come back with.
		a1 := answers(make(chan kmsg.Response, 4))
		c.joinGroup(client{"app", "/10.0.0.1"}, joinReq("", 5, session, rebalance), a1.reply)
		r := a1.next(t, "first join").(*kmsg.JoinGroupResponse)
		if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
			t.Fatalf("first join: error %d, member %q; want MEMBER_ID_REQUIRED with an ID", r.ErrorCode, r.MemberID)
		}
		one := r.MemberID
		c.joinGroup(client{"app", "/10.0.0.1"}, joinReq(one, 5, session, rebalance), a1.reply)
		a1.none(t, "join during the initial delay")

		// A second member at 1 s: the delay is extended once, by 3 s.
		time.Sleep(time.Second)
		a2 := answers(make(chan kmsg.Response, 4))
		c.joinGroup(client{"app", "/10.0.0.2"}, joinReq("", 3, session, rebalance), a2.reply) // v3: no KIP-394
		time.Sleep(4*time.Second + 999*time.Millisecond)
		a1.none(t, "join before the extended delay's end")
		time.Sleep(time.Millisecond)
		j1, j2 := a1.next(t, "join 1").(*kmsg.JoinGroupResponse), a2.next(t, "join 2").(*kmsg.JoinGroupResponse)
		if since() != 6*time.Second || j1.Generation != 1 || j2.Generation != 1 || j1.LeaderID != one || len(j1.Members) != 2 || len(j2.Members) != 0 || *j1.Protocol != "range" {
			t.Fatalf("at %v: joins answered gen %d/%d, leader %q (want %q), members %d/%d, protocol %v", since(), j1.Generation, j2.Generation, j1.LeaderID, one, len(j1.Members), len(j2.Members), *j1.Protocol)
		}
		two := j2.MemberID

		// The follower's SyncGroup waits for the leader's.
		s2 := answers(make(chan kmsg.Response, 2))
		c.syncGroup(syncReq(two, 1, nil), s2.reply)
		s2.none(t, "follower's sync")
		s1 := answers(make(chan kmsg.Response, 2))
		c.syncGroup(syncReq(one, 1, map[string]string{one: "p0", two: "p1"}), s1.reply)
		if a := s1.next(t, "leader's sync").(*kmsg.SyncGroupResponse); string(a.MemberAssignment) != "p0" {
			t.Fatalf("leader's assignment %q", a.MemberAssignment)
		}
		if a := s2.next(t, "follower's sync").(*kmsg.SyncGroupResponse); string(a.MemberAssignment) != "p1" {
			t.Fatalf("follower's assignment %q", a.MemberAssignment)
		}
		if s, n := b.groupState("grp"); s != groupStable || n != 2 {
			t.Fatalf("group %v with %d members; want Stable with 2", s, n)
		}

		// Member and generation are checked.
		for _, tc := range []struct {
			member string
			gen    int32
			want   int16
		}{{one, 1, 0}, {one, 0, kerr.IllegalGeneration.Code}, {"nobody", 1, kerr.UnknownMemberID.Code}} {
			if code := c.heartbeat(heartbeatReq(tc.member, tc.gen)).(*kmsg.HeartbeatResponse).ErrorCode; code != tc.want {
				t.Errorf("heartbeat of %q at generation %d: error %d, want %d", tc.member, tc.gen, code, tc.want)
			}
		}
		commit := func(member string, gen int32, offset int64) int16 {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version, r.Group, r.MemberID, r.Generation = 8, "grp", member, gen
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = 0, offset
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return c.offsetCommit(r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}
		if code := commit(one, 0, 5); code != kerr.IllegalGeneration.Code {
			t.Errorf("commit at an old generation: error %d, want ILLEGAL_GENERATION", code)
		}
		if code := commit(one, 1, 42); code != 0 {
			t.Errorf("commit: error %d", code)
		}
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Version, fetch.Group = 7, "grp"
		ft := kmsg.NewOffsetFetchRequestTopic()
		ft.Topic, ft.Partitions = "t", []int32{0, 1}
		fetch.Topics = append(fetch.Topics, ft)
		if ps := c.offsetFetch(fetch).(*kmsg.OffsetFetchResponse).Topics[0].Partitions; ps[0].Offset != 42 || ps[1].Offset != -1 {
			t.Errorf("offsets fetched: %d, %d; want 42, -1", ps[0].Offset, ps[1].Offset)
		}

		// Member two falls silent; one heartbeats. Two's session ends 6 s
		// after its last sign of life (its sync), never sooner, and at
		// most a tick of the wheel (1 ms) later; one's next heartbeat is
		// told to rejoin.
		time.Sleep(session / 2)
		if code := c.heartbeat(heartbeatReq(one, 1)).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
			t.Fatalf("heartbeat: error %d", code)
		}
		time.Sleep(session/2 - time.Millisecond)
		if s, n := b.groupState("grp"); s != groupStable || n != 2 {
			t.Fatalf("1 ms before two's session ends: %v with %d members; want Stable with 2", s, n)
		}
		time.Sleep(2 * time.Millisecond)
		if s, n := b.groupState("grp"); s != groupPreparingRebalance || n != 1 {
			t.Fatalf("1 ms after two's session ended: %v with %d members; want PreparingRebalance with 1", s, n)
		}
		if code := c.heartbeat(heartbeatReq(one, 1)).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.RebalanceInProgress.Code {
			t.Fatalf("one's heartbeat: error %d; want REBALANCE_IN_PROGRESS", code)
		}
		if code := commit(one, 1, 43); code != 0 {
			t.Errorf("commit while rebalancing, before rejoining: error %d, want 0 (allowed)", code)
		}
		c.joinGroup(client{"app", "/10.0.0.1"}, joinReq(one, 5, session, rebalance), a1.reply)
		if j := a1.next(t, "rejoin").(*kmsg.JoinGroupResponse); j.ErrorCode != 0 || j.Generation != 2 || len(j.Members) != 1 {
			t.Fatalf("rejoin alone: error %d, generation %d, %d members; want 0, 2, 1", j.ErrorCode, j.Generation, len(j.Members))
		}
		if code := c.heartbeat(heartbeatReq(two, 1)).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.UnknownMemberID.Code {
			t.Errorf("the expired member's heartbeat: error %d, want UNKNOWN_MEMBER_ID", code)
		}
		c.syncGroup(syncReq(one, 2, map[string]string{one: "p0p1"}), s1.reply)
		s1.next(t, "sync of generation 2")

		// A third member joins; one does not rejoin within the rebalance
		// timeout (10 s; it keeps heartbeating, and is told to rejoin):
		// it is dropped, and the third is the group.
		a3 := answers(make(chan kmsg.Response, 4))
		c.joinGroup(client{"other", "/10.0.0.3"}, joinReq("", 4, session, rebalance), a3.reply)
		three := a3.next(t, "third's first join").(*kmsg.JoinGroupResponse).MemberID
		c.joinGroup(client{"other", "/10.0.0.3"}, joinReq(three, 4, session, rebalance), a3.reply)
		joined := since()
		for range 9 {
			time.Sleep(time.Second)
			c.heartbeat(heartbeatReq(one, 2))
		}
		a3.none(t, "join waiting for one to rejoin")
		time.Sleep(time.Second)
		j3 := a3.next(t, "third's join").(*kmsg.JoinGroupResponse)
		if since()-joined != rebalance || j3.Generation != 3 || j3.LeaderID != three || len(j3.Members) != 1 {
			t.Fatalf("%v after the join: generation %d, leader %q, %d members; want the rebalance timeout, 3, the third alone", since()-joined, j3.Generation, j3.LeaderID, len(j3.Members))
		}
		if code := c.heartbeat(heartbeatReq(one, 2)).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.UnknownMemberID.Code {
			t.Errorf("the dropped member's heartbeat: error %d, want UNKNOWN_MEMBER_ID", code)
		}

		d := c.describeGroups(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"grp", "none"}}).(*kmsg.DescribeGroupsResponse)
		if d.Groups[0].State != "CompletingRebalance" || len(d.Groups[0].Members) != 1 || d.Groups[1].State != "Dead" {
			t.Errorf("described: %s with %d members, and %s; want CompletingRebalance with 1, Dead", d.Groups[0].State, len(d.Groups[0].Members), d.Groups[1].State)
		}

		// Shutdown answers a JoinGroup waiting in a rebalance.
		c.joinGroup(client{"late", "/10.0.0.4"}, joinReq("", 3, session, rebalance), a2.reply)
		a2.none(t, "a join waiting for the third to rejoin")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if j := a2.next(t, "join at shutdown").(*kmsg.JoinGroupResponse); j.ErrorCode != kerr.NotCoordinator.Code {
			t.Errorf("join at shutdown: error %d, want NOT_COORDINATOR", j.ErrorCode)
		}
	})
}

// BenchmarkHeartbeat is what one heartbeat costs the coordinator with 10,000
// members, two ways: Kafka's (end the member's DelayedHeartbeat and watch a
// new one in a heartbeat purgatory) and this broker's (reset the member's own
// timer on the wheel). Both take the group's lock, as a heartbeat does.
func BenchmarkHeartbeat(b *testing.B) {
	const members = 10_000
	br, err := NewBroker(Config{Replicas: 1, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Shutdown(context.Background())
	g := br.groups.group("bench", true)
	ms := make([]*member, members)
	for i := range ms {
		ms[i] = br.groups.newMember(g, fmt.Sprint("m", i))
		ms[i].session = time.Minute
	}
	b.Run("operation-per-heartbeat", func(b *testing.B) {
		heartbeats, err := purgatory.New[*member]("heartbeat", purgatory.WithTimingWheel(br.tw))
		if err != nil {
			b.Fatal(err)
		}
		defer heartbeats.Close()
		beats := make([]*delayedHeartbeat, members)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := i % members
			i++
			g.mu.Lock()
			if beats[k] != nil {
				purgatory.ForceComplete(beats[k])
			}
			d := &delayedHeartbeat{}
			d.Timeout = ms[k].session
			beats[k] = d
			heartbeats.TryCompleteElseWatch(d, ms[k])
			g.mu.Unlock()
		}
	})
	b.Run("owned-timer-reset", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m := ms[i%members]
			i++
			g.mu.Lock()
			m.beat()
			g.mu.Unlock()
		}
		for _, m := range ms {
			m.alive.Stop()
		}
	})
}

// delayedHeartbeat is Kafka's DelayedHeartbeat, for the benchmark: a
// heartbeat ends it; its expiry would expire the member.
type delayedHeartbeat struct{ purgatory.Op }

func (*delayedHeartbeat) TryComplete() bool { return false }
func (*delayedHeartbeat) OnComplete()       {}
func (*delayedHeartbeat) OnExpiration()     {}
