package main

import (
	"path"
	"time"
)

// The keyspace: one database of keys, each a list or a string, with an
// optional expiry. Every read and write happens under the server's lock
// (server.mu); nothing here locks.

// object is a key's value.
type object struct {
	list     *deque // a list, or
	str      []byte // a string
	expireAt int64  // unix ms; 0: none
}

func (o *object) typeName() string {
	if o.list != nil {
		return "list"
	}
	return "string"
}

// db is the keyspace, with the bookkeeping the server needs around writes:
// which clients WATCH a key, and which keys a command made ready for the
// clients blocked on them.
type db struct {
	keys     map[string]*object
	watchers map[string]map[*client]struct{}
	// ready lists the keys the command under way made ready, in the order
	// it did (Redis's ready_keys), each once; the server serves them once
	// the command (or EXEC) is over (serveReady).
	ready   []string
	isReady map[string]bool
	// waiting counts the clients blocked on each key (Redis's
	// blocking_keys): only a key someone waits on is made ready, so a push
	// nobody waits for costs no hand-off. A client's goroutine counts it
	// when it blocks and uncounts it once its wait has ended, so a count
	// may stay a moment after the wait: a hand-off then finds nobody.
	waiting  map[string]int
	spare    []*object        // emptied lists' objects, for the next list made (afterPop)
	taken    *object          // the spare listForPush gave out last, for storeList
	now      func() time.Time // the clock expiry reads; time.Now but in tests
	modified int64            // writes so far, for nothing but INFO's curiosity
}

func newDB() *db {
	return &db{keys: map[string]*object{}, watchers: map[string]map[*client]struct{}{}, isReady: map[string]bool{}, waiting: map[string]int{}, now: time.Now}
}

func (d *db) nowMs() int64 { return d.now().UnixMilli() }

// lookup returns key's object, deleting it first if it has expired.
func (d *db) lookup(key string) *object {
	o := d.keys[key]
	if o != nil && o.expireAt != 0 && o.expireAt <= d.nowMs() {
		d.del(key)
		return nil
	}
	return o
}

// list returns key's list; wrongType if key holds something else.
func (d *db) list(key string) (l *deque, wrongType bool) {
	o := d.lookup(key)
	switch {
	case o == nil:
		return nil, false
	case o.list == nil:
		return nil, true
	}
	return o.list, false
}

// listForPush returns key's list, making an empty one (not yet stored: see
// stored) if key holds none.
func (d *db) listForPush(key string) (l *deque, created, wrongType bool) {
	l, wrongType = d.list(key)
	if wrongType || l != nil {
		return l, false, wrongType
	}
	if n := len(d.spare); n > 0 {
		d.taken = d.spare[n-1]
		d.spare = d.spare[:n-1]
		return d.taken.list, true, false
	}
	return &deque{}, true, false
}

// storeList stores a list made for a push under key.
func (d *db) storeList(key string, l *deque) {
	o := d.taken
	if o == nil || o.list != l {
		o = &object{list: l}
	}
	d.taken = nil
	d.keys[key] = o
}

// del deletes key, reporting whether it was there (expired keys were not).
func (d *db) del(key string) bool {
	if _, ok := d.keys[key]; !ok {
		return false
	}
	delete(d.keys, key)
	return true
}

// touched is a write to key: it spoils the WATCH of every client watching
// it (Redis's signalModifiedKey).
func (d *db) touched(key string) {
	d.modified++
	for c := range d.watchers[key] {
		c.dirtyCAS = true
	}
}

// listWritten is a write that leaves key holding a list with elements: it
// touches key and, for the clients blocked on it, makes it ready (Redis's
// signalKeyAsReady).
func (d *db) listWritten(key string) {
	d.touched(key)
	if d.waiting[key] > 0 && !d.isReady[key] {
		d.isReady[key] = true
		d.ready = append(d.ready, key)
	}
}

// afterPop deletes key's list if a pop left it empty, as Redis does. A
// small one is kept for the next list made (listForPush), so that a list a
// push makes and a pop empties, as a queue's does at every hand-off, costs no
// allocation: the caller must not use l once it is empty.
func (d *db) afterPop(key string, l *deque) {
	if l.len() != 0 {
		return
	}
	o := d.keys[key]
	d.del(key)
	if o != nil && o.list == l && len(d.spare) < maxSpareLists && len(l.ring) <= 64 {
		o.expireAt = 0
		d.spare = append(d.spare, o)
	}
}

// removed is what every write that takes elements out of key's list l does
// after (Redis's listElementsRemoved): it spoils key's WATCH, and deletes
// key if l is now empty (afterPop).
func (d *db) removed(key string, l *deque) {
	d.touched(key)
	d.afterPop(key, l)
}

// maxSpareLists bounds the empty lists the keyspace keeps (afterPop).
const maxSpareLists = 16

// flush empties the keyspace (FLUSHALL, FLUSHDB), touching every key.
func (d *db) flush() {
	for key := range d.keys {
		d.touched(key)
	}
	d.keys = map[string]*object{}
}

// size counts the keys that have not expired.
func (d *db) size() int {
	now := d.nowMs()
	n := 0
	for key, o := range d.keys {
		if o.expireAt != 0 && o.expireAt <= now {
			delete(d.keys, key)
			continue
		}
		n++
	}
	return n
}

// keysMatching returns the keys matching a glob pattern (KEYS).
func (d *db) keysMatching(pattern string) []string {
	var out []string
	d.size() // expire what has
	for key := range d.keys {
		if ok, _ := path.Match(pattern, key); ok || pattern == "*" {
			out = append(out, key)
		}
	}
	return out
}

// watch adds c to key's watchers.
func (d *db) watch(c *client, key string) {
	w := d.watchers[key]
	if w == nil {
		w = map[*client]struct{}{}
		d.watchers[key] = w
	}
	w[c] = struct{}{}
}

// unwatchAll forgets c's watches.
func (d *db) unwatchAll(c *client) {
	for _, key := range c.watched {
		if w := d.watchers[key]; w != nil {
			delete(w, c)
			if len(w) == 0 {
				delete(d.watchers, key)
			}
		}
	}
	c.watched, c.dirtyCAS = nil, false
}

// block counts a client blocked on keys; unblock uncounts it.
func (d *db) block(keys []string) {
	for _, k := range keys {
		d.waiting[k]++
	}
}

func (d *db) unblock(keys []string) {
	for _, k := range keys {
		if d.waiting[k]--; d.waiting[k] <= 0 {
			delete(d.waiting, k)
		}
	}
}
