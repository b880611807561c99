#!/usr/bin/env bash
# bench.sh (make bench, make bench QUICK=1): the whole performance story in
# one run. It starts a private MariaDB, a second one with its query cache
# on, memcached, the plain io.Copy relay and mycached in four
# configurations, loads the data, runs every benchmark scenario against
# its baselines, and writes bench-out/report.md and bench-out/report.png.
# Scenarios that sysbench covers use sysbench; the others use
# mycached-bench (go-sql-driver). Every measurement also records the CPU
# seconds mycached, mariadbd, memcached and the relay used.
set -euo pipefail
MC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=$MC_ROOT/bin/mycached-bench

QUICK=${QUICK:-}
[[ $QUICK == 0 ]] && QUICK=
if [[ -n $QUICK ]]; then
	BENCH_TIME=${BENCH_TIME:-2}     # seconds per measurement
	WARM_TIME=${WARM_TIME:-2}       # seconds of sysbench per cache warm-up
	BENCH_ROWS=${BENCH_ROWS:-2000}  # rows of sbtest1
	POINT_THREADS=${POINT_THREADS:-"1 8"}
	HEAVY_THREADS=${HEAVY_THREADS:-"8"}
	DOCS_PER_SIZE=${DOCS_PER_SIZE:-4}
	KV_CLIENTS=${KV_CLIENTS:-"1 32"}
else
	BENCH_TIME=${BENCH_TIME:-10}
	WARM_TIME=${WARM_TIME:-5}
	BENCH_ROWS=${BENCH_ROWS:-10000}
	POINT_THREADS=${POINT_THREADS:-"1 8 64"}
	HEAVY_THREADS=${HEAVY_THREADS:-"1 8"}
	DOCS_PER_SIZE=${DOCS_PER_SIZE:-8}
	KV_CLIENTS=${KV_CLIENTS:-"1 8 32"}
fi
# BENCH_PROFILE=1 takes a CPU profile of the mycached under test during
# each of its measurements (through --admin's /debug/pprof) and writes them,
# with a top-15 summary, to bench-out/profiles/. It needs curl, and it costs
# the measured mycached a little CPU, so it is off by default.
BENCH_PROFILE=${BENCH_PROFILE:-}
# BENCH_ONLY="1 8 9" runs only those scenarios (the servers all start).
BENCH_ONLY=${BENCH_ONLY:-}
scenario() { [[ -z $BENCH_ONLY || " $BENCH_ONLY " == *" $1 "* ]]; }
HEAVY_ROWS=${HEAVY_ROWS:-100000}
# Scenario 10: sysbench's 4 tables of RW_ROWS rows, RW_ROUNDS rounds.
if [[ -n $QUICK ]]; then RW_ROWS=${RW_ROWS:-10000} RW_ROUNDS=${RW_ROUNDS:-1}; else RW_ROWS=${RW_ROWS:-100000} RW_ROUNDS=${RW_ROUNDS:-2}; fi
MIX_THREADS=${MIX_THREADS:-8}
MIX_HOT=${MIX_HOT:-1000}
HEAVY_SQL="SELECT grp, COUNT(*), SUM(val), AVG(val), MIN(pad), MAX(pad) FROM big GROUP BY grp ORDER BY grp"

source "$MC_ROOT/examples/bench/lib.sh"
source "$MC_ROOT/examples/bench/sysbench.sh"

mc_init bench
RESULTS=$MC_TMP/results.jsonl
: >"$RESULTS"
# 512 client connections, and as many from mycached to MariaDB, need more
# descriptors than some defaults allow.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# PIDs of each kind of process, for the CPU accounting.
declare -A ROLE_PIDS=([mycached]= [mariadbd]= [memcached]= [relay]=)
role() { ROLE_PIDS[$1]+=" ${MC_PIDS[-1]}"; }

# cpu_snap prints "kind=ticks" for each kind: utime+stime of its PIDs.
cpu_snap() {
	local k out=
	for k in mycached mariadbd memcached relay; do
		# shellcheck disable=SC2086 # the PIDs are words
		out+="$k=$(mc_cpu_ticks ${ROLE_PIDS[$k]}) "
	done
	echo "$out"
}

