package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groupState returns a group's state and member count, for tests to wait on.
func (b *Broker) groupState(id string) (groupState, int) {
	g := b.groups.group(id, false)
	if g == nil {
		return groupDead, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state, len(g.members)
}

// groupCommitted returns the sum of a group's committed offsets over all
// partitions: the number of records it has committed past, when every
// partition starts at offset 0.
func (b *Broker) groupCommitted(id string) int64 {
	g := b.groups.group(id, false)
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var n int64
	for _, c := range g.offsets {
		n += c.offset
	}
	return n
}

// waitGroup waits until the group is Stable with n members.
func waitGroup(ctx context.Context, t *testing.T, b *Broker, id string, n int) {
	t.Helper()
	for {
		if s, m := b.groupState(id); s == groupStable && m == n {
			return
		}
		if ctx.Err() != nil {
			s, m := b.groupState(id)
			t.Fatalf("group %s is %v with %d members; want Stable with %d", id, s, m, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupMember is one kgo group consumer of a test, and the records it saw.
type groupMember struct {
	cl   *kgo.Client
	mu   sync.Mutex
	seen map[string][]int64 // value -> offsets at which this member saw it
	done chan struct{}
}

func startMember(t *testing.T, addr, group, topic string, balancer kgo.GroupBalancer) *groupMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	m := &groupMember{cl: cl, seen: map[string][]int64{}, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				m.mu.Lock()
				m.seen[string(r.Value)] = append(m.seen[string(r.Value)], r.Offset)
				m.mu.Unlock()
			})
			// Committed before the next poll: a member that takes over a
			// partition starts after everything this one saw.
			if err := cl.CommitUncommittedOffsets(context.Background()); err != nil && !fs.IsClientClosed() {
				t.Logf("commit: %v", err)
			}
		}
	}()
	return m
}

func (m *groupMember) close() {
	m.cl.Close() // commits nothing more (autocommit is off), leaves the group
	<-m.done
}

func (m *groupMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

// TestGroupConsumers: two kgo group consumers, with the range and the
// cooperative-sticky balancers, split a topic's partitions: every record
// produced is seen by exactly one member, once. When one leaves, the other
// takes its partitions and reads them on from the committed offsets, seeing
// nothing twice.
func TestGroupConsumers(t *testing.T) {
	for name, balancer := range map[string]kgo.GroupBalancer{"range": kgo.RangeBalancer(), "cooperative-sticky": kgo.CooperativeStickyBalancer()} {
		t.Run(name, func(t *testing.T) {
			b, addr, _ := startBroker(t, Config{Replicas: 1, InitialRebalanceDelay: -1}, "g:4")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer producer.Close()
			produce := func(from, to int) { produceNumbered(ctx, t, producer, "g", 4, from, to) }

			one := startMember(t, addr, "grp", "g", balancer)
			defer one.close()
			waitGroup(ctx, t, b, "grp", 1)
			two := startMember(t, addr, "grp", "g", balancer)
			waitGroup(ctx, t, b, "grp", 2)

			produce(0, 400)
			for one.count()+two.count() < 400 {
				if ctx.Err() != nil {
					t.Fatalf("members saw %d and %d of 400 records", one.count(), two.count())
				}
				time.Sleep(5 * time.Millisecond)
			}
			partitionsOf := func(m *groupMember) []int32 {
				m.mu.Lock()
				defer m.mu.Unlock()
				var ps []int32
				for v, offsets := range m.seen {
					var i int
					fmt.Sscanf(v, "r%d", &i)
					if len(offsets) != 1 {
						t.Errorf("%s seen %d times by one member", v, len(offsets))
					}
					if !slices.Contains(ps, int32(i%4)) {
						ps = append(ps, int32(i%4))
					}
				}
				slices.Sort(ps)
				return ps
			}
			p1, p2 := partitionsOf(one), partitionsOf(two)
			if len(p1) == 0 || len(p2) == 0 || len(p1)+len(p2) != 4 || slices.ContainsFunc(p1, func(p int32) bool { return slices.Contains(p2, p) }) {
				t.Fatalf("partitions read: %v and %v; want the 4 split between the members", p1, p2)
			}
			t.Logf("%s: member one read partitions %v, member two %v", name, p1, p2)
			// A member commits after it has seen; closing two before its
			// commit lands would hand one records it must read again.
			for b.groupCommitted("grp") < 400 {
				if ctx.Err() != nil {
					t.Fatalf("the group committed %d of 400 records", b.groupCommitted("grp"))
				}
				time.Sleep(5 * time.Millisecond)
			}

			two.close() // leaves the group: a rebalance gives one every partition
			waitGroup(ctx, t, b, "grp", 1)
			produce(400, 500)
			for one.count()+two.count() < 500 || b.groupCommitted("grp") < 500 {
				if ctx.Err() != nil {
					t.Fatalf("after member two left, members saw %d and %d of 500 records and the group committed %d", one.count(), two.count(), b.groupCommitted("grp"))
				}
				time.Sleep(5 * time.Millisecond)
			}
			one.mu.Lock()
			defer one.mu.Unlock()
			for i := range 500 {
				v := fmt.Sprintf("r%d", i)
				n1, n2 := len(one.seen[v]), len(two.seen[v])
				if n1+n2 != 1 {
					t.Errorf("%s seen %d times by member one and %d by member two; want once in all", v, n1, n2)
				}
			}
		})
	}
}

// TestKafkajsGroup: two kafkajs consumers in one group (kafkajs/group.mjs,
// run with the machine's node; its one dependency pinned in
// kafkajs/package-lock.json and installed with npm ci) split a topic's
// partitions, and every record produced once both hold partitions is read
// exactly once, by the member that holds its partition. CI installs it and
// sets KAFKAJS_REQUIRED, so that there the test cannot skip.
func TestKafkajsGroup(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat("kafkajs/node_modules/kafkajs")
	}
	if err != nil {
		required(t, "KAFKAJS_REQUIRED", fmt.Sprintf("kafkajs cannot run (%v): install Node.js and run npm ci --prefix examples/kafka/kafkajs", err))
	}
	b, addr, _ := startBroker(t, Config{Replicas: 1, InitialRebalanceDelay: -1}, "js:4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const records = 200
	cmd := exec.CommandContext(ctx, node, "group.mjs", addr, "js", "jsgroup", fmt.Sprint(records))
	cmd.Dir = "kafkajs"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Wait()
		t.Fatalf("kafkajs: first line %q, want ready; stderr:\n%s", lines.Text(), stderr.Bytes())
	}
	if s, n := b.groupState("jsgroup"); s != groupStable || n != 2 {
		t.Errorf("group %v with %d members once kafkajs is ready; want Stable with 2", s, n)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produceNumbered(ctx, t, producer, "js", 4, 0, records)
	type read struct {
		Member    int
		Partition int32
		Offset    int64
		Value     string
	}
	seen := map[string]int{}
	owner := map[int32]int{}
	for lines.Scan() {
		var r read
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("kafkajs printed %q: %v", lines.Text(), err)
		}
		seen[r.Value]++
		if m, ok := owner[r.Partition]; ok && m != r.Member {
			t.Errorf("partition %d read by members %d and %d", r.Partition, m, r.Member)
		}
		owner[r.Partition] = r.Member
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kafkajs: %v; stderr:\n%s", err, stderr.Bytes())
	}
	for i := range records {
		if n := seen[fmt.Sprintf("r%d", i)]; n != 1 {
			t.Errorf("r%d read %d times; want once", i, n)
		}
	}
	members := map[int]bool{}
	for _, m := range owner {
		members[m] = true
	}
	if len(members) != 2 {
		t.Errorf("partitions read by %v; want both members", owner)
	}
}
