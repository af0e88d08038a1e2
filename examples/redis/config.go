package main

import (
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// config is the server's configuration: the parameters CONFIG GET and SET
// know. Under the server's lock once serving.
type config struct {
	params map[string]string
}

// defaultConfig is Redis 7.0's defaults for the parameters served, with
// client-query-buffer-limit from the -query-buffer-limit flag.
func defaultConfig(queryBufferLimit int64) config {
	return config{params: map[string]string{
		"save":                      "",
		"appendonly":                "no",
		"list-max-listpack-size":    "-2",
		"list-max-ziplist-size":     "-2", // the old name, an alias
		"list-compress-depth":       "0",
		"proto-max-bulk-len":        "536870912",
		"client-query-buffer-limit": strconv.FormatInt(queryBufferLimit, 10),
		"timeout":                   "0",
		"maxmemory":                 "0",
		"databases":                 "1",
		"lua-time-limit":            "5000",
		"busy-reply-threshold":      "5000",
		"sanitize-dump-payload":     "no", // accepted; RESTORE always checks deeply
	}}
}

// aliases maps a parameter to the other name it has.
var aliases = map[string]string{"list-max-ziplist-size": "list-max-listpack-size", "list-max-listpack-size": "list-max-ziplist-size"}

// enumParams take one of a few names, any case.
var enumParams = map[string][]string{"sanitize-dump-payload": {"no", "yes", "clients"}}

// memoryParams take a size with a unit (512mb).
var memoryParams = map[string]int64{"proto-max-bulk-len": 1024 * 1024, "client-query-buffer-limit": 1024 * 1024, "maxmemory": 0}

func (c config) int(name string) int64 {
	n, _ := strconv.ParseInt(c.params[name], 10, 64)
	return n
}

// limits are the reader's bounds.
func (c config) limits() limits {
	return limits{maxBulk: c.int("proto-max-bulk-len"), maxQuery: c.int("client-query-buffer-limit")}
}

// get returns the parameters matching pattern, name then value, sorted.
func (c config) get(pattern string) []string {
	var names []string
	for name := range c.params {
		if ok, _ := path.Match(strings.ToLower(pattern), name); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, n, c.params[n])
	}
	return out
}

// set sets name to value, or returns Redis's error.
func (c config) set(name, value string) string {
	name = strings.ToLower(name)
	if _, ok := c.params[name]; !ok {
		return "ERR Unknown option or number of arguments for CONFIG SET - '" + name + "'"
	}
	if least, ok := memoryParams[name]; ok {
		n, ok := parseMemory(value)
		if !ok {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be a memory value"
		}
		if n < least {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be between " + strconv.FormatInt(least, 10) + " and 9223372036854775807 inclusive"
		}
		value = strconv.FormatInt(n, 10)
	}
	if names, ok := enumParams[name]; ok {
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, value) })
		if i < 0 {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument(s) must be one of the following: " + strings.Join(names, ", ")
		}
		value = names[i]
	}
	c.params[name] = value
	if a, ok := aliases[name]; ok {
		c.params[a] = value
	}
	return ""
}

// parseMemory is Redis's memtoull: a size with an optional unit (b, k, kb,
// m, mb, g, gb; k is 1000, kb 1024).
func parseMemory(s string) (int64, bool) {
	s = strings.ToLower(s)
	units := []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}}
	mul := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || mul > 1 && n > (1<<63-1)/mul {
		return 0, false
	}
	return n * mul, true
}
