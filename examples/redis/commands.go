package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// commandTable lists the commands served, with Redis's arities.
func commandTable() []*command {
	return []*command{
		// Lists.
		{name: "lpush", arity: -3, run: pushCmd(true, false), flags: cmdWrite},
		{name: "rpush", arity: -3, run: pushCmd(false, false), flags: cmdWrite},
		{name: "lpushx", arity: -3, run: pushCmd(true, true), flags: cmdWrite},
		{name: "rpushx", arity: -3, run: pushCmd(false, true), flags: cmdWrite},
		{name: "lpop", arity: -2, run: popCmd(true), flags: cmdWrite},
		{name: "rpop", arity: -2, run: popCmd(false), flags: cmdWrite},
		{name: "llen", arity: 2, run: llenCmd},
		{name: "lrange", arity: 4, run: lrangeCmd},
		{name: "lindex", arity: 3, run: lindexCmd},
		{name: "lset", arity: 4, run: lsetCmd, flags: cmdWrite},
		{name: "lrem", arity: 4, run: lremCmd, flags: cmdWrite},
		{name: "ltrim", arity: 4, run: ltrimCmd, flags: cmdWrite},
		{name: "linsert", arity: 5, run: linsertCmd, flags: cmdWrite},
		{name: "lpos", arity: -3, run: lposCmd},
		{name: "lmove", arity: 5, run: lmoveCmd(false), flags: cmdWrite},
		{name: "rpoplpush", arity: 3, run: lmoveCmd(true), flags: cmdWrite},
		{name: "lmpop", arity: -4, run: lmpopCmd, flags: cmdWrite},
		{name: "blpop", arity: -3, run: bpopCmd(true), flags: cmdWrite | cmdBlocking},
		{name: "brpop", arity: -3, run: bpopCmd(false), flags: cmdWrite | cmdBlocking},
		{name: "blmove", arity: 6, run: blmoveCmd(false), flags: cmdWrite | cmdBlocking},
		{name: "brpoplpush", arity: 4, run: blmoveCmd(true), flags: cmdWrite | cmdBlocking},
		{name: "blmpop", arity: -5, run: blmpopCmd, flags: cmdWrite | cmdBlocking},
		// Keys and strings.
		{name: "sort", arity: -2, run: sortCmd, flags: cmdWrite},
		{name: "del", arity: -2, run: delCmd, flags: cmdWrite},
		{name: "unlink", arity: -2, run: delCmd, flags: cmdWrite},
		{name: "exists", arity: -2, run: existsCmd},
		{name: "type", arity: 2, run: typeCmd},
		{name: "dbsize", arity: 1, run: dbsizeCmd},
		{name: "keys", arity: 2, run: keysCmd},
		{name: "set", arity: -3, run: setCmd, flags: cmdWrite},
		{name: "get", arity: 2, run: getCmd},
		{name: "expire", arity: -3, run: expireCmd(time.Second), flags: cmdWrite},
		{name: "pexpire", arity: -3, run: expireCmd(time.Millisecond), flags: cmdWrite},
		{name: "ttl", arity: 2, run: ttlCmd(time.Second)},
		{name: "pttl", arity: 2, run: ttlCmd(time.Millisecond)},
		{name: "persist", arity: 2, run: persistCmd, flags: cmdWrite},
		{name: "rename", arity: 3, run: renameCmd, flags: cmdWrite},
		{name: "flushall", arity: -1, run: flushCmd, flags: cmdWrite},
		{name: "flushdb", arity: -1, run: flushCmd, flags: cmdWrite},
		{name: "select", arity: 2, run: selectCmd},
		{name: "object", arity: -2, run: objectCmd, flags: cmdContainer},
		{name: "dump", arity: 2, run: dumpCmd},
		{name: "restore", arity: -4, run: restoreCmd, flags: cmdWrite},
		// Transactions.
		{name: "multi", arity: 1, run: multiCmd, flags: cmdNoMulti},
		{name: "exec", arity: 1, run: execCmd, flags: cmdNoMulti},
		{name: "discard", arity: 1, run: discardCmd, flags: cmdNoMulti},
		{name: "watch", arity: -2, run: watchCmd, flags: cmdNoMulti},
		{name: "unwatch", arity: 1, run: unwatchCmd},
		// The connection and the server.
		{name: "ping", arity: -1, run: pingCmd},
		{name: "echo", arity: 2, run: echoCmd},
		{name: "hello", arity: -1, run: helloCmd, flags: cmdNoMulti},
		{name: "quit", arity: -1, run: quitCmd},
		{name: "client", arity: -2, run: clientCmd, flags: cmdContainer},
		{name: "config", arity: -2, run: configCmd, flags: cmdContainer},
		{name: "info", arity: -1, run: infoCmd},
		{name: "function", arity: -2, run: functionCmd, flags: cmdContainer},
	}
}

