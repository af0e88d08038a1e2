package main

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// sortCmd is SORT key [LIMIT offset count] [ASC|DESC] [ALPHA] [STORE dst]
// for lists (no BY or GET): the tests use it as one more write that creates
// a list, whose blocked clients it wakes.
func sortCmd(s *server, c *client, args [][]byte) {
	var desc, alpha bool
	offset, count := int64(0), int64(-1)
	store := ""
	for j := 2; j < len(args); j++ {
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "asc":
			desc = false
		case opt == "desc":
			desc = true
		case opt == "alpha":
			alpha = true
		case opt == "limit" && j+2 < len(args):
			o, ok1 := parseInt(args[j+1])
			n, ok2 := parseInt(args[j+2])
			if !ok1 || !ok2 {
				c.w.err(errNotInteger)
				return
			}
			offset, count, j = o, n, j+2
		case opt == "store" && j+1 < len(args):
			store, j = string(args[j+1]), j+1
		default:
			c.w.err(errSyntax)
			return
		}
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
	if !alpha {
		for _, e := range elems {
			if _, err := strconv.ParseFloat(string(e), 64); err != nil {
				c.w.err("ERR One or more scores can't be converted into double")
				return
			}
		}
	}
	slices.SortStableFunc(elems, func(a, b []byte) int {
		var r int
		if alpha {
			r = bytes.Compare(a, b)
		} else {
			fa, _ := strconv.ParseFloat(string(a), 64)
			fb, _ := strconv.ParseFloat(string(b), 64)
			switch {
			case fa < fb:
				r = -1
			case fa > fb:
				r = 1
			}
		}
		if desc {
			return -r
		}
		return r
	})
	offset = max(offset, 0)
	if offset > int64(len(elems)) {
		offset = int64(len(elems))
	}
	elems = elems[offset:]
	if count >= 0 && count < int64(len(elems)) {
		elems = elems[:count]
	}
	if store == "" {
		c.w.bulks(elems)
		return
	}
	s.db.del(store)
	if len(elems) > 0 {
		nl := &deque{}
		nl.replace(elems)
		s.db.storeList(store, nl)
		s.db.listWritten(store)
	} else {
		s.db.touched(store)
	}
	c.w.int(int64(len(elems)))
}
