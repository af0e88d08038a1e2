package purgatory

import (
	"fmt"
	"reflect"
)

// ListsAtRest checks the watch lists' invariants (watchlist.go) that hold
// whenever no call into p is under way: no walk holds a list; each list's
// count matches its entries, dead and live; no list is mostly dead, so none
// holds more than twice the entries its live operations need; and the shard
// counts its empty lists right; a level heap is in order, and holds no
// operation whose level has been reached; a shard's last list is its key's in
// the map. It returns the first broken one.
func (p *Purgatory[K]) ListsAtRest() error {
	for i := range p.watchers.all {
		sh := &p.watchers.all[i]
		sh.mu.Lock()
		err := sh.atRest()
		sh.mu.Unlock()
		if err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return nil
}

func (sh *shard[K]) atRest() error {
	if l := sh.last; l != nil && sh.lists[l.key] != l {
		return fmt.Errorf("key %v: the shard's last list is not the map's", l.key)
	}
	if l := sh.last; l != nil && isWord(reflect.TypeFor[K]()) && sh.lastWord != wordOf(&l.key) {
		return fmt.Errorf("key %v: the shard's copy of its last key is %d", l.key, sh.lastWord)
	}
	empty := 0
	for key, l := range sh.lists {
		if w := l.walking.Load(); !restingWord(walkWord(w)) {
			return fmt.Errorf("key %v: walk word %b with no walk under way", key, w)
		}
		if head := l.head(); head > len(l.entries) || 2*head > len(l.entries) && len(l.ops()) > 0 {
			return fmt.Errorf("key %v: head %d of %d entries", key, head, len(l.entries))
		}
		for _, e := range l.entries[:l.head()] {
			if e != (entry{}) {
				return fmt.Errorf("key %v: an entry before head is not cleared", key)
			}
		}
		dead := 0
		all := l.walkable()
		for _, e := range all {
			if e.impl.mustEmbedPurgatoryOp() != e.op {
				return fmt.Errorf("key %v: an entry's operation is not its impl's", key)
			}
			if !e.live() {
				dead++
			}
		}
		n, countedDead := split(l.count.Load())
		if int(n) != len(all) || int(countedDead) != dead {
			return fmt.Errorf("key %v: count says %d entries, %d dead; the list has %d, %d dead", key, n, countedDead, len(all), dead)
		}
		if live := len(all) - dead; dead > live {
			return fmt.Errorf("key %v: %d dead entries and %d live ones, left uncompacted", key, dead, live)
		}
		levels := l.waiting()
		for i := range levels {
			if c := 2*i + 1; c < len(levels) && levels[c].Key < levels[i].Key ||
				c+1 < len(levels) && levels[c+1].Key < levels[i].Key {
				return fmt.Errorf("key %v: the level heap is out of order at %d", key, i)
			}
			if levels[i].Key <= l.lv.high {
				return fmt.Errorf("key %v: an operation waits for level %d, reached (%d)", key, levels[i].Key, l.lv.high)
			}
		}
		if l.leveled() != (len(levels) > 0) {
			return fmt.Errorf("key %v: leveled is %v with %d waiting for a level", key, l.leveled(), len(levels))
		}
		if l.vacant() {
			empty++
		}
	}
	if empty != sh.empty {
		return fmt.Errorf("%d empty lists, counted %d", empty, sh.empty)
	}
	return nil
}

// LevelsHeld returns how many operations wait in key's level heap (live) and
// how many entries it holds (held), ended ones included.
func (p *Purgatory[K]) LevelsHeld(key K) (live, held int) {
	sh := p.watchers.of(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lists[key]
	if l == nil {
		return 0, 0
	}
	for _, e := range l.waiting() {
		if e.Value.live() {
			live++
		}
	}
	return live, len(l.waiting())
}

// Lists returns how many keys have a list in the map, empty ones included.
func (p *Purgatory[K]) Lists() int {
	n := 0
	for i := range p.watchers.all {
		sh := &p.watchers.all[i]
		sh.mu.Lock()
		n += len(sh.lists)
		sh.mu.Unlock()
	}
	return n
}

// Shards returns how many watch-list shards p has.
func (p *Purgatory[K]) Shards() int { return len(p.watchers.all) }