# cpu_json BEFORE AFTER prints the CPU seconds between two snapshots.
cpu_json() {
	awk -v a="$1" -v b="$2" -v hz="$MC_CLK_TCK" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); printf "{"
		for (i = 1; i <= n; i++) { split(x[i], p, "="); split(y[i], q, "="); printf "%s\"%s\":%.2f", (i > 1 ? "," : ""), p[1], (q[2] - p[2]) / hz }
		printf "}"
	}'
}

json_str() { local s=${1//\\/ }; s=${s//\"/\'}; printf '%s' "${s//$'\n'/ }"; }

# measure SCENARIO CASE TARGET BASELINE CMD... runs CMD, which prints one
# Stats JSON object, and appends a record of it to $RESULTS. A failure is
# recorded as such and the run goes on. TITLE names the scenario.
measure() {
	local scen=$1 cs=$2 tgt=$3 base=$4 c0 c1 out admin prof= ppid=
	shift 4
	printf '  %-22s %-28s' "$cs" "$tgt"
	admin=$(admin_of "$tgt")
	if [[ -n $BENCH_PROFILE && -n $admin ]]; then
		mkdir -p "$MC_ROOT/bench-out/profiles"
		prof=$MC_ROOT/bench-out/profiles/$scen-${cs//[^A-Za-z0-9]/_}-$tgt
		curl -s -o "$prof.pprof" "http://127.0.0.1:$admin/debug/pprof/profile?seconds=$((BENCH_TIME > 1 ? BENCH_TIME - 1 : 1))" &
		ppid=$!
	fi
	c0=$(cpu_snap)
	if out=$("$@" 2>"$MC_TMP/measure.err"); then
		c1=$(cpu_snap)
		printf '{"scenario":"%s","title":"%s","case":"%s","target":"%s","baseline":"%s","cpu":%s,"stats":%s}\n' \
			"$scen" "$TITLE" "$cs" "$tgt" "$base" "$(cpu_json "$c0" "$c1")" "$out" >>"$RESULTS"
		tail -n 1 "$MC_TMP/measure.err"
	else
		echo "FAILED: $(tail -n 1 "$MC_TMP/measure.err")"
		printf '{"scenario":"%s","title":"%s","case":"%s","target":"%s","baseline":"%s","failed":true,"error":"%s","cpu":{},"stats":{}}\n' \
			"$scen" "$TITLE" "$cs" "$tgt" "$base" "$(json_str "$(tail -n 3 "$MC_TMP/measure.err" | head -c 2000)")" >>"$RESULTS"
	fi
	if [[ -n $ppid ]]; then
		wait "$ppid" || true
		go tool pprof -top -nodecount=15 "$MC_ROOT/bin/mycached" "$prof.pprof" >"$prof.txt" 2>&1 || true
	fi
}

# counters PORT prints mycached's counters as name=value pairs.
counters() {
	mc_sql "$1" -N -B -e "SHOW MYCACHED STATUS" | awk '$1 ~ /^(Hits_l1|Hits_memcached|Misses|Invalidations)$/ { printf "%s=%s ", $1, $2 }'
}

# sbx TEST PORT [sysbench args...] runs a sysbench OLTP test as root.
sbx() {
	local test=$1 port=$2
	shift 2
	"$(mc_bin sysbench)" "$test" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
		--mysql-user=root --mysql-password="$MC_ROOT_PASSWORD" --mysql-db=sbtest --mysql-ssl=off \
		--tables=1 --table-size="$BENCH_ROWS" "$@"
}

# sb_stats TEST PORT MODE THREADS [MYCACHED_PORT] runs sysbench and prints
# its report as Stats JSON, with the cache counters' deltas when
# MYCACHED_PORT is given.
sb_stats() {
	local test=$1 port=$2 mode=$3 threads=$4 myc=${5:-} log c0= args=()
	log=$MC_TMP/sb-$test-$port-$mode-$threads.log
	if [[ -n $myc ]]; then c0=$(counters "$myc"); fi
	sbx "$test" "$port" --db-ps-mode="$mode" --threads="$threads" --time="$BENCH_TIME" \
		--histogram=on run >"$log" 2>&1 || { grep -m1 -E 'FATAL|error' "$log" >&2; return 1; }
	if [[ -n $myc ]]; then args=(-before "$c0" -after "$(counters "$myc")"); fi
	"$BENCH" sysbench "${args[@]}" <"$log"
}

# sbrw TEST PORT [sysbench args...] runs a sysbench OLTP test on
# scenario 10's four tables.
sbrw() {
	local test=$1 port=$2
	shift 2
	"$(mc_bin sysbench)" "$test" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
		--mysql-user=root --mysql-password="$MC_ROOT_PASSWORD" --mysql-db=sbrw --mysql-ssl=off \
		--tables=4 --table-size="$RW_ROWS" "$@"
}

# sbrw_stats TEST PORT MODE THREADS [MYCACHED_PORT] [sysbench args...] is
# sb_stats on scenario 10's tables.
sbrw_stats() {
	local test=$1 port=$2 mode=$3 threads=$4 myc=${5:-} log c0= args=()
	shift 5
	log=$MC_TMP/sbrw-$test-$port-$mode-$threads.log
	if [[ -n $myc ]]; then c0=$(counters "$myc"); fi
	sbrw "$test" "$port" --db-ps-mode="$mode" --threads="$threads" --time="$BENCH_TIME" \
		--histogram=on "$@" run >"$log" 2>&1 || { grep -m1 -E 'FATAL|error' "$log" >&2; return 1; }
	if [[ -n $myc ]]; then args=(-before "$c0" -after "$(counters "$myc")"); fi
	"$BENCH" sysbench "${args[@]}" <"$log"
}

dsn() { echo "root:$MC_ROOT_PASSWORD@tcp(127.0.0.1:$1)/sbtest?interpolateParams=true"; }

# start_mycached NAME BACKEND_PORT [args...] starts mycached with an admin
# listener, whose port goes in NAME_ADMIN, for the profiles.
start_mycached() {
	local name=$1 admin
	admin=$(mc_free_port)
	mc_start_mycached "$@" --admin "127.0.0.1:$admin"
	role mycached
	printf -v "${name^^}_ADMIN" %s "$admin"
}

# admin_of TARGET prints the admin port of the mycached behind TARGET, if any.
admin_of() {
	case $1 in
	passthrough) echo "$MYPASS_ADMIN" ;; l1) echo "$MYL1_ADMIN" ;; memcached) echo "$MYMC_ADMIN" ;;
	mycached | mycached-kv) echo "$MYMIX_ADMIN" ;;
	bounded) echo "$FLEETA_ADMIN" ;; strict) echo "$FLEETSA_ADMIN" ;; strict-mc) echo "$FLEETMA_ADMIN" ;;
	caching) echo "$MYRW_ADMIN" ;; cold) echo "$MYCOLD_ADMIN" ;;
	esac
}

