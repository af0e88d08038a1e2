#!/usr/bin/env bash
# kgo-suite.sh runs franz-go's own integration tests (pkg/kgo, at the version
# this module pins) against this broker, each test alone on a fresh broker, as
# franz-go's CI job integration-test-kfake runs them against kfake.
#
#   ./kgo-suite.sh [r1|r3|kfake] [TEST_REGEX]
#
#   r1     this broker with 1 replica per partition (the default; .ci/run)
#   r3     this broker with 3 replicas, KGO_TEST_RF=3 (longer)
#   kfake  franz-go's kfake at the pinned version, for the side-by-side times
#
# Every test's result is checked against kgo-suite-out-of-scope.txt, one line
# each: TEST[/SUBTEST] <TAB> skip|fail <TAB> reason. Any other failure, any
# skip not listed, and any listed test that does not skip or fail as listed
# (one that starts passing) fails the script. With kfake, nothing is checked:
# the run gives the times. Each test's result and time go to
# $KGO_SUITE_OUT (default kgo-suite-MODE.tsv in a temporary directory).
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-r1}
only=${2:-}
case $mode in
r1) rf=1 ;;
r3) rf=3 ;;
kfake) rf=1 ;;
*)
	echo "usage: $0 [r1|r3|kfake] [TEST_REGEX]" >&2
	exit 2
	;;
esac

# The integration tests of pkg/kgo: those that need a broker (KGO_SEEDS).
tests=(
	TestUnknownGroupOffsetFetchPinned TestPing TestIssue1034 TestSCRAMAuth TestSCRAMAuthBadCredentials
	TestShareGroup TestIssue325 TestConsumeTopicRetrieval TestConsumeTopicRetrieval_Many TestConsumeRegex
	TestConsumeRegexShareSkipsInternal Test848RegexBrokerResolves TestIssue337 TestDirectPartitionPurge
	TestIssue434 TestAddRemovePartitions TestPauseIssue489 TestPauseIssueOct2023 TestIssue523 TestIssue648
	TestIssue810 TestIssue865 TestIssueFetchLargerThanBrokerMaxReadBytes TestPooling TestGroupSimple
	TestHookPollStart TestConsumeMaxDecompressBatchBytes TestGroupETL TestClient_Produce TestIssue769
	TestIssueProduceBrokerTooOldFailsRecords TestIssueProduceSyncManualPartitionNegativeDoesNotPanic
	TestIssue831 TestClient_ProduceLargeMessages TestShareGroupETL TestShareGroupAckOnClose
	TestShareGroupOffsetsAdmin TestTxnEtl
)
# TestTxnEtl waits for transactions, which this broker does not serve, until
# its own timeout: a short one says the same.
declare -A timeouts=([TestTxnEtl]=60s)
default_timeout=${KGO_SUITE_TIMEOUT:-300s}

work=$(mktemp -d)
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
out=${KGO_SUITE_OUT:-$work/kgo-suite-$mode.tsv}
echo "kgo-suite: building franz-go's pkg/kgo tests and the $mode server"
go test -c -o "$work/kgo.test" github.com/twmb/franz-go/pkg/kgo
if [[ $mode == kfake ]]; then
	go build -o "$work/server" ./loadtest/kfake
	server_args=(-addr 127.0.0.1:0)
else
	go build -o "$work/server" .
	# No initial rebalance delay, as kfake has none, so that times compare.
	server_args=(-addr 127.0.0.1:0 -metrics-addr "" -replicas "$rf" -group-initial-rebalance-delay 0)
fi

# start runs a fresh server and sets server (its pid) and addr.
start() {
	"$work/server" "${server_args[@]}" >"$work/server.log" 2>&1 &
	server=$!
	for _ in $(seq 100); do
		if addr=$(grep -m1 -o 'listening on [^ ]*' "$work/server.log" 2>/dev/null); then
			addr=${addr#listening on }
			return 0
		fi
		sleep 0.1
	done
	echo "kgo-suite: the server did not start:" >&2
	cat "$work/server.log" >&2
	exit 1
}

stop() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	server=
}

: >"$out"
began=$SECONDS
for t in "${tests[@]}"; do
	if [[ -n $only && ! $t =~ $only ]]; then
		continue
	fi
	start
	t0=$SECONDS
	set +e
	KGO_SEEDS=$addr KGO_TEST_RF=$rf KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000} KGO_LOG_LEVEL=none \
		"$work/kgo.test" -test.run "^$t\$" -test.v -test.count 1 -test.timeout "${timeouts[$t]:-$default_timeout}" >"$work/test.log" 2>&1
	code=$?
	set -e
	stop
	secs=$((SECONDS - t0))
	# Every result line, subtests included: NAME <TAB> pass|fail|skip <TAB> seconds.
	grep -oE -- '--- (PASS|FAIL|SKIP): [^ ]+ \([0-9.]+s\)' "$work/test.log" |
		sed -E 's/--- ([A-Z]+): ([^ ]+) \(([0-9.]+)s\)/\2\t\L\1\t\3/' >>"$out" || true
	if grep -q 'panic: test timed out' "$work/test.log"; then
		printf '%s\ttimeout\t%s\n' "$t" "$secs" >>"$out"
	elif [[ $code -ne 0 ]] && ! grep -q -- "--- FAIL: $t " "$work/test.log"; then
		printf '%s\tfail\t%s\n' "$t" "$secs" >>"$out" # died without a result line
		tail -20 "$work/test.log" >&2
	fi
	printf 'kgo-suite: %-55s %4ss  %s\n' "$t" "$secs" "$(grep -P "^$t\t" "$out" | tail -1 | cut -f2)"
done
echo "kgo-suite: $mode: $((SECONDS - began)) s in all; results in $out"

if [[ $mode == kfake ]]; then
	exit 0
fi

# The verdict, on the leaves (kgoverdict says how).
go run ./kgoverdict "$out" kgo-suite-out-of-scope.txt "$only"
