#!/usr/bin/env bash
# run.sh: compile the Hibernate example, start a private MariaDB (with a
# ROW binlog), a memcached and two mycached sidecars following it (see
# SIDECARS below), run the workload three ways (no second-level cache,
# Ehcache, mycached), and print a table. Every process it starts is recorded by
# PID, and only those are killed on exit.
#
#   examples/hibernate-2lc/run.sh            # the full run
#   READS=5000 UPDATES=20 examples/hibernate-2lc/run.sh
#   KEEP=1 examples/hibernate-2lc/run.sh     # keep the temp dir and logs
#   SIDECARS=1 examples/hibernate-2lc/run.sh # one sidecar, no memcached
#   JDBC_OPTS='&useServerPrepStmts=true' examples/hibernate-2lc/run.sh
#
# Needs: javac/java (JDK 17), MariaDB server and client, Go, and the
# Debian packages libhibernate3-java libmariadb-java libjavassist-java
# libehcache-java libslf4j-java (`make deps` installs them).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
READS=${READS:-20000}
UPDATES=${UPDATES:-50}
JARDIR=${JARDIR:-/usr/share/java}
PASSWORD=shop-pw
# The sidecars' binlog follower logs in as mycached: it sees writes that
# bypass them, and learns the tables' primary keys for row-level
# invalidation.
BINLOG_PASSWORD=binlog-pw

die() { echo "run.sh: $*" >&2; exit 1; }

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hibernate-2lc.XXXXXX")
cleanup() {
	local i pid
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [[ -z ${KEEP:-} ]]; then rm -rf "$TMP"; else echo "run.sh: kept $TMP" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bin NAME finds NAME on PATH or in the sbin dirs a non-login PATH lacks.
bin() {
	local d
	if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
	for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
		if [[ -x $d/$1 ]]; then echo "$d/$1"; return; fi
	done
	die "$1 not found; run 'make deps' as root to install it"
}

# free_port prints a port nothing listens on, below the ephemeral range.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((10000 + RANDOM % 22000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
	done
	die "no free port found"
}