# ---------------------------------------------------------------------------
echo "== make bench${QUICK:+ QUICK=1}: ${BENCH_TIME}s per measurement, $(nproc) CPUs, load $LOAD_START (in $MC_TMP)"
echo "== starting MariaDB, MariaDB with its query cache, memcached, the relay and mycached"
mc_start_mariadb db
role mariadbd
mc_start_mariadb qc --query-cache-type=1 --query-cache-size=64M
role mariadbd
# Memcached keeps its default item size limit (-I 1m): the 1 and 2 MiB
# documents are stored in chunks.
mc_start_memcached memcached -m 512
role memcached
mc_start_relay relay "$DB_PORT"
role relay
start_mycached mypass "$DB_PORT" --passthrough
start_mycached myl1 "$DB_PORT" --default-ttl 1h
start_mycached mymc "$DB_PORT" --default-ttl 1h --cache-memory 0 --memcached "127.0.0.1:$MEMCACHED_PORT"
# The read/write mix runs through a sidecar as deployed: L1 and memcached.
# Its kv-only listener serves scenario 7 too.
MYMIX_KV_PORT=$(mc_free_port)
printf 'root:%s\n' "$MC_ROOT_PASSWORD" >"$MC_TMP/kv-users"
start_mycached mymix "$DB_PORT" --default-ttl 1h --memcached "127.0.0.1:$MEMCACHED_PORT" \
	--kv-listen "127.0.0.1:$MYMIX_KV_PORT" --kv-users-file "$MC_TMP/kv-users"

