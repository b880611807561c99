#!/usr/bin/env bash
# kv.sh (make bench-kv): the key/value pseudo-queries' read path.
# SELECT "k" through mycached (memcached as the tier), on the kv-only
# listener (--kv-listen, no backend) and on the main listener (MariaDB
# behind it), against a direct gomemcache Get of the same item, at 1, 8 and
# 32 clients, all reading one pair; then, at KV_SPREAD_CLIENTS clients, each
# read picks one of KV_SPREAD_KEYS pairs at random, so that concurrent
# reads are mostly of different keys. A second mycached with
# KV_VARIANT_FLAGS (default --memcached-gets 1), run under the command
# KV_VARIANT_WRAP when set (such as "chrt -b 0"), is measured on its kv
# listener beside the first, and a third that keeps its pairs in L1
# (no --memcached; KV_L1=0 leaves it out): its row is the cost of the SQL
# front alone, without the memcached leg. Each cell runs BENCH_REPS times,
# interleaved; the table shows the median and the spread (min-max) of
# ops/s, p50 and p99, and the medians of the CPU that the client, the
# mycached read and memcached spent per read (user and system), since
# on a shared host the ops/s compare those sums. It goes to stdout and
# bench-out/kv.md.
set -euo pipefail
MC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$MC_ROOT/examples/bench/lib.sh"

BENCH_TIME=${BENCH_TIME:-10} # seconds per measurement
BENCH_REPS=${BENCH_REPS:-3}
KV_CLIENTS=${KV_CLIENTS:-"1 8 32"}
KV_VALUE_BYTES=${KV_VALUE_BYTES:-100}
KV_SPREAD_KEYS=${KV_SPREAD_KEYS:-1000}
KV_SPREAD_CLIENTS=${KV_SPREAD_CLIENTS:-32}
KV_MYCACHED_FLAGS=${KV_MYCACHED_FLAGS:-} # more flags for the mycached under test
# A second mycached, measured on its kv listener beside the first: by
# default the same with one memcached get in flight, the setting that
# spends the least CPU per read when the CPUs are the limit.
KV_VARIANT_FLAGS=${KV_VARIANT_FLAGS---memcached-gets 1}
KV_VARIANT_WRAP=${KV_VARIANT_WRAP:-}
KV_L1=${KV_L1:-1}
KV_PASSWORD=bench-kv
KV2_PORT=

mc_init bench-kv
RESULTS=$MC_TMP/results.txt
: >"$RESULTS"

echo "== starting MariaDB, memcached and mycached (in $MC_TMP)"
mc_start_mariadb db
mc_start_memcached memcached
MEMCACHED_PID=${MC_PIDS[-1]}
printf 'bench:%s\n' "$KV_PASSWORD" >"$MC_TMP/kv-users"
KV_PORT=$(mc_free_port)
# kv has no backend to fall back to, so a memcached timeout is an error for
# the client. With the client, mycached, memcached and MariaDB sharing a few
# CPUs, a read can wait for a CPU longer than the default 50ms; the bound
# here keeps the benchmark about throughput and latency, not about that.
mc_start_mycached my "$DB_PORT" --memcached "127.0.0.1:$MEMCACHED_PORT" --memcached-timeout 1s \
	--kv-listen "127.0.0.1:$KV_PORT" --kv-users-file "$MC_TMP/kv-users" --kv-users root,bench ${KV_MYCACHED_FLAGS:-}
mc_wait_port "$KV_PORT" "${MC_PIDS[-1]}" "$MC_TMP/my.log"
MY_PID=${MC_PIDS[-1]} MY2_PID= MY3_PID=
if [[ -n $KV_VARIANT_FLAGS || -n $KV_VARIANT_WRAP ]]; then
	KV2_PORT=$(mc_free_port)
	# shellcheck disable=SC2086 # the flags are words
	MC_MYCACHED_WRAP=$KV_VARIANT_WRAP mc_start_mycached my2 "$DB_PORT" --memcached "127.0.0.1:$MEMCACHED_PORT" --memcached-timeout 1s \
		--kv-listen "127.0.0.1:$KV2_PORT" --kv-users-file "$MC_TMP/kv-users" --kv-users root,bench ${KV_MYCACHED_FLAGS:-} $KV_VARIANT_FLAGS
	mc_wait_port "$KV2_PORT" "${MC_PIDS[-1]}" "$MC_TMP/my2.log"
	MY2_PID=${MC_PIDS[-1]}
