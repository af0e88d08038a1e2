package history

import (
	"fmt"
	"slices"
	"strings"
)

// Report is what Check found in a history.
type Report struct {
	Seed                          uint64
	Sent, Acknowledged, Unknown   int // values
	Polled                        int // records polled, by every consumer
	Producers, Consumers, Members int // killed
	Lost, Disagree, Duplicated    []string
	Unexpected, Skips, Backs      []string
	Errors                        []string
}

// OK reports whether the history shows no violation.
func (r *Report) OK() bool {
	return len(r.Lost)+len(r.Disagree)+len(r.Duplicated)+len(r.Unexpected)+len(r.Skips)+len(r.Backs)+len(r.Errors) == 0
}

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d values sent (%d acknowledged, %d of unknown outcome), %d records polled; killed %d producers, "+
		"%d consumers in a long poll, %d group members in a rebalance; lost %d, disagree %d, duplicated %d, unexpected %d, skips %d, backs %d, errors %d",
		r.Seed, r.Sent, r.Acknowledged, r.Unknown, r.Polled, r.Producers, r.Consumers, r.Members,
		len(r.Lost), len(r.Disagree), len(r.Duplicated), len(r.Unexpected), len(r.Skips), len(r.Backs), len(r.Errors))
	for _, l := range []struct {
		name string
		s    []string
	}{{"lost", r.Lost}, {"disagree", r.Disagree}, {"duplicated", r.Duplicated}, {"unexpected", r.Unexpected},
		{"skip", r.Skips}, {"back", r.Backs}, {"error", r.Errors}} {
		for _, s := range l.s[:min(len(l.s), 5)] {
			fmt.Fprintf(&b, "\n  %s: %s", l.name, s)
		}
	}
	return b.String()
}

// at is a place in the log.
type at struct {
	p int32
	o int64
}

// Check checks a history (see the package doc).
func Check(h *History) *Report {
	r := &Report{Seed: h.Seed, Producers: h.Producers, Consumers: h.Consumers, Members: h.Members, Errors: h.Errors, Polled: len(h.Polls)}
	sent := map[string]*Send{}
	for i := range h.Sends {
		s := &h.Sends[i]
		sent[s.Value] = s
		r.Sent++
		if s.Status == OK {
			r.Acknowledged++
		} else {
			r.Unknown++
		}
	}
	log := r.readLog(h, sent)
	r.checkAcknowledged(h, log)
	r.checkOrder(h)
	for _, s := range [][]string{r.Lost, r.Disagree, r.Duplicated, r.Unexpected, r.Skips, r.Backs} {
		slices.Sort(s)
	}
	return r
}

// readLog puts together the log as the polls saw it, and files what they
// disagree on: two values at one offset, a value at two offsets, a value
// never sent, and a send acknowledged at one place but polled at another.
func (r *Report) readLog(h *History, sent map[string]*Send) map[at]string {
	log, where := map[at]string{}, map[string]at{}
	for _, p := range h.Polls {
		a := at{p.Partition, p.Offset}
		if v, ok := log[a]; ok && v != p.Value {
			r.Disagree = append(r.Disagree, fmt.Sprintf("partition %d offset %d: polled as %s and as %s", a.p, a.o, v, p.Value))
			continue
		}
		log[a] = p.Value
		if w, ok := where[p.Value]; ok && w != a {
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("%s at %d/%d and at %d/%d", p.Value, w.p, w.o, a.p, a.o))
			continue
		}
		where[p.Value] = a
		s := sent[p.Value]
		switch {
		case s == nil:
			r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s polled at %d/%d, never sent", p.Value, a.p, a.o))
		case s.Status == OK && (s.Partition != a.p || s.Offset != a.o):
			r.Disagree = append(r.Disagree, fmt.Sprintf("%s acknowledged at %d/%d, polled at %d/%d", s.Value, s.Partition, s.Offset, a.p, a.o))
		}
	}
	return log
}

// checkAcknowledged files every acknowledged send at or below the highest
// offset polled in its partition that no poll saw (a lost write), or that
// the polls saw another value at.
func (r *Report) checkAcknowledged(h *History, log map[at]string) {
	highest := map[int32]int64{}
	for a := range log {
		highest[a.p] = max(highest[a.p], a.o)
	}
	for _, s := range h.Sends {
		if s.Status != OK || s.Offset > highest[s.Partition] {
			continue
		}
		switch v, ok := log[at{s.Partition, s.Offset}]; {
		case !ok:
			r.Lost = append(r.Lost, fmt.Sprintf("%s acknowledged at %d/%d, below the highest offset polled there (%d), never polled",
				s.Value, s.Partition, s.Offset, highest[s.Partition]))
		case v != s.Value:
			r.Disagree = append(r.Disagree, fmt.Sprintf("%s acknowledged at %d/%d, where the polls saw %s", s.Value, s.Partition, s.Offset, v))
		}
	}
}

// checkOrder files each consumer's polls of a partition that skip an
// offset or go back, in the order it polled them; a group member's only
// within one assignment (an epoch not -1).
func (r *Report) checkOrder(h *History) {
	type stream struct {
		session, epoch int
		p              int32
	}
	last := map[stream]int64{}
	for _, p := range h.Polls { // in the order recorded: each consumer's own order
		if p.Group && p.Epoch < 0 {
			continue
		}
		k := stream{p.Session, p.Epoch, p.Partition}
		prev, ok := last[k]
		last[k] = p.Offset
		switch {
		case !ok:
		case p.Offset <= prev:
			r.Backs = append(r.Backs, fmt.Sprintf("consumer %d, partition %d: offset %d after %d", p.Session, p.Partition, p.Offset, prev))
		case p.Offset > prev+1:
			r.Skips = append(r.Skips, fmt.Sprintf("consumer %d, partition %d: offset %d after %d", p.Session, p.Partition, p.Offset, prev))
		}
	}
}
