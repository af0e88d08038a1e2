package timingwheel

// nearEntry is a timer in near with the deadline it had when it was pushed:
// if the timer has left near or been given another deadline since, the entry
// is stale (see timer's states).
type nearEntry struct {
	when instant
	t    *timer
}

// nearHeap is a binary min-heap by when, typed so that a push allocates
// nothing (container/heap would box every entry).
type nearHeap []nearEntry

func (h *nearHeap) push(e nearEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent].when <= s[i].when {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *nearHeap) pop() nearEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = nearEntry{}
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].when < s[least].when {
			least = l
		}
		if r < len(s) && s[r].when < s[least].when {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}
