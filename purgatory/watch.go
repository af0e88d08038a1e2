package purgatory

import (
	"hash/maphash"
	"sync"
)

// Watch lists are intrusive: an operation holds a node for each key it is
// watched under, and completing it unlinks those nodes at once, in O(1) each.
// Watch-list memory therefore always equals what live operations need, with no
// purge pass to schedule or to pay for. (Kafka keeps completed operations in its
// lists until a key is checked or a purge sweeps every list; its first design
// ran out of memory here, KAFKA-664, and the sweep costs its reaper several
// times the timer work at high request rates.)

// node is an operation's place in one key's watch list.
type node struct {
	prev, next *node
	op         *Op
	owner      remover // the list the node was created for; immutable
	linked     bool    // guarded by the owner's shard lock
}

// remover unlinks a node from its list if it is still there. It hides the key
// type, so that Op need not be generic.
type remover interface{ remove(n *node) }

// shard is a part of the key space with its own lock, so that callers working
// on keys in different shards never contend.
type shard[K comparable] struct {
	mu    sync.Mutex
	lists map[K]*watchList[K]
	_     [40]byte // keep neighbouring shards' locks off one cache line
}

// watchList holds the operations watched under one key, in watch order.
type watchList[K comparable] struct {
	root  node // sentinel
	n     int
	key   K
	shard *shard[K]
	stats *counters
}

type shards[K comparable] struct {
	seed  maphash.Seed
	all   []shard[K]
	stats *counters
}

func newShards[K comparable](n int, stats *counters) shards[K] {
	s := shards[K]{seed: maphash.MakeSeed(), all: make([]shard[K], n), stats: stats}
	for i := range s.all {
		s.all[i].lists = make(map[K]*watchList[K])
	}
	return s
}

func (s *shards[K]) of(key K) *shard[K] {
	return &s.all[maphash.Comparable(s.seed, key)%uint64(len(s.all))]
}

// watch links o under key and records the node on o, atomically with respect
// to o's completion. It returns false if o has already completed.
func (s *shards[K]) watch(o *Op, key K) bool {
	sh := s.of(key)
	o.book.Lock()
	defer o.book.Unlock()
	if o.done {
		return false
	}
	sh.mu.Lock()
	l := sh.lists[key]
	if l == nil {
		l = &watchList[K]{key: key, shard: sh, stats: s.stats}
		l.root.next, l.root.prev = &l.root, &l.root
		sh.lists[key] = l
	}
	n := &node{op: o, owner: l}
	l.link(n)
	sh.mu.Unlock()
	o.nodes = append(o.nodes, n)
	return true
}

// snapshot appends the operations watched under key to buf.
func (s *shards[K]) snapshot(key K, buf []*Op) []*Op {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if l := sh.lists[key]; l != nil {
		for n := l.root.next; n != &l.root; n = n.next {
			buf = append(buf, n.op)
		}
	}
	return buf
}

// take removes key's watch list and returns its operations.
func (s *shards[K]) take(key K) []*Op {
	sh := s.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lists[key]
	if l == nil {
		return nil
	}
	ops := make([]*Op, 0, l.n)
	for l.n > 0 {
		n := l.root.next
		ops = append(ops, n.op)
		l.unlink(n)
	}
	delete(sh.lists, key)
	return ops
}

// each calls fn with the operations of every key, one shard at a time.
func (s *shards[K]) each(fn func(ops []*Op)) {
	var buf []*Op
	for i := range s.all {
		sh := &s.all[i]
		sh.mu.Lock()
		buf = buf[:0]
		for _, l := range sh.lists {
			for n := l.root.next; n != &l.root; n = n.next {
				buf = append(buf, n.op)
			}
		}
		sh.mu.Unlock()
		fn(buf)
	}
}

func (l *watchList[K]) link(n *node) {
	last := l.root.prev
	n.prev, n.next = last, &l.root
	last.next = n
	l.root.prev = n
	n.linked = true
	l.n++
	l.stats.watched.Add(1)
}

func (l *watchList[K]) unlink(n *node) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
	n.linked = false
	l.n--
	l.stats.watched.Add(-1)
}

// remove unlinks n if it is still linked, and drops the key's list once it is
// empty, so that the map does not keep keys nobody watches any more.
func (l *watchList[K]) remove(n *node) {
	sh := l.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !n.linked {
		return
	}
	l.unlink(n)
	if l.n == 0 && sh.lists[l.key] == l {
		delete(sh.lists, l.key)
	}
}
