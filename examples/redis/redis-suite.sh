#!/usr/bin/env bash
# redis-suite.sh runs Redis 7.0.15's own list tests (tests/unit/type/list.tcl,
# list-2.tcl and list-3.tcl) against this server and against Debian's
# redis-server, side by side, and judges this server's results.
#
#   ./redis-suite.sh           # set up if need be, then run
#   ./redis-suite.sh --setup   # set up only (CI times the run apart)
#
# It adds a deb-src entry for the suites the machine's Debian sources name,
# installs dpkg-dev, tcl, redis-server and redis-tools, and fetches Redis's
# source with its tests (apt-get source redis: any Debian revision of 7.0.15;
# REDIS_SRC=DIR uses an unpacked one instead). Nothing it fetches is kept.
#
# Each test file runs as a run of its own, with the flags Redis's external
# server mode needs here:
#
#   tclsh tests/test_helper.tcl --host H --port P --singledb --single unit/type/FILE
#     --clients 1 --tags -needs:debug --tags -needs:repl --ignore-encoding --ignore-digest
#
# One run for the three files would end at the first exception (an error
# reply a test does not expect): one failing test would end the run
# before list-2 and list-3. Every test that passes against redis-server must
# pass here unless redis-suite-out-of-scope.txt lists it (FILE <TAB> NAME
# <TAB> reason); a listed test that starts passing fails too (redisverdict).
# The logs go to $REDIS_SUITE_OUT (default a temporary directory).
set -euo pipefail
cd "$(dirname "$0")"

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo=sudo; fi
files=(list list-2 list-3)

setup() {
	if command -v tclsh >/dev/null && command -v redis-server >/dev/null && command -v dpkg-source >/dev/null && [[ -n ${REDIS_SRC:-} ]]; then
		return
	fi
	local src=/etc/apt/sources.list.d/redis-suite-src.sources
	if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
			sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | $sudo tee "$src" >/dev/null
		else
			grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | $sudo tee /etc/apt/sources.list.d/redis-suite-src.list >/dev/null
		fi
		$sudo apt-get update -qq
	fi
	if ! command -v tclsh >/dev/null || ! command -v redis-server >/dev/null || ! command -v dpkg-source >/dev/null; then
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev tcl redis-server redis-tools >/dev/null ||
			{ $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev tcl redis-server redis-tools >/dev/null; }
	fi
}

work=$(mktemp -d)
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
out=${REDIS_SUITE_OUT:-$work}
mkdir -p "$out/ours" "$out/redis"

setup
if [[ ${1:-} == --setup ]]; then
	exit 0
fi
src=${REDIS_SRC:-}
if [[ -n $src ]]; then # a copy: the stopgap below changes a test file
	cp -r "$src" "$work/redis-src"
	src=$work/redis-src
else
	echo "redis-suite: fetching Redis's source (apt-get source redis)"
	(cd "$work" && apt-get source -qq redis >/dev/null 2>&1)
	src=$(ls -d "$work"/redis-7.0.15 2>/dev/null || true)
	if [[ -z $src ]]; then
		echo "redis-suite: apt-get source redis gave no redis-7.0.15 (got: $(ls "$work"))" >&2
		exit 1
	fi
fi
# The stopgap (issue 50, item 0, until the example serves every connection
# from one event loop): "BRPOPLPUSH does not affect WATCH while still
# blocked" sends EXEC on one connection and then, without reading its reply,
# LPUSH on another. Redis runs them in that order because its one thread
# reads ready sockets in the order the poller reports them; with a goroutine
# per connection the LPUSH can take the server's lock first (11 of 60 runs
# failed so). Redis promises no order across connections, and Valkey changed
# the test for its I/O threads (valkey#758) to wait until CLIENT LIST shows
# that EXEC has run before the LPUSH. The same wait is put in here, for both
# servers, and said; an unchanged test file fails the run rather than flake.
stopgap() {
	local file=$1/tests/unit/type/list.tcl
	awk '
		/test "BRPOPLPUSH does not affect WATCH while still blocked"/ {inside = 1}
		{print}
		inside && /^[ \t]*\$watching_client exec[ \t]*$/ {
			print "        # redis-suite.sh: wait until EXEC has run, as valkey#758 does."
			print "        wait_for_condition 100 10 {"
			print "            [llength [lsearch -all [split [string trim [r client list]] \"\\r\\n\"] *cmd=exec*]] == 1"
			print "        } else {"
			print "            fail \"EXEC did not run\""
			print "        }"
			inside = 0; n++
		}
		END {if (n != 1) exit 1}
	' "$file" >"$file.stopgap" || {
		echo "redis-suite: $file no longer has the WATCH test this script changes; update the stopgap" >&2
		exit 1
	}
	mv "$file.stopgap" "$file"
	echo "redis-suite: stopgap (issue 50, item 0): \"BRPOPLPUSH does not affect WATCH while still blocked\" waits until CLIENT LIST shows EXEC has run before its LPUSH (valkey#758's change), against both servers"
}

if [[ $(redis-server --version) != *v=7.0.15* ]]; then
	echo "redis-suite: redis-server is not 7.0.15: $(redis-server --version)" >&2
	exit 1
fi
stopgap "$src"
go build -o "$work/server" .

# start runs a server (ours or redis) and sets server (its pid) and port.
start() {
	if [[ $1 == ours ]]; then
		"$work/server" -addr 127.0.0.1:0 -metrics-addr "" >"$work/server.log" 2>&1 &
		server=$!
		for _ in $(seq 100); do
			if addr=$(grep -m1 -o 'listening on [^ ]*' "$work/server.log" 2>/dev/null); then
				port=${addr##*:}
				return 0
			fi
			sleep 0.1
		done
	else
		port=$((20000 + RANDOM % 20000))
		redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >"$work/server.log" 2>&1 &
		server=$!
		for _ in $(seq 100); do
			if redis-cli -p "$port" ping >/dev/null 2>&1; then
				return 0
			fi
			sleep 0.1
		done
	fi
	echo "redis-suite: the $1 server did not start:" >&2
	cat "$work/server.log" >&2
	exit 1
}

stop() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	server=
}

for side in redis ours; do
	start "$side"
	began=$SECONDS
	for f in "${files[@]}"; do
		(cd "$src" && timeout 150 tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" --singledb --single "unit/type/$f" \
			--clients 1 --tags -needs:debug --tags -needs:repl --ignore-encoding --ignore-digest >"$out/$side/$f.log" 2>&1) || true
	done
	stop
	passed=$(cat "$out/$side"/*.log | sed 's/\x1b\[[0-9;]*m//g' | grep -c '^\[ok\]' || true)
	echo "redis-suite: $side: $passed tests passed in $((SECONDS - began)) s"
done

go run ./redisverdict "$out/ours" "$out/redis" redis-suite-out-of-scope.txt
