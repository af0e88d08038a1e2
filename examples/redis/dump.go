package main

import (
	"bytes"
	"strings"
)

// DUMP and RESTORE: a key's value as Redis 7.0's payload (rdb.go), so that
// a list moves between this server and redis-server either way.

const (
	errBusyKey     = "BUSYKEY Target key name already exists."
	errBadPayload  = "ERR DUMP payload version or checksum are wrong"
	errBadFormat   = "ERR Bad data format"
	errNegativeTTL = "ERR Invalid TTL value, must be >= 0"
)

// dumpCmd is DUMP key: the payload, or nil for a missing key.
func dumpCmd(s *server, c *client, args [][]byte) {
	o := s.db.lookup(string(args[1]))
	if o == nil {
		c.w.nullBulk()
		return
	}
	c.w.bulk(dumpPayload(o))
}

// dumpPayload serializes o as DUMP does, uncompressed.
func dumpPayload(o *object) []byte {
	if o.list != nil {
		return sealPayload(appendQuicklist(nil, o.list))
	}
	return sealPayload(appendRDBString([]byte{rdbTypeString}, o.str))
}

// restoreOpts are RESTORE's options after the payload.
type restoreOpts struct{ replace, absTTL bool }

// restoreCmd is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f], its checks in Redis's order (restoreCommand): the options, the
// key, the TTL, the footer, the value. A TTL already past answers OK and
// stores nothing (deleting the key it would replace). A restored list wakes
// the clients blocked on its key; every restore spoils the key's WATCH.
// IDLETIME and FREQ are checked and have no effect: keys here have no LRU
// or LFU.
func restoreCmd(s *server, c *client, args [][]byte) {
	opts, msg := restoreOptions(args[4:])
	key := string(args[1])
	if msg == "" && !opts.replace && s.db.lookup(key) != nil {
		msg = errBusyKey
	}
	if msg != "" {
		c.w.err(msg)
		return
	}
	ttl, ok := parseInt(args[2])
	switch {
	case !ok:
		c.w.err(errNotInteger)
		return
	case ttl < 0:
		c.w.err(errNegativeTTL)
		return
	}
	body, ok := payloadBody(args[3])
	if !ok {
		c.w.err(errBadPayload)
		return
	}
	o, ok := parseValue(body)
	if !ok {
		c.w.err(errBadFormat)
		return
	}
	deleted := opts.replace && s.db.lookup(key) != nil && s.db.del(key)
	if ttl != 0 && !opts.absTTL {
		ttl += s.db.nowMs()
	}
	if ttl != 0 && ttl <= s.db.nowMs() {
		if deleted {
			s.db.touched(key)
		}
		c.w.ok()
		return
	}
	o.expireAt = ttl
	s.db.keys[key] = o
	if o.list != nil {
		s.db.listWritten(key)
	} else {
		s.db.touched(key)
	}
	c.w.ok()
}

// restoreOptions reads RESTORE's options, or returns Redis's error for the
// first that is wrong. IDLETIME and FREQ exclude each other.
func restoreOptions(args [][]byte) (opts restoreOpts, msg string) {
	var idle, freq bool
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "replace":
			opts.replace = true
		case opt == "absttl":
			opts.absTTL = true
		case opt == "idletime" && more && !freq:
			j++
			if msg = rangeArg(args[j], 0, 1<<63-1, "ERR Invalid IDLETIME value, must be >= 0"); msg != "" {
				return opts, msg
			}
			idle = true
		case opt == "freq" && more && !idle:
			j++
			if msg = rangeArg(args[j], 0, 255, "ERR Invalid FREQ value, must be >= 0 and <= 255"); msg != "" {
				return opts, msg
			}
			freq = true
		default:
			return opts, errSyntax
		}
	}
	return opts, ""
}

// rangeArg checks an integer argument: errNotInteger if it is none,
// outside if it is not within [lo, hi].
func rangeArg(arg []byte, lo, hi int64, outside string) string {
	n, ok := parseInt(arg)
	switch {
	case !ok:
		return errNotInteger
	case n < lo || n > hi:
		return outside
	}
	return ""
}

// parseValue reads a payload's value as a new object, checked deeply
// whatever sanitize-dump-payload says, or returns false: an unknown type, a
// read past the end, a listpack that fails its checks, an empty list, or
// bytes left over (Redis ignores those; no DUMP writes them). Nothing it
// returns shares memory with body.
func parseValue(body []byte) (*object, bool) {
	r := &rdbReader{p: body}
	var o object
	switch r.byte() {
	case rdbTypeString:
		o.str = bytes.Clone(r.string())
	case rdbTypeList:
		o.list = &deque{}
		for n := r.count(); n > 0 && !r.bad; n-- {
			o.list.pushBack(bytes.Clone(r.string()))
		}
	case rdbTypeQuicklist2:
		o.list = readQuicklist(r)
	default:
		return nil, false
	}
	if r.bad || len(r.p) > 0 || o.list != nil && o.list.len() == 0 {
		return nil, false
	}
	return &o, true
}

// readQuicklist reads type 18's nodes; an empty listpack is skipped, as
// Redis does.
func readQuicklist(r *rdbReader) *deque {
	l := &deque{}
	for n := r.count(); n > 0 && !r.bad; n-- {
		container := r.count()
		if container != containerPacked && container != containerPlain {
			r.bad = true
			break
		}
		blob := r.string()
		if r.bad || len(blob) == 0 {
			r.bad = true
			break
		}
		if container == containerPlain {
			l.pushBack(bytes.Clone(blob))
			continue
		}
		elems, ok := readListpack(blob)
		r.bad = !ok
		for _, e := range elems {
			l.pushBack(bytes.Clone(e))
		}
	}
	return l
}