# wait_port PORT PID LOG waits until PORT accepts connections.
wait_port() {
	for _ in $(seq 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		kill -0 "$2" 2>/dev/null || { tail -n 20 "$3" >&2; die "process $2 exited before listening on $1"; }
		sleep 0.1
	done
	tail -n 20 "$3" >&2
	die "nothing listening on $1 after 30s"
}

# --- compile -------------------------------------------------------------
JAVAC=$(bin javac)
JAVA=$(bin java)
# Hibernate 3.6 and what it needs at run time, as Debian ships them.
JARS=(hibernate3 antlr commons-collections3 dom4j geronimo-jpa_2.0_spec geronimo-jta-1.2-spec
	hibernate-commons-annotations javassist slf4j-api slf4j-nop mariadb-java-client
	ehcache-core hibernate-ehcache)
CP=
for j in "${JARS[@]}"; do
	[[ -f $JARDIR/$j.jar ]] || die "$JARDIR/$j.jar missing; install libhibernate3-java libmariadb-java libjavassist-java libehcache-java libslf4j-java (make deps)"
	CP+=${CP:+:}$JARDIR/$j.jar
done
mkdir -p "$TMP/classes"
"$JAVAC" -nowarn -encoding UTF-8 -d "$TMP/classes" -cp "$CP" "$HERE"/src/shop/*.java
cp "$HERE"/resources/*.xml "$TMP/classes/"
CP=$TMP/classes:$CP

if [[ -n ${MYCACHED_BIN:-} ]]; then
	MYCACHED=$MYCACHED_BIN
else
	MYCACHED=$TMP/mycached
	(cd "$ROOT" && go build -o "$MYCACHED" ./cmd/mycached)
fi

# --- MariaDB -------------------------------------------------------------
user=()
if [[ $(id -u) -eq 0 ]]; then user=(--user=root); fi
mkdir -p "$TMP/db/tmp"
"$(bin mariadb-install-db)" --no-defaults --auth-root-authentication-method=normal --skip-test-db \
	--skip-name-resolve "${user[@]}" --datadir="$TMP/db/data" >"$TMP/db/install.log" 2>&1 ||
	{ tail -n 20 "$TMP/db/install.log" >&2; die "mariadb-install-db failed"; }
DB_PORT=$(free_port)
DB_SOCK=$TMP/db/mariadbd.sock
"$(bin mariadbd)" --no-defaults --datadir="$TMP/db/data" --socket="$DB_SOCK" --port="$DB_PORT" \
	--bind-address=127.0.0.1 --skip-name-resolve --pid-file="$TMP/db/mariadbd.pid" \
	--log-error="$TMP/db/error.log" --tmpdir="$TMP/db/tmp" \
	--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
	--innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
	--log-bin="$TMP/db/data/mariadb-bin" --binlog-format=ROW --binlog-row-metadata=FULL --server-id=1 --sync-binlog=0 \
	"${user[@]}" >"$TMP/db/mariadbd.out" 2>&1 &
PIDS+=($!)
wait_port "$DB_PORT" "$!" "$TMP/db/error.log"
# mycached relays authentication; mysql_native_password works through it.
"$(bin mariadb)" --no-defaults -S "$DB_SOCK" -uroot <<SQL || die "bootstrap failed"
CREATE DATABASE shop;
CREATE USER 'shop'@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('$PASSWORD');
GRANT ALL PRIVILEGES ON shop.* TO 'shop'@'127.0.0.1';
CREATE USER 'mycached'@'127.0.0.1' IDENTIFIED BY '$BINLOG_PASSWORD';
GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT, SHOW VIEW ON *.* TO 'mycached'@'127.0.0.1';
SQL
"$(bin mariadb)" --no-defaults -S "$DB_SOCK" -uroot shop <"$HERE/schema.sql" || die "schema failed"

# --- mycached ------------------------------------------------------------
# By default, two sidecars, one per application server, sharing one
# memcached: the deployment in which a cache must stay coherent across
# servers. SIDECARS=1 runs one sidecar with only its in-process cache, which
# both application servers share.
SIDECARS=${SIDECARS:-2}
mc_args=()
if [[ $SIDECARS == 2 ]]; then
	MEMCACHED_PORT=$(free_port)
	mc_user=()
	if [[ $(id -u) -eq 0 ]]; then mc_user=(-u root); fi
	"$(bin memcached)" -l 127.0.0.1 -p "$MEMCACHED_PORT" -U 0 -m 64 "${mc_user[@]}" >"$TMP/memcached.log" 2>&1 &
	PIDS+=($!)
	wait_port "$MEMCACHED_PORT" "$!" "$TMP/memcached.log"
	mc_args=(--memcached "127.0.0.1:$MEMCACHED_PORT")
elif [[ $SIDECARS != 1 ]]; then
	die "SIDECARS must be 1 or 2"
fi
start_mycached() {
	local port
	port=$(free_port)
	MYCACHED_BINLOG_PASSWORD=$BINLOG_PASSWORD "$MYCACHED" --listen "127.0.0.1:$port" \
		--backend "127.0.0.1:$DB_PORT" --backend-tls off --binlog-user mycached \
		"${mc_args[@]}" --log-level warn >"$TMP/mycached-$1.log" 2>&1 &
	PIDS+=($!)
	wait_port "$port" "$!" "$TMP/mycached-$1.log"
	printf -v "MC_PORT_${1^^}" %s "$port"
}
start_mycached a
if [[ $SIDECARS == 2 ]]; then start_mycached b; else MC_PORT_B=$MC_PORT_A; fi

# --- the three runs ------------------------------------------------------
# JDBC_OPTS adds Connector/J options, e.g. JDBC_OPTS='&useServerPrepStmts=true'.
url() { echo "jdbc:mariadb://127.0.0.1:$1/shop?user=shop&password=$PASSWORD${JDBC_OPTS:-}"; }
DIRECT=$(url "$DB_PORT")
status=0
for run in "nocache $DB_PORT $DB_PORT" "ehcache $DB_PORT $DB_PORT" "mycached $MC_PORT_A $MC_PORT_B"; do
	set -- $run
	echo "== $1 (server A -> 127.0.0.1:$2, server B -> 127.0.0.1:$3)"
	if ! "$JAVA" -cp "$CP" shop.Main "$1" "url=$(url "$2")" "url_b=$(url "$3")" "direct=$DIRECT" \
		"reads=$READS" "updates=$UPDATES" 2>&1 | tee "$TMP/$1.out"; then
		echo "run.sh: the $1 run failed" >&2
		status=1
	fi
done
for n in a b; do
	if [[ -s $TMP/mycached-$n.log ]]; then
		echo "== mycached $n log (warnings and errors)"
		cat "$TMP/mycached-$n.log"
	fi
done

# --- the table -----------------------------------------------------------
echo
printf '%-9s %8s %9s %9s %9s %12s %12s %16s %18s %8s %10s\n' run loads avg_us p50_us p99_us \
	query_avg_us query_p50_us com_select_read com_select_update stale stale_B
for m in nocache ehcache mycached; do
	line=$(grep -h '^RESULT ' "$TMP/$m.out" 2>/dev/null || true)
	if [[ -z $line ]]; then printf '%-9s (no result)\n' "$m"; continue; fi
	get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
	printf '%-9s %8s %9s %9s %9s %12s %12s %16s %18s %8s %10s\n' "$m" "$(get loads)" "$(get avg_us)" \
		"$(get p50_us)" "$(get p99_us)" "$(get query_avg_us)" "$(get query_p50_us)" "$(get com_select_read)" \
		"$(get com_select_update)" "$(get stale)/$(get checks)" "$(get stale_other)/$(get checks_other)"
done
exit $status