func dbsizeCmd(s *server, c *client, _ [][]byte) { c.w.int(int64(s.db.size())) }

func echoCmd(_ *server, c *client, args [][]byte) { c.w.bulk(args[1]) }

// quitCmd answers OK and closes the connection once the reply is written.
func quitCmd(_ *server, c *client, _ [][]byte) {
	c.w.ok()
	c.closing = true
}

func delCmd(s *server, c *client, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		key := string(k)
		if s.db.lookup(key) != nil && s.db.del(key) {
			s.db.touched(key)
			n++
		}
	}
	c.w.int(int64(n))
}

func existsCmd(s *server, c *client, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		if s.db.lookup(string(k)) != nil {
			n++
		}
	}
	c.w.int(int64(n))
}

func typeCmd(s *server, c *client, args [][]byte) {
	if o := s.db.lookup(string(args[1])); o != nil {
		c.w.status(o.typeName())
		return
	}
	c.w.status("none")
}

func keysCmd(s *server, c *client, args [][]byte) {
	ks := s.db.keysMatching(string(args[1]))
	sort.Strings(ks)
	c.w.arrayLen(len(ks))
	for _, k := range ks {
		c.w.bulkString(k)
	}
}

// setCmd is SET key value [NX|XX] [EX s|PX ms|KEEPTTL] [GET], enough of it for
// the tests' own bookkeeping.
func setCmd(s *server, c *client, args [][]byte) {
	key := string(args[1])
	o, ok := parseSet(s, c, args[3:])
	if !ok {
		return
	}
	old := s.db.lookup(key)
	if o.get && old != nil && old.list != nil {
		c.w.err(errWrongType)
		return
	}
	if !(o.nx && old != nil || o.xx && old == nil) {
		v := &object{str: append([]byte(nil), args[2]...), expireAt: o.expireAt}
		if o.keep && old != nil {
			v.expireAt = old.expireAt
		}
		s.db.keys[key] = v
		s.db.touched(key)
		if !o.get {
			c.w.ok()
			return
		}
	}
	if o.get && old != nil {
		c.w.bulk(old.str)
	} else {
		c.w.nullBulk()
	}
}

// setOpts are SET's options.
type setOpts struct {
	nx, xx, keep, get bool
	expireAt          int64 // unix ms; 0: none
}

// parseSet reads SET's options, or answers Redis's error.
func parseSet(s *server, c *client, args [][]byte) (o setOpts, ok bool) {
	for j := 0; j < len(args); j++ {
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "nx":
			o.nx = true
		case opt == "xx":
			o.xx = true
		case opt == "keepttl":
			o.keep = true
		case opt == "get":
			o.get = true
		case (opt == "ex" || opt == "px") && j+1 < len(args):
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.w.err(errNotInteger)
				return o, false
			}
			if n <= 0 {
				c.w.err("ERR invalid expire time in 'set' command")
				return o, false
			}
			if opt == "ex" {
				n *= 1000
			}
			o.expireAt = s.db.nowMs() + n
		default:
			c.w.err(errSyntax)
			return o, false
		}
	}
	return o, true
}

func getCmd(s *server, c *client, args [][]byte) {
	o := s.db.lookup(string(args[1]))
	switch {
	case o == nil:
		c.w.nullBulk()
	case o.list != nil:
		c.w.err(errWrongType)
	default:
		c.w.bulk(o.str)
	}
}