echo "== loading: sysbench prepare ($BENCH_ROWS rows), big ($HEAVY_ROWS rows), docs, mix ($MIX_HOT rows)"
sb_prepare "$DB_PORT"
sb_prepare "$QC_PORT"
mc_sql "$DB_PORT" sbtest <<-SQL
	CREATE TABLE big (id INT PRIMARY KEY, grp INT NOT NULL, val DOUBLE NOT NULL, pad CHAR(60) NOT NULL) ENGINE=InnoDB;
	INSERT INTO big SELECT seq, seq % 100, (seq * 7919) % 1000, MD5(seq) FROM seq_1_to_$HEAVY_ROWS;
	CREATE TABLE mix (id INT PRIMARY KEY, val BIGINT NOT NULL) ENGINE=InnoDB;
	INSERT INTO mix SELECT seq, 0 FROM seq_1_to_$MIX_HOT;
	CREATE TABLE docs (id INT PRIMARY KEY, doc JSON NOT NULL) ENGINE=InnoDB;
SQL
# Documents of about 20 KB, 200 KB, 1 MiB and 2 MiB: an order's line items
# as a JSON array, ids 1001.., 2001.., 3001.., 4001.. per size.
DOC_SIZES=(20KB 200KB 1MiB 2MiB)
DOC_BYTES=(20000 200000 1048576 2097152)
for i in "${!DOC_SIZES[@]}"; do
	items=$((DOC_BYTES[i] / 64))
	mc_sql "$DB_PORT" sbtest -e "INSERT INTO docs SELECT $(((i + 1) * 1000)) + seq,
		CONCAT('{\"order\":', seq, ',\"size\":\"${DOC_SIZES[i]}\",\"items\":[',
			REPEAT('{\"sku\":\"AB-12345-XY\",\"qty\":3,\"price\":19.99,\"tags\":[\"a\",\"b\"]},', $items), '{}]}')
		FROM seq_1_to_$DOCS_PER_SIZE"
done
mc_sql "$DB_PORT" sbtest -N -B -e "SELECT id DIV 1000, COUNT(*), ROUND(AVG(LENGTH(doc))) FROM docs GROUP BY 1" |
	awk '{ printf "  docs: size class %s: %s documents of %s bytes\n", $1, $2, $3 }'

# point_port TARGET prints the port of one of scenario 1's targets, which
# scenarios 3 and 5 read through too.
point_port() {
	case $1 in
	direct) echo "$DB_PORT" ;; query-cache) echo "$QC_PORT" ;; relay) echo "$RELAY_PORT" ;;
	passthrough) echo "$MYPASS_PORT" ;; l1) echo "$MYL1_PORT" ;; memcached) echo "$MYMC_PORT" ;;
	esac
}

# ---------------------------------------------------------------------------
if scenario 1; then
TITLE="1. oltp_point_select"
POINT_TARGETS="direct query-cache relay passthrough l1 memcached"
echo "== $TITLE: warming the query cache, L1 and memcached (${WARM_TIME}s per mode and target)"
for port in "$QC_PORT" "$MYL1_PORT" "$MYMC_PORT"; do
	for mode in disable auto; do
		sbx oltp_point_select "$port" --db-ps-mode=$mode --threads=8 --time="$WARM_TIME" run >/dev/null 2>&1 ||
			echo "  warm-up on port $port, mode $mode failed"
	done
done
echo "== $TITLE: text (--db-ps-mode=disable) and prepared (auto), threads $POINT_THREADS"
for mode in disable auto; do
	name=text
	[[ $mode == auto ]] && name=prepared
	for threads in $POINT_THREADS; do
		for tgt in $POINT_TARGETS; do
			myc=
			[[ $tgt == l1 || $tgt == memcached || $tgt == passthrough ]] && myc=$(point_port "$tgt")
			measure point "$name $threads thr" "$tgt" direct sb_stats oltp_point_select "$(point_port "$tgt")" "$mode" "$threads" "$myc"
		done
	done
done
fi

