#!/usr/bin/env bash
# cache.sh (make bench-cache): what a cache hit is worth. sysbench
# oltp_point_select (--db-ps-mode=disable and auto, 1 and 8 threads) and a
# heavy aggregate over 100k rows (mycached-bench query), against MariaDB
# direct, MariaDB with its query cache on, mycached hitting L1, and mycached
# hitting memcached only (--cache-memory 0). Each measurement is repeated
# BENCH_REPS times, interleaved. The table goes to stdout and
# bench-out/cache.md.
set -euo pipefail
MC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$MC_ROOT/examples/bench/lib.sh"
source "$MC_ROOT/examples/bench/sysbench.sh"

# The heavy query: an aggregate over every row of a 100k-row table.
HEAVY_ROWS=${HEAVY_ROWS:-100000}
HEAVY_SQL="SELECT grp, COUNT(*), SUM(val), AVG(val), MIN(pad), MAX(pad) FROM big GROUP BY grp ORDER BY grp"

mc_init bench-cache
RESULTS=$MC_TMP/results.txt
: >"$RESULTS"

load() {
	sb_prepare "$1"
	mc_sql "$1" sbtest -e "CREATE TABLE big (id INT PRIMARY KEY, grp INT NOT NULL, val DOUBLE NOT NULL, pad CHAR(60) NOT NULL)
		ENGINE=InnoDB; INSERT INTO big SELECT seq, seq % 100, (seq * 7919) % 1000, MD5(seq) FROM seq_1_to_$HEAVY_ROWS"
}

echo "== starting MariaDB, MariaDB with its query cache, memcached and mycached (in $MC_TMP)"
mc_start_mariadb db
mc_start_mariadb qc --query-cache-type=1 --query-cache-size=64M
load "$DB_PORT"
load "$QC_PORT"
mc_start_memcached memcached
mc_start_mycached myl1 "$DB_PORT" --default-ttl 1h
mc_start_mycached mymc "$DB_PORT" --default-ttl 1h --cache-memory 0 --memcached "127.0.0.1:$MEMCACHED_PORT"

TARGETS="direct query-cache mycached-l1 mycached-memcached"
port_of() {
	case $1 in
	direct) echo "$DB_PORT" ;;
	query-cache) echo "$QC_PORT" ;;
	mycached-l1) echo "$MYL1_PORT" ;;
	mycached-memcached) echo "$MYMC_PORT" ;;
	esac
}

echo "== warming the caches (${BENCH_TIME}s per mode and target, not measured)"
for target in query-cache mycached-l1 mycached-memcached; do
	for mode in disable auto; do
		sb "$(port_of "$target")" --db-ps-mode=$mode --threads=8 --time="$BENCH_TIME" run >/dev/null 2>&1 ||
			echo "  warm-up of $target in mode $mode failed"
	done
done
read -r l1h0 l1m0 < <(hits "$MYL1_PORT")
read -r mch0 mcm0 < <(hits "$MYMC_PORT")

for rep in $(seq "$BENCH_REPS"); do
	for mode in disable auto; do
		for threads in 8 1; do
			echo "== repetition $rep/$BENCH_REPS, point select, --db-ps-mode=$mode, $threads threads"
			for target in $TARGETS; do
				sb_measure "$target" "$(port_of "$target")" "$mode" "$threads"
			done
		done
	done
	for threads in 8 1; do
		echo "== repetition $rep/$BENCH_REPS, heavy aggregate, $threads threads"
		for target in $TARGETS; do
			q_measure "$target" "$(port_of "$target")" "$threads" "$HEAVY_SQL"
		done
	done
done
read -r l1h1 l1m1 < <(hits "$MYL1_PORT")
read -r mch1 mcm1 < <(hits "$MYMC_PORT")
ratio() { awk -v h="$1" -v m="$2" 'BEGIN { printf "%.1f%%", (h + m > 0 ? 100 * h / (h + m) : 0) }'; }

mkdir -p "$MC_ROOT/bench-out"
{
	echo "# make bench-cache"
	echo
	echo "sysbench oltp_point_select (1 table of $BENCH_ROWS rows) and a heavy aggregate over $HEAVY_ROWS rows"
	echo "(\`$HEAVY_SQL\`, run by mycached-bench query), ${BENCH_TIME}s per run, $BENCH_REPS runs per cell, interleaved."
	echo "$(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ). p50/p99 per query in ms, medians of the runs."
	echo "Hit ratio in the measured runs: mycached-l1 $(ratio $((l1h1 - l1h0)) $((l1m1 - l1m0))),"
	echo "mycached-memcached $(ratio $((mch1 - mch0)) $((mcm1 - mcm0))) (after a ${BENCH_TIME}s warm-up per mode)."
	echo
	summarize direct query-cache
	echo
	echo "Targets: L1 point select >= 1.0x direct at 8 threads and >= 1.2x at 1 thread;"
	echo "memcached-only point select >= 0.8x direct; heavy query hits >= 100x direct; >= 1.3x the query cache at 8 threads."
} | tee "$MC_ROOT/bench-out/cache.md"