// expireCmd is EXPIRE and PEXPIRE key n [NX|XX|GT|LT].
func expireCmd(unit time.Duration) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		n, ok := parseInt(args[2])
		if !ok {
			c.w.err(errNotInteger)
			return
		}
		key := string(args[1])
		o := s.db.lookup(key)
		if o == nil {
			c.w.int(0)
			return
		}
		at := s.db.nowMs() + n*int64(unit/time.Millisecond)
		if len(args) > 3 {
			cond := strings.ToLower(string(args[3]))
			if cond == "nx" && o.expireAt != 0 || cond == "xx" && o.expireAt == 0 ||
				cond == "gt" && (o.expireAt == 0 || at <= o.expireAt) || cond == "lt" && o.expireAt != 0 && at >= o.expireAt {
				c.w.int(0)
				return
			}
		}
		s.db.touched(key)
		if at <= s.db.nowMs() {
			s.db.del(key)
			c.w.int(1)
			return
		}
		o.expireAt = at
		c.w.int(1)
	}
}

func ttlCmd(unit time.Duration) func(s *server, c *client, args [][]byte) {
	return func(s *server, c *client, args [][]byte) {
		o := s.db.lookup(string(args[1]))
		switch {
		case o == nil:
			c.w.int(-2)
		case o.expireAt == 0:
			c.w.int(-1)
		default:
			left := o.expireAt - s.db.nowMs()
			if unit == time.Second {
				left = (left + 500) / 1000
			}
			c.w.int(left)
		}
	}
}

func persistCmd(s *server, c *client, args [][]byte) {
	o := s.db.lookup(string(args[1]))
	if o == nil || o.expireAt == 0 {
		c.w.int(0)
		return
	}
	o.expireAt = 0
	s.db.touched(string(args[1]))
	c.w.int(1)
}

// renameCmd moves a key; a list it moves makes its new key ready for the
// clients blocked there.
func renameCmd(s *server, c *client, args [][]byte) {
	src, dst := string(args[1]), string(args[2])
	o := s.db.lookup(src)
	if o == nil {
		c.w.err(errNoSuchKey)
		return
	}
	s.db.touched(src)
	if src != dst {
		s.db.del(src)
		s.db.del(dst)
		s.db.keys[dst] = o
	}
	if o.list != nil && o.list.len() > 0 {
		s.db.listWritten(dst)
	} else {
		s.db.touched(dst)
	}
	c.w.ok()
}

func flushCmd(s *server, c *client, args [][]byte) {
	if len(args) > 2 || len(args) == 2 && !strings.EqualFold(string(args[1]), "sync") && !strings.EqualFold(string(args[1]), "async") {
		c.w.err(errSyntax)
		return
	}
	s.db.flush()
	c.w.ok()
}

func selectCmd(_ *server, c *client, args [][]byte) {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		c.w.err(errNotInteger)
	case n != 0:
		c.w.err("ERR DB index is out of range")
	default:
		c.w.ok()
	}
}

// objectCmd answers OBJECT ENCODING as Redis 7.0 names its lists' encodings.
func objectCmd(s *server, c *client, args [][]byte) {
	if !strings.EqualFold(string(args[1]), "encoding") || len(args) != 3 {
		c.w.err("ERR unknown subcommand or wrong number of arguments for 'object' command")
		return
	}
	o := s.db.lookup(string(args[2]))
	switch {
	case o == nil:
		c.w.nullBulk()
	case o.list != nil:
		c.w.bulkString("quicklist")
	default:
		c.w.bulkString("raw")
	}
}

func multiCmd(_ *server, c *client, _ [][]byte) {
	if c.multi {
		c.w.err(errNestedMulti)
		return
	}
	c.multi = true
	c.w.ok()
}

// execCmd runs MULTI's queued commands, one reply each, unless a watched key
// was written (a null reply) or a command failed to queue (EXECABORT). The
// keys they made ready are served once it is over (run, serveReady).
func execCmd(s *server, c *client, _ [][]byte) {
	if !c.multi {
		c.w.err(errExecNoMulti)
		return
	}
	queued, failed, dirty := c.queued, c.multiErr, c.dirtyCAS
	c.multi, c.multiErr, c.queued = false, false, nil
	s.db.unwatchAll(c)
	switch {
	case failed:
		c.w.err(errExecAbort)
		return
	case dirty:
		c.w.nullArray()
		return
	}
	c.w.arrayLen(len(queued))
	c.inExec = true
	for _, cmd := range queued {
		s.exec(c, cmd)
	}
	c.inExec = false
}

