package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticJoin is a JoinGroup from the static member instance.
func staticJoin(member, instance string, version int16, metadata string) *kmsg.JoinGroupRequest {
	r := joinReq(member, version, 6*time.Second, 10*time.Second)
	r.InstanceID = kmsg.StringPtr(instance)
	for i := range r.Protocols {
		r.Protocols[i].Metadata = []byte(metadata)
	}
	return r
}

// TestStaticMembershipInFakeTime (KIP-345): static members join at once with
// no member id (no MEMBER_ID_REQUIRED); one that restarts with its instance
// id gets a new member id and its assignment back without a rebalance (the
// leader told to skip the assignment at JoinGroup v9, told another leads
// before), and its old id is fenced on every request; a changed protocol
// rebalances; LeaveGroup by instance ids removes several at once; a static
// member whose session ends is dropped with its instance id.
func TestStaticMembershipInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fakeBroker(t, Config{Replicas: 1, InitialRebalanceDelay: time.Second})
		c := b.groups
		join := func(r *kmsg.JoinGroupRequest) answers {
			a := answers(make(chan kmsg.Response, 2))
			c.joinGroup(client{"app", "host"}, r, a.reply)
			return a
		}
		ja, jb := join(staticJoin("", "a", 5, "m")), join(staticJoin("", "b", 5, "m"))
		time.Sleep(2 * time.Second) // the initial delay, extended once by b's join
		ra, rb := ja.next(t, "a's join").(*kmsg.JoinGroupResponse), jb.next(t, "b's join").(*kmsg.JoinGroupResponse)
		if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != 1 || ra.LeaderID != ra.MemberID || len(ra.Members) != 2 {
			t.Fatalf("static joins: errors %d, %d, generation %d, leader %q (a is %q), %d members; want one generation led by a", ra.ErrorCode, rb.ErrorCode, ra.Generation, ra.LeaderID, ra.MemberID, len(ra.Members))
		}
		a1, b1 := ra.MemberID, rb.MemberID
		sync := func(member, instance string, assign map[string]string) *kmsg.SyncGroupResponse {
			r := syncReq(member, 1, assign)
			r.InstanceID = kmsg.StringPtr(instance)
			a := answers(make(chan kmsg.Response, 1))
			c.syncGroup(r, a.reply)
			return a.next(t, "sync of "+instance).(*kmsg.SyncGroupResponse)
		}
		sync(a1, "a", map[string]string{a1: "pa", b1: "pb"})
		if s := sync(b1, "b", nil); s.ErrorCode != 0 || string(s.MemberAssignment) != "pb" {
			t.Fatalf("b's sync: error %d, assignment %q", s.ErrorCode, s.MemberAssignment)
		}

		// b restarts: same protocols, so no rebalance.
		rb = join(staticJoin("", "b", 5, "m")).next(t, "b's rejoin").(*kmsg.JoinGroupResponse)
		b2 := rb.MemberID
		if rb.ErrorCode != 0 || b2 == b1 || rb.Generation != 1 || rb.LeaderID != a1 {
			t.Fatalf("b's rejoin: error %d, member %q (was %q), generation %d, leader %q; want a new id in generation 1 led by a", rb.ErrorCode, b2, b1, rb.Generation, rb.LeaderID)
		}
		if s, _ := b.groupState("grp"); s != groupStable {
			t.Fatalf("after b's rejoin the group is %v; want Stable (no rebalance)", s)
		}
		if s := sync(b2, "b", nil); s.ErrorCode != 0 || string(s.MemberAssignment) != "pb" {
			t.Errorf("b's sync after its rejoin: error %d, assignment %q; want its old pb", s.ErrorCode, s.MemberAssignment)
		}
		heartbeat := func(member, instance string) int16 {
			r := heartbeatReq(member, 1)
			r.InstanceID = kmsg.StringPtr(instance)
			return c.heartbeat(r).(*kmsg.HeartbeatResponse).ErrorCode
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Version, commit.Group, commit.MemberID, commit.Generation, commit.InstanceID = 8, "grp", b1, 1, kmsg.StringPtr("b")
		commit.Topics = append(commit.Topics, kmsg.OffsetCommitRequestTopic{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}})
		if code := c.offsetCommit(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.FencedInstanceID.Code {
			t.Errorf("b's old id commits: error %d, want FENCED_INSTANCE_ID", code)
		}
		for _, tc := range []struct {
			member, instance string
			want             int16
		}{{b1, "b", kerr.FencedInstanceID.Code}, {b2, "b", 0}, {b2, "nobody", kerr.UnknownMemberID.Code}} {
			if code := heartbeat(tc.member, tc.instance); code != tc.want {
				t.Errorf("heartbeat of %s as %s: error %d, want %d", tc.member, tc.instance, code, tc.want)
			}
		}
		if code := join(staticJoin(b1, "b", 5, "m")).next(t, "old b's join").(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.FencedInstanceID.Code {
			t.Errorf("b's old id joins: error %d, want FENCED_INSTANCE_ID", code)
		}

		// a, the leader, restarts: v9 is told to skip the assignment; an
		// older version is told its old id leads, so that it does not assign.
		ra = join(staticJoin("", "a", 9, "m")).next(t, "a's rejoin at v9").(*kmsg.JoinGroupResponse)
		if ra.ErrorCode != 0 || !ra.SkipAssignment || ra.LeaderID != ra.MemberID || len(ra.Members) != 2 {
			t.Errorf("a's rejoin at v9: error %d, skip %v, leader %q (a is %q), %d members; want skip, a leading, both members", ra.ErrorCode, ra.SkipAssignment, ra.LeaderID, ra.MemberID, len(ra.Members))
		}
		a2 := ra.MemberID
		ra = join(staticJoin("", "a", 5, "m")).next(t, "a's rejoin at v5").(*kmsg.JoinGroupResponse)
		if ra.ErrorCode != 0 || ra.LeaderID != a2 || len(ra.Members) != 0 {
			t.Errorf("a's rejoin at v5: error %d, leader %q, %d members; want the old id %q leading, no members", ra.ErrorCode, ra.LeaderID, len(ra.Members), a2)
		}
		a3 := ra.MemberID
		if s, _ := b.groupState("grp"); s != groupStable {
			t.Fatalf("after a's rejoins the group is %v; want Stable", s)
		}

		// b restarts with new metadata: a rebalance; a rejoins.
		nb := join(staticJoin("", "b", 5, "changed"))
		if s, _ := b.groupState("grp"); s != groupPreparingRebalance {
			t.Fatalf("after b's changed rejoin the group is %v; want PreparingRebalance", s)
		}
		na := join(staticJoin(a3, "a", 5, "m"))
		if ra, rb := na.next(t, "a in the rebalance").(*kmsg.JoinGroupResponse), nb.next(t, "b in the rebalance").(*kmsg.JoinGroupResponse); ra.Generation != 2 || rb.Generation != 2 {
			t.Errorf("the rebalance's generations: %d, %d; want 2", ra.Generation, rb.Generation)
		}

		// Both leave by instance id, with one that is not there.
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version, leave.Group = 4, "grp"
		for _, inst := range []string{"a", "b", "nobody"} {
			leave.Members = append(leave.Members, kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr(inst)})
		}
		want := []int16{0, 0, kerr.UnknownMemberID.Code}
		for i, m := range c.leaveGroup(leave).(*kmsg.LeaveGroupResponse).Members {
			if m.ErrorCode != want[i] {
				t.Errorf("leave of %s: error %d, want %d", *m.InstanceID, m.ErrorCode, want[i])
			}
		}
		if s, n := b.groupState("grp"); n != 0 || len(b.groups.group("grp", false).static) != 0 {
			t.Errorf("after both left: %v with %d members; want none, and no instance id held", s, n)
		}

		// A static member whose session (6 s) ends is dropped, instance id and all.
		rc := join(staticJoin("", "c", 5, "m"))
		time.Sleep(time.Second) // the initial delay of an Empty group
		cid := rc.next(t, "c's join").(*kmsg.JoinGroupResponse).MemberID
		time.Sleep(6*time.Second + time.Millisecond)
		if code := heartbeat(cid, "c"); code != kerr.UnknownMemberID.Code {
			t.Errorf("c's heartbeat after its session ended: error %d, want UNKNOWN_MEMBER_ID", code)
		}
		if n := len(b.groups.group("grp", false).static); n != 0 {
			t.Errorf("%d instance ids held after c expired; want 0", n)
		}
	})
}
