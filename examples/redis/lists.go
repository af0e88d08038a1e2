package main

import (
	"bytes"
	"strings"
)

// The list commands that never block (t_list.c). Each runs under the
// server's lock; a write that leaves a list with elements makes its key
// ready for the clients blocked on it (db.listWritten), served once the
// command is over.

// pushCmd is LPUSH, RPUSH, and with onlyExisting LPUSHX, RPUSHX.
func pushCmd(left, onlyExisting bool) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		key := string(args[1])
		l, created, wrong := s.db.listForPush(key)
		switch {
		case wrong:
			c.w.err(errWrongType)
			return
		case created && onlyExisting:
			c.w.int(0)
			return
		}
		for _, v := range args[2:] {
			l.push(append([]byte(nil), v...), left)
		}
		if created {
			s.db.storeList(key, l)
		}
		s.db.listWritten(key)
		c.w.int(int64(l.len()))
	}
}

// popCmd is LPOP and RPOP, with their optional count.
func popCmd(left bool) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		if len(args) > 3 {
			c.w.err(errWrongArgs(strings.ToLower(string(args[0]))))
			return
		}
		count, hasCount := int64(1), len(args) == 3
		if hasCount {
			n, ok := parseInt(args[2])
			if !ok || n < 0 {
				c.w.err(errNotPositive)
				return
			}
			count = n
		}
		key := string(args[1])
		l, wrong := s.db.list(key)
		switch {
		case wrong:
			c.w.err(errWrongType)
		case l == nil && hasCount:
			c.w.nullArray()
		case l == nil:
			c.w.nullBulk()
		case !hasCount:
			s.popAndReply(c, key, l, left, 1, replyElement)
		case count == 0:
			c.w.arrayLen(0)
		default:
			s.popAndReply(c, key, l, left, int(min(count, int64(l.len()))), replyElements)
		}
	}
}

// popReply is the shape of a pop's reply.
type popReply uint8

const (
	replyElement     popReply = iota // LPOP, RPOP: the element
	replyElements                    // LPOP, RPOP with a count: [elements]
	replyKeyElement                  // BLPOP, BRPOP: [key, element]
	replyKeyElements                 // LMPOP, BLMPOP: [key, [elements]]
)

// popAndReply is every pop but LMOVE's, the one place that takes elements
// out of a list for a client (Redis's listPopRangeAndReplyWithKey): it pops
// n elements, 0 < n <= l.len(), from key's list l at one end, does what a
// removal does after (db.removed), writes c's reply in the shape given, and
// counts what the reply took (client.took), written or dropped with it. The caller holds the server's lock; c is the client
// served, who for a hand-off is not the one whose command runs.
func (s *server) popAndReply(c *client, key string, l *deque, left bool, n int, shape popReply) {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = l.pop(left)
	}
	s.db.removed(key, l)
	switch shape {
	case replyElement:
		c.w.bulk(vals[0])
	case replyElements:
		c.w.bulks(vals)
	case replyKeyElement:
		c.w.arrayLen(2)
		c.w.bulkString(key)
		c.w.bulk(vals[0])
	case replyKeyElements:
		c.w.arrayLen(2)
		c.w.bulkString(key)
		c.w.bulks(vals)
	}
	c.took(n)
}

// listFor returns key's list, for a command on a list that exists. If key
// holds another type it answers WRONGTYPE, and if it holds nothing it answers
// with none, the command's reply to a missing key; either way it returns nil,
// and the command is done.
func (s *server) listFor(c *client, key string, none func(*replies)) *deque {
	l, wrong := s.db.list(key)
	switch {
	case wrong:
		c.w.err(errWrongType)
	case l == nil:
		none(&c.w)
	}
	return l
}

// The replies of commands on a list to a key that holds none.
var (
	noneZero     = func(w *replies) { w.int(0) }
	noneEmpty    = func(w *replies) { w.arrayLen(0) }
	noneNoSuch   = func(w *replies) { w.err(errNoSuchKey) }
	noneNullBulk = (*replies).nullBulk
	noneOK       = (*replies).ok
)