func discardCmd(s *server, c *client, _ [][]byte) {
	if !c.multi {
		c.w.err(errDiscardNoMult)
		return
	}
	c.multi, c.multiErr, c.queued = false, false, nil
	s.db.unwatchAll(c)
	c.w.ok()
}

func watchCmd(s *server, c *client, args [][]byte) {
	if c.multi {
		c.w.err(errWatchInMulti)
		return
	}
	for _, k := range args[1:] {
		key := string(k)
		s.db.watch(c, key)
		c.watched = append(c.watched, key)
	}
	c.w.ok()
}

func unwatchCmd(s *server, c *client, _ [][]byte) {
	s.db.unwatchAll(c)
	c.w.ok()
}

// flagMultiError marks a transaction whose command failed to queue.
func (c *client) flagMultiError() {
	if c.multi {
		c.multiErr = true
	}
}

func pingCmd(_ *server, c *client, args [][]byte) {
	switch {
	case len(args) > 2:
		c.w.err(errWrongArgs("ping"))
	case len(args) == 2:
		c.w.bulk(args[1])
	default:
		c.w.status("PONG")
	}
}

// helloCmd is HELLO [protover [AUTH user pass] [SETNAME name]].
func helloCmd(s *server, c *client, args [][]byte) {
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			c.w.err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.err("NOPROTO unsupported protocol version")
			return
		}
		for j := 2; j < len(args); j++ {
			switch opt := strings.ToLower(string(args[j])); {
			case opt == "auth" && j+2 < len(args):
				j += 2
			case opt == "setname" && j+1 < len(args):
				j++
				c.name = string(args[j])
			default:
				c.w.err("ERR Syntax error in HELLO option '" + string(args[j]) + "'")
				return
			}
		}
		c.w.resp = int(v)
	}
	c.w.mapLen(7)
	c.w.bulkString("server")
	c.w.bulkString("redis")
	c.w.bulkString("version")
	c.w.bulkString(redisVersion)
	c.w.bulkString("proto")
	c.w.int(int64(c.w.resp))
	c.w.bulkString("id")
	c.w.int(c.id)
	c.w.bulkString("mode")
	c.w.bulkString("standalone")
	c.w.bulkString("role")
	c.w.bulkString("master")
	c.w.bulkString("modules")
	c.w.arrayLen(0)
}

// redisVersion is the version the server says it speaks: Redis 7.0's
// commands, as its test suite checks them.
const redisVersion = "7.0.15"

