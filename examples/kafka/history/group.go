package history

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// group keeps cfg.Members members of a consumer group polling the topic.
// Every 1 to 2 s a new member joins, which starts a rebalance, and 5 to 50
// ms later, in the middle of it, an older member is killed (no LeaveGroup:
// the group learns of it at its session timeout, 6 s, and rebalances again).
type group struct {
	cfg     Config
	rec     *recorder
	r       *rand.Rand
	members []*member
	wg      sync.WaitGroup
}

type member struct {
	cl      *kgo.Client
	c       *conns
	session int
	epoch   atomic.Int64 // assignment changes so far
}

func (g *group) run() {
	defer g.wg.Wait()
	for range g.cfg.Members {
		g.join()
	}
	for time.Now().Before(g.rec.until) {
		time.Sleep(time.Duration(1000+g.r.IntN(1000)) * time.Millisecond)
		g.join()
		time.Sleep(time.Duration(5+g.r.IntN(45)) * time.Millisecond)
		i := g.r.IntN(len(g.members) - 1) // not the newest
		victim := g.members[i]
		g.members = append(g.members[:i], g.members[i+1:]...)
		victim.c.kill()
		g.rec.killed(&g.rec.h.Members)
	}
}

// join starts a member polling until the run ends or it is killed.
func (g *group) join() {
	m := &member{session: g.rec.session()}
	moved := func(context.Context, *kgo.Client, map[string][]int32) { m.epoch.Add(1) }
	cl, c, err := client(g.cfg.Addr, kgo.ConsumerGroup(g.cfg.Group), kgo.ConsumeTopics(g.cfg.Topic),
		kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(5*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.FetchMaxWait(300*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(moved), kgo.OnPartitionsRevoked(moved), kgo.OnPartitionsLost(moved))
	if err != nil {
		g.rec.failed(err)
		return
	}
	m.cl, m.c = cl, c
	g.members = append(g.members, m)
	g.wg.Go(func() { m.poll(g.rec) })
}

// poll records what the member polls, with the epoch of its assignment,
// until the run ends or its client is killed, and then closes the client:
// a killed member's LeaveGroup cannot get out.
func (m *member) poll(rec *recorder) {
	defer m.cl.Close()
	for time.Now().Before(rec.until) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		before := int(m.epoch.Load())
		fs := m.cl.PollFetches(ctx)
		cancel()
		if fs.IsClientClosed() || m.c.isDead() {
			return
		}
		epoch := int(m.epoch.Load())
		if epoch != before {
			epoch = -1 // the assignment changed during the poll: no order to check
		}
		rec.poll(pollsOf(fs, m.session, true, epoch, rec.now(), nil)...)
	}
}
