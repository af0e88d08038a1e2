#!/usr/bin/env bash
# redis-suite.sh runs Redis 7.0.15's own list tests (tests/unit/type/list.tcl,
# list-2.tcl and list-3.tcl) against this server and against Debian's
# redis-server, side by side, and judges this server's results.
#
#   ./redis-suite.sh           # set up if need be, then run
#   ./redis-suite.sh --setup   # set up only (CI times the run apart)
#   ./redis-suite.sh --runs N [--only NAME] [--server ours|redis]
#                              # the suite (or one test) N times in a row against
#                              # one server, failures counted per test
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

runs=0 only="" side=ours
while [[ $# -gt 0 ]]; do
	case $1 in
	--setup)
		setup
		exit 0
		;;
	--runs) runs=$2 && shift ;;
	--only) only=$2 && shift ;;
	--server) side=$2 && shift ;;
	*)
		echo "redis-suite: unknown argument $1 (see the head of $0)" >&2
		exit 2
		;;
	esac
	shift
done
if ! [[ $runs =~ ^[0-9]+$ ]] || [[ $side != ours && $side != redis ]] || [[ $runs == 0 && ( -n $only || $side != ours ) ]]; then
	echo "redis-suite: --runs takes a count; --only and --server go with --runs; --server is ours or redis" >&2
	exit 2
fi
setup
src=${REDIS_SRC:-}
if [[ -z $src ]]; then
	echo "redis-suite: fetching Redis's source (apt-get source redis)"
	(cd "$work" && apt-get source -qq redis >/dev/null 2>&1)
	src=$(ls -d "$work"/redis-7.0.15 2>/dev/null || true)
	if [[ -z $src ]]; then
		echo "redis-suite: apt-get source redis gave no redis-7.0.15 (got: $(ls "$work"))" >&2
		exit 1
	fi
fi
if [[ $(redis-server --version) != *v=7.0.15* ]]; then
	echo "redis-suite: redis-server is not 7.0.15: $(redis-server --version)" >&2
	exit 1
fi
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

# suite runs the test files (or the tests named $only) against the running
# server, each file's log in $1.
suite() {
	local f args=()
	if [[ -n $only ]]; then args=(--only "$only"); fi
	for f in "${files[@]}"; do
		# test_helper.tcl takes port 21079 for its own clients: a tclsh left
		# over from a killed run would hold it, and every run after fail.
		pkill -f 'tclsh tests/test_helper.tcl' 2>/dev/null || true
		(cd "$src" && timeout "${REDIS_SUITE_FILE_TIMEOUT:-150}" tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" --singledb --single "unit/type/$f" \
			--clients 1 --tags -needs:debug --tags -needs:repl --ignore-encoding --ignore-digest "${args[@]}" >"$1/$f.log" 2>&1) || true
	done
}

# verdicts prints a run's logs' test lines without colours: [ok], [err],
# [exception], [skip].
verdicts() { cat "$1"/*.log | sed 's/\x1b\[[0-9;]*m//g'; }

# failures prints a run's failures, one a line: each test that failed (an
# [err] or an [exception]), and each file that never reached its end (a
# test that hung until the timeout), with the last test that passed.
failures() {
	local f log last
	verdicts "$1" | grep -E '^\[(err|exception)\]' | sed -E 's/^\[(err|exception)\]:? *//; s/ in tests\/unit.*$//' || true
	for f in "${files[@]}"; do
		log=$1/$f.log
		if ! grep -q 'All tests passed without errors' "$log" && ! grep -qE '\[(err|exception)\]' "$log"; then
			last=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep '^\[ok\]' | tail -1 | sed -E 's/^\[ok\]: //; s/ \([0-9]+ ms\)$//')
			echo "unit/type/$f did not finish (hung?); the last test passed: ${last:-none}"
		fi
	done
}

if [[ $runs -gt 0 ]]; then
	failed_runs=0
	: >"$out/failures"
	for run in $(seq "$runs"); do
		mkdir -p "$out/run$run"
		start "$side"
		began=$SECONDS
		suite "$out/run$run"
		stop
		passed=$(verdicts "$out/run$run" | grep -c '^\[ok\]' || true)
		bad=$(failures "$out/run$run")
		if [[ -n $bad || $passed == 0 ]]; then
			failed_runs=$((failed_runs + 1))
			printf '%s\n' "${bad:-no test passed}" >>"$out/failures"
		fi
		echo "redis-suite: $side, run $run of $runs: $passed passed, $(grep -c . <<<"$bad" || true) failed, in $((SECONDS - began)) s"
	done
	echo "redis-suite: $side: $((runs - failed_runs)) of $runs runs passed every test${only:+ (only \"$only\")}"
	if [[ -s $out/failures ]]; then
		echo "redis-suite: failures per test:"
		sort "$out/failures" | uniq -c | sort -rn
		exit 1
	fi
	exit 0
fi

for side in redis ours; do
	start "$side"
	began=$SECONDS
	suite "$out/$side"
	stop
	passed=$(verdicts "$out/$side" | grep -c '^\[ok\]' || true)
	echo "redis-suite: $side: $passed tests passed in $((SECONDS - began)) s"
done

go run ./redisverdict "$out/ours" "$out/redis" redis-suite-out-of-scope.txt
