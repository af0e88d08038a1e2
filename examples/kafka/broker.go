package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
	"github.com/purgatory-go/purgatory/timingwheel"
)

// Config is how a Broker runs. The zero value of each field means its default.
type Config struct {
	Partitions      int           // of a topic created without a count (default 1)
	Replicas        int           // R: each partition's replicas, the leader included (default 3)
	AutoCreate      bool          // create a topic the first time a client asks for it
	FollowerMaxWait time.Duration // a follower's fetch long-polls this long (default 500 ms)
	FollowerDelay   time.Duration // a follower waits this long before each fetch (a slow replica)
	MaxFrameBytes   int32         // the largest request accepted (default 100 MiB, Kafka's socket.request.max.bytes)
	MaxMessageBytes int           // the largest record batch a produce may carry (default 1048588, Kafka's message.max.bytes)
	// ReplicaLagMax is how long a follower may go without catching up
	// before it leaves the ISR (Kafka's replica.lag.time.max.ms; default
	// 30 s).
	ReplicaLagMax time.Duration
	// MinInsyncReplicas is how many replicas, the leader included, must be
	// in sync for an acks=all produce (Kafka's min.insync.replicas; default
	// 1, at most Replicas).
	MinInsyncReplicas int
	// InitialRebalanceDelay is how long a group's first rebalance waits for
	// more members (Kafka's group.initial.rebalance.delay.ms; default 3 s,
	// negative for none).
	InitialRebalanceDelay time.Duration
	// LogRetention is how long a batch is kept, the default of a topic's
	// retention.ms (Kafka's log.retention.ms; default 7 days, negative
	// for ever).
	LogRetention time.Duration
	// LogRetentionBytes is the size a partition is cut back to, the
	// default of a topic's retention.bytes (Kafka's log.retention.bytes;
	// default and negative: no limit).
	LogRetentionBytes int64
	// LogRetentionCheck is how often retention is applied (Kafka's
	// log.retention.check.interval.ms; default 5 minutes); retention.bytes
	// is also applied at each append.
	LogRetentionCheck time.Duration
	Logf              func(format string, args ...any)
}

// Broker is one Kafka broker, node 0, leader of every partition; each
// partition's followers are goroutines of the same process. Produce requests
// with acks=all wait in one purgatory until every replica holds their records;
// fetches wait in another until enough bytes arrive or their MaxWait passes.
// Both purgatories share one timing wheel.
type Broker struct {
	cfg           Config
	tw            *timingwheel.TimingWheel
	produces      *purgatory.Purgatory[*partitionLog]
	fetches       *purgatory.Purgatory[fetchKey]
	groups        *coordinator       // its join purgatory and its members' sessions share the wheel
	isrTask       *timingwheel.Timer // the ISR expiration task (isr.go); nil with one replica
	retentionTask *timingwheel.Timer // applies retention (configs.go)
	ctx           context.Context    // done when Shutdown begins
	cancel        context.CancelFunc

	mu        sync.Mutex
	topics    map[string]*topic
	order     []*topic // as created
	listeners []net.Listener
	conns     map[*conn]struct{}
	stalled   chan struct{} // closed when followers may go on; nil when they are not stalled
	// followerFetches are the followers' fetches parked now, for
	// wakeFollowers; handleFetch records them, and their answer forgets them.
	followerFetches map[int]*delayedFetch
	generation      int         // topics created so far
	known           map[int]int // per follower, the generation of its partition list
	producer        int64       // the last producer id handed out

	wg sync.WaitGroup // connections and followers
}

type topic struct {
	name       string
	id         [16]byte
	internal   bool // __consumer_offsets: listed as internal, not produced to, not deleted
	partitions []*partitionLog
	cfg        atomic.Pointer[topicConfig] // configs.go
}

// fetchKey is what a fetch waits on: a partition, as a consumer (which reads
// up to the high watermark) or as a follower (which reads up to the log end).
// An append wakes the followers; a rising high watermark wakes the consumers.
type fetchKey struct {
	log      *partitionLog
	follower bool
}

