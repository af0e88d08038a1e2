package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKcat: lines produced with librdkafka's kcat (acks=all) are read back
// with kcat -C -e, byte for byte. CI installs kcat and sets KCAT_REQUIRED, so
// that there the test cannot skip.
func TestKcat(t *testing.T) {
	kcat := needKcat(t)
	_, addr, _ := startBroker(t, Config{Replicas: 3, AutoCreate: true})
	var in bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&in, "line %d: \x01 bytes \xff as they are, %s\n", i, bytes.Repeat([]byte{'x'}, i%50))
	}
	produce := exec.Command(kcat, "-b", addr, "-P", "-t", "lines", "-p", "0", "-X", "acks=all")
	produce.Stdin = bytes.NewReader(in.Bytes())
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	consume := exec.Command(kcat, "-b", addr, "-C", "-t", "lines", "-p", "0", "-o", "beginning", "-e", "-q")
	var stderr bytes.Buffer
	consume.Stderr = &stderr
	out, err := consume.Output()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, stderr.Bytes())
	}
	if !bytes.Equal(out, in.Bytes()) {
		t.Errorf("kcat read back %d bytes, produced %d; first difference at byte %d", len(out), in.Len(), firstDiff(out, in.Bytes()))
	}
}

// needKcat returns kcat's path, or skips the test if kcat is not installed;
// CI installs it and sets KCAT_REQUIRED, so that there the test fails
// instead.
func needKcat(t *testing.T) string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		required(t, "KCAT_REQUIRED", "kcat is not installed (apt-get install kcat)")
	}
	return kcat
}

// required fails the test if the variable env is set (CI sets it where it
// installs what the test needs), and skips it otherwise, saying why.
func required(t *testing.T, env, why string) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// kcatMember is a kcat balanced consumer (-G) of a test, and the records it
// printed: partition and offset by value.
type kcatMember struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	seen map[string][]kcatRecord
	done chan struct{}
}

type kcatRecord struct {
	partition int32
	offset    int64
	at        time.Time
}

func startKcatMember(t *testing.T, kcat, addr, group, topic string) *kcatMember {
	t.Helper()
	cmd := exec.Command(kcat, "-b", addr, "-G", group, "-q", "-u", "-f", "%p %o %s\\n",
		"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
		"-X", "auto.commit.interval.ms=100", "-X", "auto.offset.reset=earliest",
		"-X", "fetch.wait.max.ms=100", topic)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &kcatMember{cmd: cmd, seen: map[string][]kcatRecord{}, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		s := bufio.NewScanner(out)
		for s.Scan() {
			var r kcatRecord
			var v string
			if _, err := fmt.Sscanf(s.Text(), "%d %d %s", &r.partition, &r.offset, &v); err != nil {
				t.Errorf("kcat printed %q: %v", s.Text(), err)
				continue
			}
			r.at = time.Now()
			m.mu.Lock()
			m.seen[v] = append(m.seen[v], r)
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("kcat -G stderr:\n%s", stderr.Bytes())
		}
	})
	return m
}

func (m *kcatMember) kill() {
	if m.cmd.ProcessState == nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
		<-m.done
	}
}

func (m *kcatMember) records() map[string][]kcatRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.seen)
}

// TestKcatGroup: two kcat -G members (librdkafka's balanced consumer) split
// a topic; one is killed (SIGKILL: no LeaveGroup, no last commit), and after
// its session timeout the other takes its partitions and reads them from the
// offsets the killed one committed: every record is read, and none below a
// committed offset is read twice.
func TestKcatGroup(t *testing.T) {
	kcat := needKcat(t)
	b, addr, _ := startBroker(t, Config{Replicas: 1, InitialRebalanceDelay: -1}, "kg:4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(from, to int) { produceNumbered(ctx, t, producer, "kg", 4, from, to) }
	a := startKcatMember(t, kcat, addr, "kgrp", "kg")
	waitGroup(ctx, t, b, "kgrp", 1)
	survivor := startKcatMember(t, kcat, addr, "kgrp", "kg")
	waitGroup(ctx, t, b, "kgrp", 2)

	produce(0, 400)
	waitRecords(ctx, t, 400, a, survivor)
	partitions := func(m *kcatMember) map[int32]bool {
		ps := map[int32]bool{}
		for v, rs := range m.records() {
			if len(rs) != 1 {
				t.Errorf("%s read %d times by one member", v, len(rs))
			}
			ps[rs[0].partition] = true
		}
		return ps
	}
	pa, ps := partitions(a), partitions(survivor)
	if len(pa) == 0 || len(ps) == 0 || len(pa)+len(ps) != 4 {
		t.Fatalf("partitions read: %v and %v; want the 4 split between the members", pa, ps)
	}
	// Wait for a's auto-commit of everything it read, then kill it: the
	// survivor must go on from exactly there.
	read := map[int32]int64{} // per partition of a's, the next offset after what it read
	for _, rs := range a.records() {
		read[rs[0].partition] = max(read[rs[0].partition], rs[0].offset+1)
	}
	committed := map[int32]int64{}
	g := b.groups.group("kgrp", false)
	for !maps.Equal(committed, read) {
		if ctx.Err() != nil {
			t.Fatalf("the member to be killed committed %v; it read up to %v", committed, read)
		}
		time.Sleep(10 * time.Millisecond)
		g.mu.Lock()
		for p := range pa {
			if o, ok := g.offsets[topicPartition{"kg", p}]; ok {
				committed[p] = o.offset
			}
		}
		g.mu.Unlock()
	}
	a.kill()
	killed := time.Now()

	produce(400, 500)
	waitRecords(ctx, t, 500, a, survivor)
	var first time.Time
	for v, rs := range survivor.records() {
		for _, r := range rs {
			if !pa[r.partition] {
				continue
			}
			if first.IsZero() || r.at.Before(first) {
				first = r.at
			}
			if r.offset < committed[r.partition] {
				t.Errorf("%s at partition %d offset %d read again below the killed member's commit (%d)", v, r.partition, r.offset, committed[r.partition])
			}
		}
	}
	t.Logf("partitions %v moved to the survivor %v after the kill (session timeout 6 s, heartbeat interval 0.5 s); committed there: %v", pa, first.Sub(killed), committed)
}

// waitRecords waits until the members have read n distinct records between
// them.
func waitRecords(ctx context.Context, t *testing.T, n int, members ...*kcatMember) {
	t.Helper()
	for {
		seen := map[string]bool{}
		for _, m := range members {
			for v := range m.records() {
				seen[v] = true
			}
		}
		if len(seen) == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the members read %d distinct records; want %d", len(seen), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
