package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config says how to run the workload.
type Config struct {
	Addr       string
	Topic      string // made beforehand, with Partitions partitions
	Partitions int32
	Seed       uint64
	Duration   time.Duration
	Producers  int
	Consumers  int // partition consumers at a time
	Members    int // group members at a time
	Group      string
}

// Run runs the workload against cfg.Addr for cfg.Duration, then reads every
// partition to its end once more, and returns the history.
func Run(cfg Config) (*History, error) {
	rec := &recorder{start: time.Now(), h: History{Seed: cfg.Seed}}
	rec.until = rec.start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for i := range cfg.Producers {
		wg.Go(func() { (&producer{cfg: cfg, rec: rec, id: i, r: rand.New(rand.NewPCG(cfg.Seed, uint64(i)))}).run() })
	}
	for i := range cfg.Consumers {
		wg.Go(func() { consume(cfg, rec, rand.New(rand.NewPCG(cfg.Seed, uint64(100+i)))) })
	}
	if cfg.Members > 0 {
		wg.Go(func() { (&group{cfg: cfg, rec: rec, r: rand.New(rand.NewPCG(cfg.Seed, 200))}).run() })
	}
	wg.Wait()
	if err := readToEnd(cfg, rec); err != nil {
		return nil, err
	}
	rec.h.Duration = rec.now()
	return &rec.h, nil
}

// producer sends unique values, "p<id>-<n>", one to three at a time to
// partitions it picks, and waits for their answers; one send in 30 is
// killed: its records are produced and the client is killed at once, so
// that their outcome is unknown (unless an answer came first).
type producer struct {
	cfg Config
	rec *recorder
	id  int
	n   int
	r   *rand.Rand
}

func (p *producer) run() {
	for time.Now().Before(p.rec.until) {
		cl, c, err := client(p.cfg.Addr, kgo.DefaultProduceTopic(p.cfg.Topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(10*time.Second))
		if err != nil {
			p.rec.failed(err)
			return
		}
		for time.Now().Before(p.rec.until) {
			if p.r.IntN(30) == 0 {
				p.killed(cl, c)
				break
			}
			p.sync(cl)
			time.Sleep(time.Duration(p.r.IntN(1000)) * time.Microsecond)
		}
		cl.Close()
	}
}

// records makes one to three new records.
func (p *producer) records() []*kgo.Record {
	rs := make([]*kgo.Record, 1+p.r.IntN(3))
	for i := range rs {
		rs[i] = &kgo.Record{Value: fmt.Appendf(nil, "p%d-%d", p.id, p.n), Partition: p.r.Int32N(p.cfg.Partitions)}
		p.n++
	}
	return rs
}

func (p *producer) sync(cl *kgo.Client) {
	rs := p.records()
	call := p.rec.now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	results := cl.ProduceSync(ctx, rs...)
	ret := p.rec.now()
	for _, res := range results {
		p.rec.send(p.sendOf(res.Record, res.Err, call, ret))
	}
}

func (p *producer) sendOf(r *kgo.Record, err error, call, ret time.Duration) Send {
	s := Send{Producer: p.id, Value: string(r.Value), Partition: r.Partition, Call: call, Return: ret, Offset: -1, Status: Unknown}
	if err == nil {
		s.Offset, s.Status = r.Offset, OK
	}
	return s
}

// killed produces records and kills the client within 2 ms: each record's
// promise then says it was stored (its answer came first) or fails.
func (p *producer) killed(cl *kgo.Client, c *conns) {
	rs := p.records()
	call := p.rec.now()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			defer wg.Done()
			p.rec.send(p.sendOf(r, err, call, p.rec.now()))
		})
	}
	time.Sleep(time.Duration(p.r.IntN(2000)) * time.Microsecond)
	c.kill()
	p.rec.killed(&p.rec.h.Producers)
	cl.Close() // fails every record not yet answered
	wg.Wait()
}