fi

if [[ $KV_L1 == 1 ]]; then
	KV3_PORT=$(mc_free_port)
	# shellcheck disable=SC2086 # the flags are words
	mc_start_mycached my3 "$DB_PORT" --kv-listen "127.0.0.1:$KV3_PORT" --kv-users-file "$MC_TMP/kv-users" \
		--kv-users root,bench ${KV_MYCACHED_FLAGS:-}
	mc_wait_port "$KV3_PORT" "${MC_PIDS[-1]}" "$MC_TMP/my3.log"
	MY3_PID=${MC_PIDS[-1]}
fi

dsn_of() {
	case $1 in
	kv-listen) echo "bench:$KV_PASSWORD@tcp(127.0.0.1:$KV_PORT)/" ;;
	l1) echo "bench:$KV_PASSWORD@tcp(127.0.0.1:$KV3_PORT)/" ;;
	variant) echo "bench:$KV_PASSWORD@tcp(127.0.0.1:$KV2_PORT)/" ;;
	*) echo "root:$MC_ROOT_PASSWORD@tcp(127.0.0.1:$MY_PORT)/" ;;
	esac
}

# measure LABEL TARGET CLIENTS KEYS DSN MYCACHED_PID [MEMCACHED] appends
# "LABEL CLIENTS KEYS ops/s p50 p99 client_us mycached_us memcached_us",
# the last three being CPU per read. MYCACHED_PID is the mycached that
# serves the reads ("" for none). MEMCACHED is where the pairs are
# (default the benchmark's memcached; "" for a mycached that keeps them in
# L1).
measure() {
	local label=$1 target=$2 clients=$3 keys=$4 dsn=$5 mypid=$6 mc=${7-127.0.0.1:$MEMCACHED_PORT} line my0 mc0 my1 mc1
	# shellcheck disable=SC2086 # no PID is no word
	my0=$(mc_cpu_ticks $mypid) mc0=$(mc_cpu_ticks "$MEMCACHED_PID")
	line=$("$MC_ROOT/bin/mycached-bench" kv -dsn "$dsn" -memcached "$mc" \
		-target "$target" -clients "$clients" -keys "$keys" -duration "${BENCH_TIME}s" -value-bytes "$KV_VALUE_BYTES") ||
		mc_die "mycached-bench kv $label $clients failed"
	# shellcheck disable=SC2086 # no PID is no word
	my1=$(mc_cpu_ticks $mypid) mc1=$(mc_cpu_ticks "$MEMCACHED_PID")
	echo "  $label: $line"
	awk -v l="$label" -v c="$clients" -v k="$keys" -v my=$((my1 - my0)) -v mc=$((mc1 - mc0)) -v hz="$MC_CLK_TCK" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		us = v["ops"] > 0 ? 1e6 / hz / v["ops"] : 0
		print l, c, k, v["ops_per_sec"], v["p50_ms"], v["p99_ms"], v["client_cpu_us"] + 0, my * us, mc * us
	}' <<<"$line" >>"$RESULTS"
}

cells=()
for clients in $KV_CLIENTS; do cells+=("$clients 1"); done
if [[ $KV_SPREAD_KEYS -gt 1 ]]; then
	for clients in $KV_SPREAD_CLIENTS; do cells+=("$clients $KV_SPREAD_KEYS"); done