# ---------------------------------------------------------------------------
if scenario 2; then
TITLE="2. heavy aggregate ($HEAVY_ROWS rows)"
echo "== $TITLE: $HEAVY_SQL"
for threads in $HEAVY_THREADS; do
	measure heavy "$threads thr" direct direct "$BENCH" load -dsn "$(dsn "$DB_PORT")" -query "$HEAVY_SQL" \
		-threads "$threads" -duration "${BENCH_TIME}s"
	for tgt in l1 memcached; do
		port=$(point_port "$tgt")
		measure heavy "$threads thr" "$tgt" direct "$BENCH" load -dsn "$(dsn "$port")" -admin-dsn "$(dsn "$port")" \
			-query "$HEAVY_SQL" -warm -threads "$threads" -duration "${BENCH_TIME}s"
	done
done
fi

# ---------------------------------------------------------------------------
if scenario 3; then
TITLE="3. JSON documents, 50 clients"
echo "== $TITLE ($DOCS_PER_SIZE documents per size, random reads)"
for i in "${!DOC_SIZES[@]}"; do
	lo=$(((i + 1) * 1000 + 1)) hi=$(((i + 1) * 1000 + DOCS_PER_SIZE))
	q="SELECT doc FROM docs WHERE id = ?"
	measure json "${DOC_SIZES[i]}" direct direct "$BENCH" load -dsn "$(dsn "$DB_PORT")" -query "$q" \
		-id-min "$lo" -id-max "$hi" -threads 50 -duration "${BENCH_TIME}s"
	for tgt in l1 memcached; do
		port=$(point_port "$tgt")
		measure json "${DOC_SIZES[i]}" "$tgt" direct "$BENCH" load -dsn "$(dsn "$port")" -admin-dsn "$(dsn "$port")" \
			-query "$q" -id-min "$lo" -id-max "$hi" -warm -threads 50 -duration "${BENCH_TIME}s"
	done
done
fi

# ---------------------------------------------------------------------------
if scenario 4; then
TITLE="4. read/write mix"
echo "== $TITLE: sysbench oltp_read_write, then ${MIX_THREADS} clients on $MIX_HOT hot rows (mycached: L1 + memcached)"
measure mix "oltp_read_write $MIX_THREADS thr" direct direct sb_stats oltp_read_write "$DB_PORT" auto "$MIX_THREADS"
measure mix "oltp_read_write $MIX_THREADS thr" mycached direct sb_stats oltp_read_write "$MYMIX_PORT" auto "$MIX_THREADS" "$MYMIX_PORT"
for pct in 90 99; do
	cs="$pct/$((100 - pct)) reads/writes"
	measure mix "$cs" direct direct "$BENCH" mix -dsn "$(dsn "$DB_PORT")" -threads "$MIX_THREADS" -hot "$MIX_HOT" \
		-read-pct "$pct" -duration "${BENCH_TIME}s"
	measure mix "$cs" mycached direct "$BENCH" mix -dsn "$(dsn "$MYMIX_PORT")" -admin-dsn "$(dsn "$MYMIX_PORT")" \
		-threads "$MIX_THREADS" -hot "$MIX_HOT" -read-pct "$pct" -duration "${BENCH_TIME}s"
done
fi

# ---------------------------------------------------------------------------
if scenario 5; then
TITLE="5. 512 connections, point select"
echo "== $TITLE (ulimit -n $(ulimit -n))"
q="SELECT c FROM sbtest1 WHERE id = ?"
measure conns "512 conns" direct direct "$BENCH" load -dsn "$(dsn "$DB_PORT")" -query "$q" \
	-id-min 1 -id-max "$BENCH_ROWS" -threads 512 -duration "${BENCH_TIME}s"
measure conns "512 conns" l1 direct "$BENCH" load -dsn "$(dsn "$MYL1_PORT")" -admin-dsn "$(dsn "$MYL1_PORT")" -query "$q" \
	-id-min 1 -id-max "$BENCH_ROWS" -warm -threads 512 -duration "${BENCH_TIME}s"
fi