func llenCmd(s *server, c *client, args [][]byte) {
	if l := s.listFor(c, string(args[1]), noneZero); l != nil {
		c.w.int(int64(l.len()))
	}
}

// indexOf is Redis's index i (negative from the end) in a list of n; ok
// false if it is out of the list.
func indexOf(i int64, n int) (at int, ok bool) {
	if i < 0 {
		i += int64(n)
	}
	if i < 0 || i >= int64(n) {
		return 0, false
	}
	return int(i), true
}

// rangeOf clamps Redis's start and stop indexes (negative from the end) to a
// list of n; ok false for an empty range.
func rangeOf(start, stop int64, n int) (from, to int, ok bool) {
	if start < 0 {
		start += int64(n)
	}
	if stop < 0 {
		stop += int64(n)
	}
	start = max(start, 0)
	if start > stop || start >= int64(n) {
		return 0, 0, false
	}
	stop = min(stop, int64(n)-1)
	return int(start), int(stop), true
}

func lrangeCmd(s *server, c *client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.w.err(errNotInteger)
		return
	}
	l := s.listFor(c, string(args[1]), noneEmpty)
	if l == nil {
		return
	}
	from, to, ok := rangeOf(start, stop, l.len())
	if !ok {
		c.w.arrayLen(0)
		return
	}
	c.w.arrayLen(to - from + 1)
	for i := from; i <= to; i++ {
		c.w.bulk(l.at(i))
	}
}

func lindexCmd(s *server, c *client, args [][]byte) {
	i, ok := parseInt(args[2])
	if !ok {
		c.w.err(errNotInteger)
		return
	}
	l := s.listFor(c, string(args[1]), noneNullBulk)
	if l == nil {
		return
	}
	at, ok := indexOf(i, l.len())
	if !ok {
		c.w.nullBulk()
		return
	}
	c.w.bulk(l.at(at))
}

func lsetCmd(s *server, c *client, args [][]byte) {
	i, ok := parseInt(args[2])
	if !ok {
		c.w.err(errNotInteger)
		return
	}
	key := string(args[1])
	l := s.listFor(c, key, noneNoSuch)
	if l == nil {
		return
	}
	at, ok := indexOf(i, l.len())
	if !ok {
		c.w.err(errIndexRange)
		return
	}
	l.set(at, append([]byte(nil), args[3]...))
	s.db.touched(key)
	c.w.ok()
}

func lremCmd(s *server, c *client, args [][]byte) {
	count, ok := parseInt(args[2])
	if !ok {
		c.w.err(errNotInteger)
		return
	}
	key := string(args[1])
	l := s.listFor(c, key, noneZero)
	if l == nil {
		return
	}
	elems := l.slice(0, l.len()-1)
	removed := int64(0)
	limit := count
	if limit < 0 {
		limit = -limit
	}
	keep := make([][]byte, 0, len(elems))
	if count >= 0 {
		for _, e := range elems {
			if bytes.Equal(e, args[3]) && (limit == 0 || removed < limit) {
				removed++
				continue
			}
			keep = append(keep, e)
		}
	} else { // from the tail
		for i := len(elems) - 1; i >= 0; i-- {
			if bytes.Equal(elems[i], args[3]) && removed < limit {
				removed++
				continue
			}
			keep = append(keep, elems[i])
		}
		for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
			keep[i], keep[j] = keep[j], keep[i]
		}
	}
	if removed > 0 {
		l.replace(keep)
		s.db.removed(key, l)
	}
	c.w.int(removed)
}

func ltrimCmd(s *server, c *client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.w.err(errNotInteger)
		return
	}
	key := string(args[1])
	l := s.listFor(c, key, noneOK)
	if l == nil {
		return
	}
	from, to, ok := rangeOf(start, stop, l.len())
	if !ok {
		l.replace(nil)
	} else {
		l.replace(l.slice(from, to))
	}
	s.db.removed(key, l)
	c.w.ok()
}