func clientCmd(s *server, c *client, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "id" && len(args) == 2:
		c.w.int(c.id)
	case sub == "setname" && len(args) == 3:
		if strings.ContainsAny(string(args[2]), " \n") {
			c.w.err("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.name = string(args[2])
		c.w.ok()
	case sub == "getname" && len(args) == 2:
		if c.name == "" {
			c.w.nullBulk()
			return
		}
		c.w.bulkString(c.name)
	case sub == "setinfo" && len(args) == 4:
		c.w.ok()
	case sub == "list":
		c.w.bulkString(s.clientList())
	case sub == "unblock" && (len(args) == 3 || len(args) == 4):
		clientUnblock(s, c, args)
	default:
		c.w.err("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try CLIENT HELP.")
	}
}

// clientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: it ends the client's
// wait with ForceComplete, which reports whether the wait was still pending
// (a try under way then decides: a client it serves is served, not
// unblocked). The reply is 1 if it was, 0 if the client was not blocked.
func clientUnblock(s *server, c *client, args [][]byte) {
	id, ok := parseInt(args[2])
	if !ok {
		c.w.err(errNotInteger)
		return
	}
	asError := false
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "timeout":
		case "error":
			asError = true
		default:
			c.w.err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	target := s.clients[id]
	if target == nil || target.op == nil {
		c.w.int(0)
		return
	}
	target.op.unblockErr = asError
	if purgatory.ForceComplete(target.op) {
		c.w.int(1)
		return
	}
	c.w.int(0)
}

func (s *server) clientList() string {
	ids := make([]int64, 0, len(s.clients))
	for id := range s.clients {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		cl := s.clients[id]
		flags := "N"
		if cl.op != nil {
			flags = "b"
		}
		fmt.Fprintf(&b, "id=%d addr=%s laddr=%s fd=0 name=%s age=0 idle=0 flags=%s db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=-1 resp=%d\n",
			id, cl.link.remoteAddr(), cl.link.localAddr(), cl.name, flags, cl.lastCmd, cl.w.resp)
	}
	return b.String()
}

func configCmd(s *server, c *client, args [][]byte) {
	switch sub := strings.ToLower(string(args[1])); {
	case sub == "get" && len(args) >= 3:
		var pairs []string
		for _, p := range args[2:] {
			pairs = append(pairs, s.cfg.get(string(p))...)
		}
		c.w.mapLen(len(pairs) / 2)
		for _, v := range pairs {
			c.w.bulkString(v)
		}
	case sub == "set" && len(args) >= 4 && len(args)%2 == 0:
		for j := 2; j < len(args); j += 2 {
			if msg := s.cfg.set(string(args[j]), string(args[j+1])); msg != "" {
				c.w.err(msg)
				return
			}
		}
		s.limits.Store(new(s.cfg.limits()))
		c.w.ok()
	case sub == "resetstat" && len(args) == 2:
		c.w.ok()
	default:
		c.w.err("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try CONFIG HELP.")
	}
}

func functionCmd(_ *server, c *client, args [][]byte) {
	if strings.EqualFold(string(args[1]), "flush") && len(args) <= 3 {
		c.w.ok()
		return
	}
	c.w.err("ERR unknown subcommand '" + string(args[1]) + "'. Try FUNCTION HELP.")
}

// startTime is when the process started, for INFO's uptime.
var startTime = time.Now()

// infoCmd is INFO [section]: the fields Redis's test helpers read, above all
// blocked_clients, which counts the clients whose wait the purgatory holds
// (Delayed: from the moment a client is watched until its wait ends).
func infoCmd(s *server, c *client, args [][]byte) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	port := 0
	if a, ok := c.link.localAddr().(interface{ String() string }); ok {
		if i := strings.LastIndexByte(a.String(), ':'); i >= 0 {
			port, _ = strconv.Atoi(a.String()[i+1:])
		}
	}
	expires := 0
	for _, o := range s.db.keys {
		if o.expireAt != 0 {
			expires++
		}
	}
	sections := []struct{ name, body string }{
		{"server", fmt.Sprintf("redis_version:%s\r\nredis_mode:standalone\r\nos:%s %s\r\narch_bits:64\r\nprocess_id:%d\r\nrun_id:%040x\r\ntcp_port:%d\r\nuptime_in_seconds:%d\r\nexecutable:%s\r\n",
			redisVersion, runtime.GOOS, runtime.GOARCH, os.Getpid(), startTime.UnixNano(), port, int(time.Since(startTime).Seconds()), os.Args[0])},
		{"clients", fmt.Sprintf("connected_clients:%d\r\nblocked_clients:%d\r\ntracking_clients:0\r\nclients_in_timeout_table:%d\r\n",
			len(s.clients), s.blocked.Delayed(), s.blocked.Delayed())},
		{"memory", fmt.Sprintf("used_memory:%d\r\nused_memory_rss:%d\r\nmaxmemory:0\r\nmem_fragmentation_ratio:1.00\r\n", ms.HeapAlloc, ms.Sys)},
		{"persistence", "loading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n"},
		{"stats", fmt.Sprintf("total_connections_received:%d\r\ntotal_commands_processed:%d\r\nexpired_keys:0\r\nevicted_keys:0\r\n", s.nextID.Load(), s.stats.commands.Load())},
		{"replication", "role:master\r\nconnected_slaves:0\r\n"},
		{"keyspace", fmt.Sprintf("db0:keys=%d,expires=%d,avg_ttl=0\r\n", len(s.db.keys), expires)},
	}
	want := "default"
	if len(args) > 1 {
		want = strings.ToLower(string(args[1]))
	}
	var b strings.Builder
	for _, sec := range sections {
		if want != "default" && want != "all" && want != "everything" && want != sec.name {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n%s", strings.ToUpper(sec.name[:1])+sec.name[1:], sec.body)
	}
	c.w.bulkString(b.String())
}
