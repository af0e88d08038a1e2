package main

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// sortCmd is SORT key [LIMIT offset count] [ASC|DESC] [ALPHA] [STORE dst]
// for lists (no BY or GET): the tests use it as one more write that creates
// a list, whose blocked clients it wakes.
func sortCmd(s *server, c *client, args [][]byte) {
	o, ok := parseSort(c, args[2:])
	if !ok {
		return
	}
	l, wrong := s.db.list(string(args[1]))
	if wrong {
		c.w.err(errWrongType)
		return
	}
	var elems [][]byte
	if l != nil {
		elems = l.slice(0, l.len()-1)
	}
	if !o.sort(elems) {
		c.w.err("ERR One or more scores can't be converted into double")
		return
	}
	offset := min(max(o.offset, 0), int64(len(elems)))
	elems = elems[offset:]
	if o.count >= 0 && o.count < int64(len(elems)) {
		elems = elems[:o.count]
	}
	if o.store == "" {
		c.w.bulks(elems)
		return
	}
	s.db.del(o.store)
	if len(elems) > 0 {
		nl := &deque{}
		nl.replace(elems)
		s.db.storeList(o.store, nl)
		s.db.listWritten(o.store)
	} else {
		s.db.touched(o.store)
	}
	c.w.int(int64(len(elems)))
}

// sortOpts are SORT's options: the order, LIMIT (count -1: none) and STORE.
type sortOpts struct {
	desc, alpha   bool
	offset, count int64
	store         string
}

// parseSort reads SORT's options, or answers Redis's error.
func parseSort(c *client, args [][]byte) (o sortOpts, ok bool) {
	o.count = -1
	for j := 0; j < len(args); j++ {
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "asc":
			o.desc = false
		case opt == "desc":
			o.desc = true
		case opt == "alpha":
			o.alpha = true
		case opt == "limit" && j+2 < len(args):
			off, ok1 := parseInt(args[j+1])
			n, ok2 := parseInt(args[j+2])
			if !ok1 || !ok2 {
				c.w.err(errNotInteger)
				return o, false
			}
			o.offset, o.count, j = off, n, j+2
		case opt == "store" && j+1 < len(args):
			o.store, j = string(args[j+1]), j+1
		default:
			c.w.err(errSyntax)
			return o, false
		}
	}
	return o, true
}

// sort sorts elems in place, stably: as bytes (ALPHA) or as numbers,
// ascending or not. It reports false, sorting nothing, if an element is no
// number (NaN is none) and the sort is by number.
func (o sortOpts) sort(elems [][]byte) bool {
	if !o.alpha {
		for _, e := range elems {
			if f, err := strconv.ParseFloat(string(e), 64); err != nil || math.IsNaN(f) {
				return false // Redis's too: strtod's ERANGE, or isnan
			}
		}
	}
	slices.SortStableFunc(elems, func(a, b []byte) int {
		r := 0
		if o.alpha {
			r = bytes.Compare(a, b)
		} else {
			fa, _ := strconv.ParseFloat(string(a), 64)
			fb, _ := strconv.ParseFloat(string(b), 64)
			r = cmp.Compare(fa, fb)
		}
		if o.desc {
			return -r
		}
		return r
	})
	return true
}