func linsertCmd(s *server, c *client, args [][]byte) {
	var after bool
	switch strings.ToLower(string(args[2])) {
	case "after":
		after = true
	case "before":
	default:
		c.w.err(errSyntax)
		return
	}
	key := string(args[1])
	l := s.listFor(c, key, noneZero)
	if l == nil {
		return
	}
	elems := l.slice(0, l.len()-1)
	for i, e := range elems {
		if !bytes.Equal(e, args[3]) {
			continue
		}
		at := i
		if after {
			at++
		}
		out := make([][]byte, 0, len(elems)+1)
		out = append(out, elems[:at]...)
		out = append(out, append([]byte(nil), args[4]...))
		out = append(out, elems[at:]...)
		l.replace(out)
		s.db.listWritten(key)
		c.w.int(int64(l.len()))
		return
	}
	c.w.int(-1)
}

func lposCmd(s *server, c *client, args [][]byte) {
	o, ok := parseLpos(c, args[3:])
	if !ok {
		return
	}
	l, wrong := s.db.list(string(args[1]))
	switch {
	case wrong:
		c.w.err(errWrongType)
	case l == nil && o.count != -1:
		c.w.arrayLen(0)
	case l == nil:
		c.w.nullBulk()
	case o.count == -1:
		if found := o.search(l, args[2]); len(found) > 0 {
			c.w.int(found[0])
		} else {
			c.w.nullBulk()
		}
	default:
		found := o.search(l, args[2])
		c.w.arrayLen(len(found))
		for _, f := range found {
			c.w.int(f)
		}
	}
}

// lposOpts are LPOS's RANK, COUNT (-1: not given) and MAXLEN.
type lposOpts struct{ rank, count, maxlen int64 }

// parseLpos reads LPOS's options, or answers Redis's error for the first
// that is wrong.
func parseLpos(c *client, args [][]byte) (lposOpts, bool) {
	o := lposOpts{rank: 1, count: -1}
	for j := 0; j < len(args); j += 2 {
		if j+1 >= len(args) {
			c.w.err(errSyntax)
			return o, false
		}
		n, ok := parseInt(args[j+1])
		msg := ""
		switch opt := strings.ToLower(string(args[j])); {
		case !ok:
			msg = errNotInteger
		case opt == "rank" && n == 0:
			msg = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
		case opt == "rank" && n == -1<<63:
			msg = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
		case opt == "rank":
			o.rank = n
		case opt == "count" && n < 0:
			msg = "ERR COUNT can't be negative"
		case opt == "count":
			o.count = n
		case opt == "maxlen" && n < 0:
			msg = "ERR MAXLEN can't be negative"
		case opt == "maxlen":
			o.maxlen = n
		default:
			msg = errSyntax
		}
		if msg != "" {
			c.w.err(msg)
			return o, false
		}
	}
	return o, true
}

// search returns the indexes of the matches of v in l that LPOS answers:
// from the end if the rank is negative, skipping rank-1 matches, at most
// count of them (0: all; -1: one), looking at most at maxlen elements.
func (o lposOpts) search(l *deque, v []byte) []int64 {
	n := l.len()
	want := o.count
	switch want {
	case 0:
		want = int64(n)
	case -1:
		want = 1
	}
	skip, step, i := o.rank-1, 1, 0
	if o.rank < 0 {
		skip, step, i = -o.rank-1, -1, n-1
	}
	var found []int64
	for checked := int64(0); i >= 0 && i < n && int64(len(found)) < want && (o.maxlen == 0 || checked < o.maxlen); i, checked = i+step, checked+1 {
		switch {
		case !bytes.Equal(l.at(i), v):
		case skip > 0:
			skip--
		default:
			found = append(found, int64(i))
		}
	}
	return found
}

// whereArg parses LEFT or RIGHT.
func whereArg(b []byte) (left, ok bool) {
	switch strings.ToLower(string(b)) {
	case "left":
		return true, true
	case "right":
		return false, true
	}
	return false, false
}

