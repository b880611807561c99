#!/usr/bin/env bash
# demo.sh (make demo): mycached end to end on throwaway servers. It starts
# a private MariaDB and memcached, puts mycached in front, runs the
# transparent-caching example against MariaDB directly and then through
# mycached, shows a write invalidating a cached read, and tears it all
# down. Needs bin/mycached and bin/transparent-caching (make demo builds
# them).
set -euo pipefail
MC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$MC_ROOT/examples/bench/lib.sh"

SECONDS_PER_RUN=${DEMO_SECONDS:-5}
THREADS=${DEMO_THREADS:-4}
APP=$MC_ROOT/bin/transparent-caching
[[ -x $APP && -x $MC_ROOT/bin/mycached ]] || mc_die "build first: make build && go build -o bin/transparent-caching ./examples/transparent-caching"

if [[ -t 1 ]]; then
	step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	step() { printf '\n== %s\n' "$*"; }
fi

mc_init demo
step "Starting a throwaway MariaDB, memcached and mycached (in $MC_TMP)"
mc_start_mariadb db
mc_start_memcached memcached
ADMIN_PORT=$(mc_free_port)
# mycached follows MariaDB's binlog as the account lib.sh created for it,
# so writes that bypass it invalidate too.
export MYCACHED_BINLOG_PASSWORD=$MC_BINLOG_PASSWORD
mc_start_mycached mycached "$DB_PORT" --memcached "127.0.0.1:$MEMCACHED_PORT" --admin "127.0.0.1:$ADMIN_PORT" \
	--binlog-user mycached
echo "MariaDB    127.0.0.1:$DB_PORT"
echo "memcached  127.0.0.1:$MEMCACHED_PORT"
echo "mycached   127.0.0.1:$MYCACHED_PORT  (admin, /metrics: http://127.0.0.1:$ADMIN_PORT/metrics)"

dsn() { echo "root:$MC_ROOT_PASSWORD@tcp(127.0.0.1:$1)/shop?interpolateParams=true"; }

step "Loading the example schema (products, inventory, customers, orders)"
mc_sql "$DB_PORT" -e "CREATE DATABASE shop"
"$APP" -dsn "$(dsn "$DB_PORT")" -setup -duration 0

run_app() {
	"$APP" -dsn "$(dsn "$1")" -duration "${SECONDS_PER_RUN}s" -threads "$THREADS" | tee "$MC_TMP/$2.out"
}
step "Workload for ${SECONDS_PER_RUN}s, $THREADS clients, directly against MariaDB"
run_app "$DB_PORT" direct
step "The same workload through mycached (only the DSN's port changed)"
run_app "$MYCACHED_PORT" cached

# field NAME FILE prints NAME=value from the example's total line.
field() { sed -n "s/^total:.* $1=\([^ ]*\).*/\1/p" "$2" | tr -d '/s'; }
field_ms() { sed -n "s/^total:.* $1=\([0-9.]*\)ms.*/\1/p" "$2"; }
hit_ratio=$(sed -n 's/^cache:.*hit_ratio=\([0-9.]*%\).*/\1/p' "$MC_TMP/cached.out")

step "Summary"
printf '%-18s %14s %12s %12s\n' "" "requests/s" "p50" "p99"
for run in direct cached; do
	label=$([[ $run == direct ]] && echo "MariaDB direct" || echo "through mycached")
	printf '%-18s %14s %10sms %10sms\n' "$label" "$(field rate "$MC_TMP/$run.out")" \
		"$(field_ms p50 "$MC_TMP/$run.out")" "$(field_ms p99 "$MC_TMP/$run.out")"
done
awk -v a="$(field rate "$MC_TMP/direct.out")" -v b="$(field rate "$MC_TMP/cached.out")" \
	'BEGIN { if (a > 0) printf "speedup: %.1fx the requests per second; cache hit ratio %s\n", b / a, "'"$hit_ratio"'" }'
echo "stale reads after writes (each client reads back every stock it wrote): $(field stale "$MC_TMP/cached.out")"

step "A write invalidates: read, read (a cache hit), UPDATE, read again through mycached"
through() { mc_sql "$MYCACHED_PORT" shop "$@"; }
hits() { through -N -B -e "SHOW MYCACHED STATUS" | awk '$1 == "Hits_l1" || $1 == "Hits_memcached" { n += $2 } END { print n }'; }
q="SELECT product_id, qty FROM inventory WHERE product_id = 7"
# cached_read reads q until a read is a hit and says so. A write's
# generations are bumped again once it has settled (about 100 ms after
# its commit, from the binlog), which can turn the first read after it
# into a miss.
cached_read() {
	local h0 h1
	for _ in $(seq 50); do
		h0=$(hits)
		through -t -e "$q" >"$MC_TMP/read.out"
		h1=$(hits)
		((h1 > h0)) && break
		sleep 0.1
	done
	[[ $1 == show ]] && cat "$MC_TMP/read.out"
	if ((h1 > h0)); then
		echo "($2: hits $h0 -> $h1)"
	else
		echo "(not served from the cache: hits $h0 -> $h1)"
	fi
}
echo "mysql> $q"
through -t -e "$q"
cached_read show "a read was served from the cache"
echo "mysql> UPDATE inventory SET qty = 4242 WHERE product_id = 7"
through -e "UPDATE inventory SET qty = 4242 WHERE product_id = 7"
echo "mysql> $q"
through -t -e "$q"
echo "(the new value: the UPDATE by primary key bumped that row's generation, so the cached row was not served)"

step "A write that bypasses mycached invalidates too: the binlog follower sees it"
through -t -e "$q" >/dev/null
cached_read quiet "cached again"
echo "mysql (directly to MariaDB, port $DB_PORT)> UPDATE inventory SET qty = 777 WHERE product_id = 7"
mc_sql "$DB_PORT" shop -e "UPDATE inventory SET qty = 777 WHERE product_id = 7"
# The follower applies a transaction within milliseconds; wait for it
# rather than guess.
for _ in $(seq 100); do
	[[ $(through -N -B -e "$q" | awk '{ print $2 }') == 777 ]] && break
	sleep 0.05
done
echo "mysql> $q"
through -t -e "$q"
echo "(the new value: mycached read the row's change from the binlog and bumped its generation)"

step "SHOW MYCACHED STATUS (any client, as an --admin-users user)"
through -t -e "SHOW MYCACHED STATUS"
if command -v curl >/dev/null; then
	echo "curl -s http://127.0.0.1:$ADMIN_PORT/metrics | grep -E '^mycached_cache_(hits|misses|stores)_total':"
	curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep -E '^mycached_cache_(hits|misses|stores)_total' || true
fi

step "Tearing down"