# ---------------------------------------------------------------------------
if scenario 6; then
TITLE="6. stampede, 64 clients on one cold heavy key"
echo "== $TITLE"
# A literal no earlier run used keeps the key cold.
for tgt in direct l1; do
	port=$(point_port "$tgt")
	q="SELECT grp, COUNT(*), SUM(val) FROM big WHERE id > -$((RANDOM + 1000)) GROUP BY grp ORDER BY grp"
	measure stampede "64 clients" "$tgt" direct "$BENCH" load -dsn "$(dsn "$port")" -query "$q" -once \
		-threads 64 -status-dsn "$(dsn "$DB_PORT")"
done
fi

# ---------------------------------------------------------------------------
if scenario 7; then
TITLE="7. kv"
# kv_stats DSN TARGET CLIENTS runs mycached-bench kv (SELECT "k" through
# mycached, or a direct memcached Get of the same item) and prints its
# line as Stats JSON. kv reports only p50 and p99; the report marks the
# other percentiles as not measured.
kv_stats() {
	local line
	line=$("$BENCH" kv -dsn "$1" -memcached "127.0.0.1:$MEMCACHED_PORT" -target "$2" -clients "$3" \
		-duration "${BENCH_TIME}s" -value-bytes 100) || return 1
	echo "$line" >&2
	awk '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "{\"ops\":%d,\"seconds\":%s,\"ops_per_sec\":%s,\"p50_ms\":%s,\"p99_ms\":%s,\"errors\":0,\"extra\":{\"partial_latency\":1}}\n",
			v["ops"], v["seconds"], v["ops_per_sec"], v["p50_ms"], v["p99_ms"]
	}' <<<"$line"
}
if "$BENCH" help 2>&1 | grep -q 'mycached-bench kv'; then
	echo "== $TITLE: SELECT \"k\" through mycached (L1 + memcached) against a direct memcached Get, clients $KV_CLIENTS"
	for clients in $KV_CLIENTS; do
		measure kv "$clients clients" memcached-get memcached-get kv_stats "$(dsn "$MYMIX_PORT")" memcached "$clients"
		measure kv "$clients clients" mycached memcached-get kv_stats "$(dsn "$MYMIX_PORT")" sql "$clients"
		measure kv "$clients clients" mycached-kv memcached-get kv_stats "root:$MC_ROOT_PASSWORD@tcp(127.0.0.1:$MYMIX_KV_PORT)/" sql "$clients"
	done
else
	echo "== $TITLE: not run (this mycached-bench has no kv command)"
fi
fi

# ---------------------------------------------------------------------------
# start_fleet starts scenario 8's sidecars, once. On a memcached of
# their own, linked as peers (--peer-listen): two bounded and two strict
# ones, and two bounded ones that reach MariaDB and memcached across a
# simulated network. On the shared memcached, with the other scenarios'
# sidecars, which take no part: two strict ones that check every hit
# against memcached (strict-mc).
NET_DELAY=${NET_DELAY:-150us}
FLEET_UP=
start_fleet() {
	[[ -n $FLEET_UP ]] && return
	FLEET_UP=1
	export MYCACHED_BINLOG_PASSWORD=$MC_BINLOG_PASSWORD
	mc_start_memcached fleetmc -m 512
	role memcached
	local fleet=(--default-ttl 1h --binlog-user mycached --memcached "127.0.0.1:$FLEETMC_PORT" --peer-listen 127.0.0.1:0)
	start_mycached fleeta "$DB_PORT" "${fleet[@]}" --consistency bounded
	start_mycached fleetb "$DB_PORT" "${fleet[@]}" --consistency bounded
	start_mycached fleetsa "$DB_PORT" "${fleet[@]}" --consistency strict
	start_mycached fleetsb "$DB_PORT" "${fleet[@]}" --consistency strict
	local mcfleet=(--default-ttl 1h --binlog-user mycached --memcached "127.0.0.1:$MEMCACHED_PORT" --consistency strict)
	start_mycached fleetma "$DB_PORT" "${mcfleet[@]}"
	start_mycached fleetmb "$DB_PORT" "${mcfleet[@]}"
	# Across a network: MariaDB and memcached behind relays that hold
	# every chunk NET_DELAY each way.
	mc_start_relay netdb "$DB_PORT" -delay "$NET_DELAY"
	role relay
	mc_start_relay netmc "$FLEETMC_PORT" -delay "$NET_DELAY"
	role relay
	local netfleet=(--default-ttl 1h --binlog-user mycached --memcached "127.0.0.1:$NETMC_PORT" --peer-listen 127.0.0.1:0 --consistency bounded)
	start_mycached fleetna "$NETDB_PORT" "${netfleet[@]}"
	start_mycached fleetnb "$NETDB_PORT" "${netfleet[@]}"
}