// move pops an element from src's end (fromLeft) and pushes it to dst's
// (toLeft), as LMOVE does, and returns it; nil if src is empty. wrong is a
// WRONGTYPE of either key: nothing moved. dst becomes ready for the clients
// blocked on it. The caller holds the server's lock.
func (s *server) move(src, dst string, fromLeft, toLeft bool) (v []byte, wrong bool) {
	sl, wrong := s.db.list(src)
	if wrong || sl == nil {
		return nil, wrong
	}
	dl, created, wrong := s.db.listForPush(dst)
	if wrong {
		return nil, true
	}
	v = sl.pop(fromLeft)
	dl.push(v, toLeft) // dl is sl if src is dst
	if created {
		s.db.storeList(dst, dl)
	}
	s.db.removed(src, sl) // after the push, as Redis: a list moved onto itself stays
	s.db.listWritten(dst)
	return v, false
}

// moveEnds reads the ends of LMOVE and BLMOVE (args[3] and args[4]: the
// source's, then the destination's), or gives RPOPLPUSH's and BRPOPLPUSH's
// (fixed: right, then left). It answers a syntax error and reports false
// for a word not LEFT or RIGHT.
func moveEnds(c *client, args [][]byte, fixed bool) (fromLeft, toLeft, ok bool) {
	if fixed {
		return false, true, true
	}
	fromLeft, ok1 := whereArg(args[3])
	toLeft, ok2 := whereArg(args[4])
	if !ok1 || !ok2 {
		c.w.err(errSyntax)
		return false, false, false
	}
	return fromLeft, toLeft, true
}

// lmoveCmd is LMOVE, and RPOPLPUSH (fixed ends).
func lmoveCmd(fixed bool) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		fromLeft, toLeft, ok := moveEnds(c, args, fixed)
		if !ok {
			return
		}
		v, wrong := s.move(string(args[1]), string(args[2]), fromLeft, toLeft)
		switch {
		case wrong:
			c.w.err(errWrongType)
		case v == nil:
			c.w.nullBulk()
		default:
			c.w.bulk(v)
		}
	}
}

// mpopArgs are LMPOP's and BLMPOP's: numkeys keys... LEFT|RIGHT [COUNT n].
type mpopArgs struct {
	keys  []string
	left  bool
	count int64
}

// parseMpop parses args from numkeys on; it writes the error and reports
// false on a bad one.
func parseMpop(c *client, args [][]byte) (mpopArgs, bool) {
	var m mpopArgs
	numkeys, ok := parseInt(args[0])
	if !ok || numkeys <= 0 {
		c.w.err("ERR numkeys should be greater than 0")
		return m, false
	}
	if numkeys > int64(len(args)-2) {
		c.w.err(errSyntax)
		return m, false
	}
	for _, k := range args[1 : 1+numkeys] {
		m.keys = append(m.keys, string(k))
	}
	rest := args[1+numkeys:]
	if m.left, ok = whereArg(rest[0]); !ok {
		c.w.err(errSyntax)
		return m, false
	}
	m.count = 1
	switch {
	case len(rest) == 1:
	case len(rest) == 3 && strings.EqualFold(string(rest[1]), "count"):
		n, ok := parseInt(rest[2])
		if !ok || n <= 0 {
			c.w.err("ERR count should be greater than 0")
			return m, false
		}
		m.count = n
	default:
		c.w.err(errSyntax)
		return m, false
	}
	return m, true
}

// mpopFrom pops up to count elements from the first of keys that holds a
// list, and writes [key, [elements]]; it reports whether one did (false: it
// wrote nothing). A key of the wrong type is an error, written.
func (s *server) mpopFrom(c *client, m mpopArgs) (done bool) {
	for _, key := range m.keys {
		l, wrong := s.db.list(key)
		if wrong {
			c.w.err(errWrongType)
			return true
		}
		if l == nil || l.len() == 0 {
			continue
		}
		s.popAndReply(c, key, l, m.left, int(min(m.count, int64(l.len()))), replyKeyElements)
		return true
	}
	return false
}

func lmpopCmd(s *server, c *client, args [][]byte) {
	m, ok := parseMpop(c, args[1:])
	if !ok {
		return
	}
	if !s.mpopFrom(c, m) {
		c.w.nullArray()
	}
}