// NewBroker returns a broker with no topics and nothing served yet.
func NewBroker(cfg Config) (*Broker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tw, err := timingwheel.New()
	if err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, tw: tw, topics: map[string]*topic{}, conns: map[*conn]struct{}{}, followerFetches: map[int]*delayedFetch{}, known: map[int]int{}}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	var joins *purgatory.Purgatory[*group]
	if b.produces, err = purgatory.New[*partitionLog]("produce", purgatory.WithTimingWheel(tw)); err == nil {
		b.fetches, err = purgatory.New[fetchKey]("fetch", purgatory.WithTimingWheel(tw))
	}
	if err == nil {
		joins, err = purgatory.New[*group]("join", purgatory.WithTimingWheel(tw))
	}
	if err != nil {
		tw.Stop()
		return nil, err
	}
	b.groups = newCoordinator(b, joins, tw, max(0, cfg.InitialRebalanceDelay))
	if cfg.Replicas > 1 {
		b.isrTask = tw.ScheduleFunc(timingwheel.Every(cfg.ReplicaLagMax/2), b.shrinkISRs)
	}
	b.retentionTask = tw.ScheduleFunc(timingwheel.Every(cfg.LogRetentionCheck), b.applyRetention)
	if _, err := b.createTopic(offsetsTopic, 1, &topicConfig{}, true); err != nil {
		b.Shutdown(context.Background())
		return nil, err
	}
	if cfg.Replicas > 1 {
		b.wg.Add(1)
		go b.replicate()
	}
	return b, nil
}

// withDefaults returns cfg with each zero field set to its default.
func (cfg Config) withDefaults() Config {
	set := func(field *int, def int) {
		if *field == 0 {
			*field = def
		}
	}
	setDuration := func(field *time.Duration, def time.Duration) {
		if *field == 0 {
			*field = def
		}
	}
	set(&cfg.Partitions, 1)
	set(&cfg.Replicas, 3)
	set(&cfg.MaxMessageBytes, DefaultMaxMessageBytes)
	set(&cfg.MinInsyncReplicas, 1)
	setDuration(&cfg.FollowerMaxWait, 500*time.Millisecond)
	setDuration(&cfg.ReplicaLagMax, 30*time.Second)
	setDuration(&cfg.InitialRebalanceDelay, DefaultInitialRebalanceDelay)
	setDuration(&cfg.LogRetention, 7*24*time.Hour)
	setDuration(&cfg.LogRetentionCheck, 5*time.Minute)
	if cfg.LogRetention < 0 {
		cfg.LogRetention = -time.Millisecond // retention.ms -1
	}
	if cfg.LogRetentionBytes <= 0 {
		cfg.LogRetentionBytes = -1
	}
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = 100 << 20
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	return cfg
}

// validate returns an error for a field out of range.
func (cfg Config) validate() error {
	if cfg.Partitions < 1 || cfg.Replicas < 1 || cfg.MaxFrameBytes < 0 || cfg.FollowerMaxWait < 0 || cfg.FollowerDelay < 0 || cfg.ReplicaLagMax < 0 || cfg.MaxMessageBytes < 0 || cfg.LogRetentionCheck < 0 {
		return fmt.Errorf("kafka: invalid config %+v: partitions and replicas must be at least 1, durations and sizes not negative", cfg)
	}
	if cfg.MinInsyncReplicas < 1 || cfg.MinInsyncReplicas > cfg.Replicas {
		return fmt.Errorf("kafka: min.insync.replicas %d with %d replicas: it counts the leader and must be 1 to the replicas, or no acks=all produce could succeed", cfg.MinInsyncReplicas, cfg.Replicas)
	}
	return nil
}

// CreateTopic creates a topic with n partitions (Config.Partitions if n is 0)
// and the broker's default configs; the followers start copying it at once.
// It returns false if the topic exists.
func (b *Broker) CreateTopic(name string, n int) (created bool, err error) {
	return b.createTopic(name, n, &topicConfig{}, false)
}

// offsetsTopic is the internal topic Kafka keeps its groups' offsets in. This
// broker keeps them in memory (offsets.go), and lists the topic, empty, as
// internal, as clients expect of a Kafka broker.
const offsetsTopic = "__consumer_offsets"

