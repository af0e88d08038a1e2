package purgatory

import "fmt"

// ListsAtRest checks the watch lists' invariants (watchlist.go) that hold
// whenever no call into p is under way: no walk holds a list; each list's
// count matches its entries, dead and live; no list is mostly dead, so none
// holds more than twice the entries its live operations need; and the shard
// counts its empty lists right. It returns the first broken one.
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
	empty := 0
	for key, l := range sh.lists {
		if w := l.walk.Load(); w != 0 {
			return fmt.Errorf("key %v: walk word %b with no walk under way", key, w)
		}
		dead := 0
		for _, e := range l.entries {
			if e.impl.mustEmbedPurgatoryOp() != e.op {
				return fmt.Errorf("key %v: an entry's operation is not its impl's", key)
			}
			if e.op.state.Load()&outcomeBits != 0 {
				dead++
			}
		}
		n, countedDead := split(l.count.Load())
		if int(n) != len(l.entries) || int(countedDead) != dead {
			return fmt.Errorf("key %v: count says %d entries, %d dead; the list has %d, %d dead", key, n, countedDead, len(l.entries), dead)
		}
		if live := len(l.entries) - dead; dead > live {
			return fmt.Errorf("key %v: %d dead entries and %d live ones, left uncompacted", key, dead, live)
		}
		if len(l.entries) == 0 {
			empty++
		}
	}
	if empty != sh.empty {
		return fmt.Errorf("%d empty lists, counted %d", empty, sh.empty)
	}
	return nil
}