fi
for rep in $(seq "$BENCH_REPS"); do
	for cell in "${cells[@]}"; do
		read -r clients keys <<<"$cell"
		echo "== repetition $rep/$BENCH_REPS, $clients clients, $keys key(s)"
		measure memcached-direct memcached "$clients" "$keys" "$(dsn_of kv-listen)" ""
		measure mycached-kv-listen sql "$clients" "$keys" "$(dsn_of kv-listen)" "$MY_PID"
		measure mycached-main sql "$clients" "$keys" "$(dsn_of main)" "$MY_PID"
		if [[ -n $KV2_PORT ]]; then
			measure mycached-kv-variant sql "$clients" "$keys" "$(dsn_of variant)" "$MY2_PID"
		fi
		if [[ $KV_L1 == 1 ]]; then
			measure mycached-kv-l1 sql "$clients" "$keys" "$(dsn_of l1)" "$MY3_PID" ""
		fi
	done
done

# summarize prints the markdown table: per label and clients, the median
# and min-max of each measure, mycached's median ops/s as a share of
# direct memcached's, and the median CPU per read of each process.
summarize() {
	awk '
	function med(s,   a, n) { n = split(s, a, " "); asort(a); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function lo(s,   a, n) { n = split(s, a, " "); asort(a); return a[1] }
	function hi(s,   a, n) { n = split(s, a, " "); asort(a); return a[n] }
	{
		cell = $2 SUBSEP $3; k = $1 SUBSEP cell
		ops[k] = ops[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $6
		cl[k] = cl[k] " " $7; my[k] = my[k] " " $8; mc[k] = mc[k] " " $9
		if (!(k in seen)) { seen[k] = 1 }
		if (!(cell in cseen)) { cseen[cell] = 1; cells[++nc] = cell }
	}
	END {
		print "| target | clients | keys | ops/s median (min-max) | vs direct | p50 ms median (min-max) | p99 ms median (min-max) | CPU us/read: client / mycached / memcached |"
		print "|---|---:|---:|---:|---:|---:|---:|---:|"
		nl = split("memcached-direct mycached-kv-listen mycached-main mycached-kv-variant mycached-kv-l1", labels, " ")
		for (j = 1; j <= nc; j++) {
			split(cells[j], ck, SUBSEP)
			direct = med(ops["memcached-direct" SUBSEP cells[j]])
			for (l = 1; l <= nl; l++) {
				k = labels[l] SUBSEP cells[j]
				if (!(k in seen)) continue
				m = med(ops[k])
				printf "| %s | %d | %d | %.0f (%.0f-%.0f) | %.2fx | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.1f / %.1f / %.1f |\n", labels[l], ck[1], ck[2],
					m, lo(ops[k]), hi(ops[k]), m / direct,
					med(p50[k]), lo(p50[k]), hi(p50[k]), med(p99[k]), lo(p99[k]), hi(p99[k]),
					med(cl[k]), med(my[k]), med(mc[k])
			}
		}
	}' "$RESULTS"
}

mkdir -p "$MC_ROOT/bench-out"
{
	echo "# make bench-kv"
	echo
	echo "SELECT \"k\" (a ${KV_VALUE_BYTES}-byte value) through mycached with memcached as its tier, against a"
	echo "direct gomemcache Get of the same item (mycached-bench kv); keys > 1: each read picks one of that"
	echo "many pairs at random. SQL clients are go-sql-driver/mysql, one pinned connection each, text"
	echo "protocol. ${BENCH_TIME}s per run, $BENCH_REPS runs"
	echo "per cell, interleaved. $(nproc) CPUs shared by the client, mycached, memcached and MariaDB;"
	echo "$(date -u +%Y-%m-%dT%H:%MZ). Target at 32 clients: >= 0.5x direct ops/s, p99 <= 2 ms."
	if [[ -n $KV_MYCACHED_FLAGS ]]; then echo; echo "mycached ran with $KV_MYCACHED_FLAGS."; fi
	if [[ -n $KV2_PORT ]]; then
		echo
		echo "mycached-kv-variant is the kv listener of a second mycached run${KV_VARIANT_WRAP:+ under $KV_VARIANT_WRAP}${KV_VARIANT_FLAGS:+ with $KV_VARIANT_FLAGS}."
	fi
	if [[ $KV_L1 == 1 ]]; then echo; echo "mycached-kv-l1 is the kv listener of a mycached without memcached, which keeps the pairs in L1: the SQL front without the memcached leg."; fi
	echo
	summarize
} | tee "$MC_ROOT/bench-out/kv.md"