// createTopic creates a topic with configs tc.
func (b *Broker) createTopic(name string, n int, tc *topicConfig, internal bool) (created bool, err error) {
	if n == 0 {
		n = b.cfg.Partitions
	}
	if !validTopic(name) || n < 1 || n > maxPartitions {
		return false, fmt.Errorf("kafka: topic %q with %d partitions: need a name of up to 249 letters, digits, '.', '_' and '-', and 1 to %d partitions", name, n, maxPartitions)
	}
	b.mu.Lock()
	if b.ctx.Err() != nil {
		b.mu.Unlock()
		return false, errShuttingDown
	}
	if _, ok := b.topics[name]; ok {
		b.mu.Unlock()
		return false, nil
	}
	t := &topic{name: name, id: newTopicID(), internal: internal}
	t.cfg.Store(tc)
	for i := range n {
		t.partitions = append(t.partitions, newPartitionLog(t, int32(i), b.cfg.Replicas))
	}
	b.topics[name] = t
	b.order = append(b.order, t)
	b.generation++
	b.mu.Unlock()
	b.wakeFollowers()
	return true, nil
}

// maxPartitions bounds a topic, so that one request cannot make the broker
// allocate without end.
const maxPartitions = 10_000

// validTopic reports whether name is a legal Kafka topic name.
func validTopic(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

var errShuttingDown = errors.New("kafka: broker is shutting down")

// newTopicID returns a random topic id (Metadata v10 and later carry one):
// a topic deleted and created again under its name gets a new one, as in
// Kafka, by which clients tell the two apart.
func newTopicID() (id [16]byte) {
	rand.Read(id[:])
	return id
}

// partitionsFor returns every partition, topic by topic in the order they
// were created, for follower f's next fetch, and notes which topics f knows.
func (b *Broker) partitionsFor(f int) []*partitionLog {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known[f] = b.generation
	return b.allPartitionsLocked()
}

// allPartitions returns every partition, in the order created.
func (b *Broker) allPartitions() []*partitionLog {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allPartitionsLocked()
}

func (b *Broker) allPartitionsLocked() []*partitionLog {
	var all []*partitionLog
	for _, t := range b.order {
		all = append(all, t.partitions...)
	}
	return all
}

// partition returns a partition's log, or nil if there is none.
func (b *Broker) partition(topicName string, index int32) *partitionLog {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[topicName]
	if t == nil || index < 0 || int(index) >= len(t.partitions) {
		return nil
	}
	return t.partitions[index]
}

// Serve accepts connections on ln until Shutdown; it returns nil then.
func (b *Broker) Serve(ln net.Listener) error {
	b.mu.Lock()
	if b.ctx.Err() != nil {
		b.mu.Unlock()
		ln.Close()
		return nil
	}
	b.listeners = append(b.listeners, ln)
	b.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if b.ctx.Err() != nil {
				return nil
			}
			return err
		}
		c := newConn(b, nc)
		b.mu.Lock()
		if b.ctx.Err() != nil {
			b.mu.Unlock()
			nc.Close()
			return nil
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting connections, answers every parked request (a
// fetch with what there is, a produce still waiting for its replicas with
// NOT_LEADER_FOR_PARTITION, so that the client retries elsewhere), writes
// the answers, then closes the connections and waits for every goroutine the
// broker started, until ctx is done.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	b.cancel()
	for _, ln := range b.listeners {
		ln.Close()
	}
	b.resumeLocked()
	conns := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()

	// Closing ends every parked operation (Outcome Closed); their
	// OnComplete hands each answer to its connection's writer.
	if b.isrTask != nil {
		b.isrTask.Stop()
	}
	b.retentionTask.Stop()
	b.produces.Close()
	b.fetches.Close()
	b.groups.joins.Close()
	b.groups.close()
	for _, c := range conns {
		c.drain() // stop reading; close once every answer is written
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		for _, c := range conns {
			c.nc.Close()
		}
	}
	if _, werr := b.tw.Shutdown(ctx); err == nil {
		err = werr
	}
	return err
}

// StallFollowers stops (true) or resumes (false) every follower before its
// next fetch, as a replica that has fallen behind would.
func (b *Broker) StallFollowers(stall bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !stall {
		b.resumeLocked()
		return
	}
	if b.stalled == nil {
		b.stalled = make(chan struct{})
	}
}

func (b *Broker) resumeLocked() {
	if b.stalled != nil {
		close(b.stalled)
		b.stalled = nil
	}
}

func (b *Broker) stall() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stalled
}

func (b *Broker) forget(c *conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

var aLongTimeAgo = time.Unix(1, 0)