if scenario 8; then
TITLE="8. a fleet: two sidecars sharing memcached, each following the binlog"
start_fleet
echo "== $TITLE: warming each pair through its second sidecar, then its first (memcached fills the first's L1)"
for port in "$FLEETB_PORT" "$FLEETA_PORT" "$FLEETSB_PORT" "$FLEETSA_PORT" "$FLEETMB_PORT" "$FLEETMA_PORT" "$FLEETNB_PORT" "$FLEETNA_PORT"; do
	sbx oltp_point_select "$port" --db-ps-mode=disable --threads=8 --time="$WARM_TIME" run >/dev/null 2>&1 ||
		echo "  warm-up on port $port failed"
done
for port in "$FLEETA_PORT" "$FLEETNA_PORT"; do
	mc_sql "$port" -N -B -e "SHOW MYCACHED STATUS" | awk '$1 == "Binlog_follower" { printf "  sidecar on port '"$port"': follower %s\n", $2 }'
done
mc_sql "$FLEETSA_PORT" -N -B -e "SHOW MYCACHED STATUS" | awk '$1 ~ /^Peer_(members|linked|trusted)$/ { printf "  strict sidecar: %s %s\n", $1, $2 }'

echo "== $TITLE: oltp_point_select, 8 threads, text; network: $NET_DELAY each way to MariaDB and memcached"
measure fleet "loopback 8 thr" direct direct sb_stats oltp_point_select "$DB_PORT" disable 8
measure fleet "loopback 8 thr" bounded direct sb_stats oltp_point_select "$FLEETA_PORT" disable 8 "$FLEETA_PORT"
measure fleet "loopback 8 thr" strict direct sb_stats oltp_point_select "$FLEETSA_PORT" disable 8 "$FLEETSA_PORT"
measure fleet "loopback 8 thr" strict-mc direct sb_stats oltp_point_select "$FLEETMA_PORT" disable 8 "$FLEETMA_PORT"
measure fleet "network 8 thr" direct direct sb_stats oltp_point_select "$NETDB_PORT" disable 8
measure fleet "network 8 thr" bounded direct sb_stats oltp_point_select "$FLEETNA_PORT" disable 8 "$FLEETNA_PORT"
measure fleet "network 1 thr" direct direct sb_stats oltp_point_select "$NETDB_PORT" disable 1
measure fleet "network 1 thr" bounded direct sb_stats oltp_point_select "$FLEETNA_PORT" disable 1 "$FLEETNA_PORT"
fi

# ---------------------------------------------------------------------------
if scenario 9; then
TITLE="9. staleness of writes that bypass mycached"
start_fleet
STALE_RATE=${STALE_RATE:-100}
echo "== $TITLE: $STALE_RATE writes/s straight to MariaDB, read through both bounded sidecars (--max-staleness 1s)"
measure staleness "$STALE_RATE writes/s, bounded" bounded bounded "$BENCH" staleness -direct "$(dsn "$DB_PORT")" \
	-via "$(dsn "$FLEETA_PORT"),$(dsn "$FLEETB_PORT")" -rate "$STALE_RATE" -duration "${BENCH_TIME}s"
fi

# ---------------------------------------------------------------------------
if scenario 10; then
TITLE="10. read/write cost"
echo "== $TITLE: sysbench on 4 tables of $RW_ROWS rows, 8 threads; caching = L1 + memcached + binlog follower"
export MYCACHED_BINLOG_PASSWORD=$MC_BINLOG_PASSWORD
mc_sql "$DB_PORT" -e "CREATE DATABASE IF NOT EXISTS sbrw"
sbrw oltp_read_write "$DB_PORT" --threads=4 prepare >"$MC_TMP/prepare-rw.log" 2>&1 || { tail "$MC_TMP/prepare-rw.log" >&2; mc_die "sysbench prepare (sbrw) failed"; }
mc_start_memcached rwmem -m 512
role memcached
start_mycached myrw "$DB_PORT" --default-ttl 1h --binlog-user mycached --memcached "127.0.0.1:$RWMEM_PORT"
for round in $(seq "$RW_ROUNDS"); do
	for mode in disable auto; do
		cs="oltp_read_write $mode #$round"
		measure rw "$cs" passthrough passthrough sbrw_stats oltp_read_write "$MYPASS_PORT" "$mode" 8 ""
		measure rw "$cs" caching passthrough sbrw_stats oltp_read_write "$MYRW_PORT" "$mode" 8 "$MYRW_PORT"
	done
