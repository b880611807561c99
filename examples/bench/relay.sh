#!/usr/bin/env bash
# relay.sh (make bench-relay): the cost of mycached's relaying. sysbench
# oltp_point_select against MariaDB direct, a plain io.Copy relay
# (mycached-bench relay), mycached with caching off (--passthrough), and
# mycached caching (hits). Each measurement is repeated BENCH_REPS times,
# interleaved so that drift affects every target alike. The table goes to
# stdout and bench-out/relay.md.
set -euo pipefail
MC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$MC_ROOT/examples/bench/lib.sh"
source "$MC_ROOT/examples/bench/sysbench.sh"

mc_init bench-relay
RESULTS=$MC_TMP/results.txt
: >"$RESULTS"

echo "== starting MariaDB, the io.Copy relay and mycached (in $MC_TMP)"
mc_start_mariadb db
sb_prepare "$DB_PORT"
mc_start_relay relay "$DB_PORT"
if mc_has_flag --passthrough; then
	passthrough=(--passthrough)
	relay_note="mycached-relay runs with --passthrough: nothing is cached, every query goes to MariaDB."
else
	# Without --passthrough the shortest TTL is the nearest thing: entries
	# expire at once, so every query is relayed, but lookups and stores
	# still cost something.
	passthrough=(--default-ttl 1ms)
	relay_note="mycached-relay runs with --default-ttl 1ms (no --passthrough flag in this build): misses still pay for lookups and stores."
fi
mc_start_mycached mycrelay "$DB_PORT" "${passthrough[@]}"
# A long TTL keeps the entries through every repetition.
mc_start_mycached mychits "$DB_PORT" --default-ttl 1h

TARGETS="direct relay mycached-relay mycached-hits"
port_of() {
	case $1 in
	direct) echo "$DB_PORT" ;;
	relay) echo "$RELAY_PORT" ;;
	mycached-relay) echo "$MYCRELAY_PORT" ;;
	mycached-hits) echo "$MYCHITS_PORT" ;;
	esac
}

echo "== warming mycached-hits' cache (${BENCH_TIME}s, not measured)"
sb "$MYCHITS_PORT" --db-ps-mode=disable --threads=8 --time="$BENCH_TIME" run >/dev/null
read -r h0 m0 < <(hits "$MYCHITS_PORT")

for rep in $(seq "$BENCH_REPS"); do
	for threads in 8 1; do
		echo "== repetition $rep/$BENCH_REPS, $threads threads"
		for target in $TARGETS; do
			sb_measure "$target" "$(port_of "$target")" disable "$threads"
		done
	done
done
read -r h1 m1 < <(hits "$MYCHITS_PORT")

mkdir -p "$MC_ROOT/bench-out"
{
	echo "# make bench-relay"
	echo
	echo "sysbench oltp_point_select, --db-ps-mode=disable, 1 table of $BENCH_ROWS rows, ${BENCH_TIME}s per run,"
	echo "$BENCH_REPS runs per cell, interleaved. $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)."
	echo "p50 is from sysbench's histogram, p99 from --percentile=99; both per query, median of the runs."
	echo "$relay_note"
	echo "mycached-hits: hit ratio during the measured runs $(awk -v h=$((h1 - h0)) -v m=$((m1 - m0)) 'BEGIN { printf "%.1f%%", (h + m > 0 ? 100 * h / (h + m) : 0) }') (after a ${BENCH_TIME}s warm-up)."
	echo
	summarize direct relay
	echo
	echo "Target: mycached-relay >= 0.9x relay's q/s at 8 threads, p99 <= 1.2x relay's."
} | tee "$MC_ROOT/bench-out/relay.md"