done
# Low-repeat reads on a cold cache: a fresh memcached and sidecar.
mc_start_memcached coldmem -m 512
role memcached
start_mycached mycold "$DB_PORT" --default-ttl 1h --binlog-user mycached --memcached "127.0.0.1:$COLDMEM_PORT"
for round in $(seq "$RW_ROUNDS"); do
	cs="point_select uniform #$round"
	measure rw "$cs" passthrough passthrough sbrw_stats oltp_point_select "$MYPASS_PORT" disable 8 "" --rand-type=uniform
	measure rw "$cs" cold passthrough sbrw_stats oltp_point_select "$MYCOLD_PORT" disable 8 "$MYCOLD_PORT" --rand-type=uniform
done
# What each sidecar decided about the shapes it saw, for the log.
for port in "$MYRW_PORT" "$MYCOLD_PORT"; do
	echo "  admission on :$port (SHOW MYCACHED QUERIES):"
	mc_sql "$port" -e "SHOW MYCACHED QUERIES" 2>&1 | head -12 | cut -c1-400 | sed 's/^/    /' || true
done
fi

# ---------------------------------------------------------------------------
WALL=$SECONDS
mkdir -p "$MC_ROOT/bench-out"
{
	echo "Run $(date -u +%Y-%m-%dT%H:%MZ), ${QUICK:+QUICK mode, }${BENCH_TIME}s per measurement, one run per cell (no repetitions),"
	echo "$(nproc) CPUs shared by every server and load generator; load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo "The machine is shared and noisy: ratios within one run are the signal, absolute numbers are not."
	echo "Wall time of the run: ${WALL}s. sbtest1 has $BENCH_ROWS rows; big has $HEAVY_ROWS; $DOCS_PER_SIZE documents per size."
	echo "Targets: direct = MariaDB, query-cache = MariaDB with query_cache_type=1, relay = io.Copy relay,"
	echo "passthrough = mycached --passthrough, l1 = mycached hits from its memory, memcached = mycached --cache-memory 0 (hits from memcached only),"
	echo "mycached = L1 + memcached (read/write mix; kv through its main listener), mycached-kv = the same mycached's kv-only listener. sysbench p50-p99.9 come from its histogram; its max from its report."
	echo "oltp_read_write counts transactions as ops (its queries/s are in the notes)."
	echo "Fleet (8): bounded and strict = one of two sidecars sharing memcached, each following the binlog, linked as peers (--peer-listen); strict-mc = the same without peers, on a memcached other sidecars share too (every hit reads memcached's generations); network = MariaDB and memcached behind relays holding every chunk ${NET_DELAY} each way."
	echo "Read/write cost (10): caching = a sidecar with L1, memcached and the binlog follower; cold = the same on a fresh memcached, for reads over $((4 * RW_ROWS)) rows with uniform keys."
	echo "Staleness (9): ops are direct writes seen through a sidecar; the latency is from the write's OK to the first read through that sidecar that showed it."
	if ! "$BENCH" help 2>&1 | grep -q 'mycached-bench kv'; then
		echo "Scenario 7 (kv) was not run: this mycached-bench has no kv command yet."
	fi
} >"$MC_TMP/header.md"
cp "$RESULTS" "$MC_ROOT/bench-out/results.jsonl"
"$BENCH" report -in "$RESULTS" -header "$MC_TMP/header.md" -out "$MC_ROOT/bench-out/report.md" \
	-png "$MC_ROOT/bench-out/report.png" | sed -n '1,/^## Response-time histograms/p'
echo "== report: bench-out/report.md, chart: bench-out/report.png, histograms in the report; ${WALL}s"
