#!/usr/bin/env bash
# run.sh runs other projects' MySQL test suites directly against a private
# MariaDB and through mycached, and reports every test that passes directly
# but not through mycached. See README.md beside it.
#
#   run.sh [all]      both suites (make test-peers)
#   run.sh mtr        MariaDB's mysql-test-run over mtr-tests.txt (make test-mtr)
#   run.sh driver     go-sql-driver/mysql's own tests (make test-driver)
#   run.sh discover   which mtr candidates pass directly: peer-out/mtr-discovered.txt
#
# PEER_MODES (default "direct mycached passthrough") picks the targets;
# direct must be among them. MTR_TESTS="main.a main.b" runs only those
# tests; DRIVER_RUN (a go test -run pattern) runs only those driver tests,
# and DRIVER_SKIP ("TestA|TestB") skips those.
# MYCACHED names the binary; by default this checkout is built. Logs go to
# peer-out/ (PEER_OUT). Exit status 1 means a difference.
set -euo pipefail

MC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$MC_ROOT/examples/peer-suites
# shellcheck source=../bench/lib.sh
source "$MC_ROOT/examples/bench/lib.sh"

MTR_DIR=${MTR_DIR:-/usr/share/mysql/mysql-test}
MTR_LIST=${MTR_LIST:-$HERE/mtr-tests.txt}
PEER_MODES=${PEER_MODES:-direct mycached passthrough}
OUT=${PEER_OUT:-$MC_ROOT/peer-out}
# The test of the driver's suite that dials a non-loopback address
# (1.1.1.1) is never run; DRIVER_SKIP ("TestA|TestB") names more to skip.
DRIVER_NEVER=TestConnectorReturnsTimeout
# The password of the account mycached follows the binlog with.
PEER_BINLOG_PASSWORD=peer-binlog

# ---- servers -------------------------------------------------------------

# peer_bootstrap makes the datadir template the way mariadb-test-run.pl
# installs its own servers' (mysql_install_db in it): the system tables,
# the time zone test data, databases test and mtr, no anonymous users, and
# mtr's check_testcase procedures, which it calls around every test.
peer_bootstrap() {
	local share sql=$MC_TMP/bootstrap.sql
	share=$(dirname "$(find /usr/share/mysql /usr/share/mariadb -name mysql_system_tables.sql 2>/dev/null | head -n 1)")
	[[ -f $share/mysql_system_tables.sql ]] || mc_die "mysql_system_tables.sql not found; install mariadb-server"
	{
		echo "use mysql;"
		cat "$share"/{mysql_system_tables,maria_add_gis_sp_bootstrap,mysql_performance_tables}.sql
		cat "$share"/{mysql_system_tables_data,mysql_test_data_timezone,fill_help_tables,mysql_sys_schema}.sql
		echo "CREATE DATABASE IF NOT EXISTS test CHARACTER SET latin1 COLLATE latin1_swedish_ci;"
		echo "ALTER TABLE gtid_slave_pos ENGINE=Aria transactional=0;"
		echo "DELETE FROM mysql.global_priv where user= '';"
		echo "CREATE DATABASE mtr CHARSET=latin1;"
		peer_sql_to_bootstrap "$MTR_DIR/include/mtr_warnings.sql"
		peer_sql_to_bootstrap "$MTR_DIR/include/mtr_check.sql"
	} >"$sql"
	mkdir -p "$MC_TMP/template/mysql" "$MC_TMP/boot-tmp"
	"$(mc_bin mariadbd)" --no-defaults --disable-getopt-prefix-matching --bootstrap \
		--datadir="$MC_TMP/template" --tmpdir="$MC_TMP/boot-tmp" --default-storage-engine=myisam \
		--loose-innodb --innodb-log-file-size=10M --character-set-server=latin1 \
		--loose-disable-performance-schema --user=root <"$sql" >"$MC_TMP/bootstrap.log" 2>&1 ||
		{ tail -n 20 "$MC_TMP/bootstrap.log" >&2; mc_die "mariadbd --bootstrap failed"; }
}

# peer_sql_to_bootstrap FILE converts one of mtr's mysqltest-syntax SQL
# files for --bootstrap, as mariadb-test-run.pl's sql_to_bootstrap does:
# the delimiter becomes ";", and comment lines go.
peer_sql_to_bootstrap() {
	perl -ne '
		BEGIN { $d = ";"; print "\n" }
		s/\R$//;
		if (/^delimiter (.*)/) { ($n = $1) =~ s/\Q$d\E$//; $d = $n; next }
		if (/\Q$d\E$/) { s/\Q$d\E$/;/; print "$_\n"; next }
		next if /^\s*--/;
		s/\x27\@HOSTNAME\@\x27/localhost/;
		print "$_ ";
	' "$1"
}

# peer_start_mariadb NAME PROFILE VARDIR starts a fresh copy of the
# template and sets NAME_PORT. Profile mtr has the [mysqld] settings of
# mtr's include/default_mysqld.cnf, and VARDIR is laid out as mtr lays out
# its own server's: the datadir is VARDIR/mysqld.1/data, the error log
# VARDIR/log/mysqld.1.err, and so on, for tests that read or write files
# there (the server's secure-file-priv is VARDIR). Profile plain is a
# default server with room for large packets and many connections, as the
# driver's suite expects. Both write a ROW binlog.
peer_start_mariadb() {
	local name=$1 profile=$2 var=$3 port cnf data dir
	port=$(mc_free_port)
	if [[ $profile == mtr ]]; then
		dir=$var
		data=$var/mysqld.1/data
		mkdir -p "$var"/{log,run,tmp,mysqld.1}
		cp -r "$MTR_DIR/std_data" "$var/std_data"
		cnf=$var/my-server.cnf
		sed -e "s|@ENV.MYSQLTEST_VARDIR|$var|g" -e "s|@ENV.MYSQL_TEST_DIR|$MTR_DIR|g" \
			"$MTR_DIR/include/default_mysqld.cnf" | sed -n '/^\[mysqld\]/,/^\[embedded\]/p' | grep -v '^\[embedded\]' >"$cnf"
		cat >>"$cnf" <<-EOF
			tmpdir=$var/tmp
			socket=$var/tmp/mysqld.1.sock
			pid-file=$var/run/mysqld.1.pid
			log-error=$var/log/mysqld.1.err
			general-log=1
			general-log-file=$var/mysqld.1/mysqld.log
			slow-query-log=1
			slow-query-log-file=$var/mysqld.1/mysqld-slow.log
			log-output=file
			max-connections=500
		EOF
	else
		dir=$MC_TMP/$name
		data=$dir/data
		mkdir -p "$dir/tmp"
		cnf=$dir/my.cnf
		cat >"$cnf" <<-EOF
			[mysqld]
			max-allowed-packet=256M
			local-infile=1
			max-connections=1000
			innodb-buffer-pool-size=128M
			innodb-log-file-size=48M
			innodb-flush-log-at-trx-commit=2
			ssl-ca=$MTR_DIR/std_data/cacert.pem
			ssl-cert=$MTR_DIR/std_data/server-cert.pem
			ssl-key=$MTR_DIR/std_data/server-key.pem
			tmpdir=$dir/tmp
			socket=$dir/mysqld.sock
			pid-file=$dir/mysqld.pid
			log-error=$dir/error.log
		EOF
	fi
	cp -a "$MC_TMP/template" "$data"
	cat >>"$cnf" <<-EOF
		datadir=$data
		port=$port
		bind-address=127.0.0.1
		server-id=1
		log-bin=mysqld-bin
		binlog-format=ROW
	EOF
	if [[ $profile == mtr ]]; then printf '[server]\nloose-aria\n' >>"$cnf"; fi
	"$(mc_bin mariadbd)" --defaults-file="$cnf" --user=root >"$dir/mariadbd.out" 2>&1 &
	MC_PIDS+=($!)
	mc_wait_port "$port" "$!" "$(sed -n 's/^log-error=//p' "$cnf")"
	printf -v "${name^^}_PORT" %s "$port"
}

# peer_stop_from N kills the processes started since MC_PIDS had N
# entries, newest first, so that each target's servers go before the next
# target's start.
peer_stop_from() {
	local n=$1 i pid
	for ((i = ${#MC_PIDS[@]} - 1; i >= n; i--)); do
		pid=${MC_PIDS[i]}
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	MC_PIDS=("${MC_PIDS[@]:0:n}")
}

# peer_start_mycached NAME BACKEND_PORT [mycached args...] starts $MYCACHED
# in front of the MariaDB on BACKEND_PORT and sets NAME_PORT. It keeps the
# default --backend-tls (TLS to the server, as a client that asks for TLS
# has directly) and has the server's certificate (mtr's std_data), so that
# a client that asks for TLS gets it, as it does from the server.
peer_start_mycached() {
	local name=$1 backend=$2 port
	shift 2
	port=$(mc_free_port)
	"$MYCACHED" --listen "127.0.0.1:$port" --backend "127.0.0.1:$backend" \
		--tls-cert "$MTR_DIR/std_data/server-cert.pem" --tls-key "$MTR_DIR/std_data/server-key.pem" \
		--log-level warn "$@" >"$MC_TMP/$name.log" 2>&1 &
	MC_PIDS+=($!)
	mc_wait_port "$port" "$!" "$MC_TMP/$name.log"
	printf -v "${name^^}_PORT" %s "$port"
}

# peer_target MODE PROFILE VARDIR starts a MariaDB and, unless MODE is
# direct, a mycached in front of it (mycached: L1 plus a private memcached,
# default policy, following the binlog as deployed; passthrough:
# --passthrough), and sets TARGET_PORT to the port clients use.
peer_target() {
	local mode=$1 profile=$2 var=$3
	peer_start_mariadb "db_$mode" "$profile" "$var"
	local db_port_var=DB_${mode^^}_PORT
	# The account mycached follows the binlog with, on every target, so
	# that the accounts a test lists are the same everywhere.
	"$(mc_bin mariadb)" --no-defaults -h 127.0.0.1 -P "${!db_port_var}" -uroot -e "
		CREATE USER 'mycached'@'127.0.0.1' IDENTIFIED BY '$PEER_BINLOG_PASSWORD';
		GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT, SHOW VIEW ON *.* TO 'mycached'@'127.0.0.1';
		RESET MASTER;" || mc_die "creating the binlog account failed"
	TARGET_DB_PORT=${!db_port_var}
	case $mode in
	direct) TARGET_PORT=${!db_port_var} ;;
	mycached)
		mc_start_memcached "mc_$mode"
		local mc_port_var=MC_${mode^^}_PORT
		MYCACHED_BINLOG_PASSWORD=$PEER_BINLOG_PASSWORD peer_start_mycached "proxy_$mode" "${!db_port_var}" \
			--memcached "127.0.0.1:${!mc_port_var}" --binlog-user mycached
		local p=PROXY_${mode^^}_PORT
		TARGET_PORT=${!p}
		# Tests count the server's sessions at their start and wait for
		# the count to fall back at their end: the follower's sessions
		# must be there before the first test, as they are on a sidecar
		# that has been running.
		local i
		for ((i = 0; i < 300; i++)); do
			[[ $("$(mc_bin mariadb)" --no-defaults -h 127.0.0.1 -P "${!db_port_var}" -uroot -N -B -e \
				"SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'mycached' AND command LIKE 'Binlog Dump%'") -ge 1 ]] && break
			sleep 0.1
		done
		((i < 300)) || mc_die "mycached's binlog follower did not connect (see $MC_TMP/proxy_$mode.log)"
		;;
	passthrough)
		peer_start_mycached "proxy_$mode" "${!db_port_var}" --passthrough
		local p=PROXY_${mode^^}_PORT
		TARGET_PORT=${!p}
		;;
	*) mc_die "unknown mode $mode (direct, mycached, passthrough)" ;;
	esac
}

# ---- mysql-test-run ------------------------------------------------------

# peer_mtr_tests prints the tests to run: MTR_TESTS, or the list file
# without comments.
peer_mtr_tests() {
	if [[ -n ${MTR_TESTS:-} ]]; then
		tr ' ' '\n' <<<"$MTR_TESTS" | grep .
	else
		grep -v '^\s*#' "$MTR_LIST" | awk 'NF { print $1 }'
	fi
}

# peer_mtr_run MODE TESTFILE TAG runs mtr over TESTFILE against MODE's
# target and writes mtr's output to $OUT/mtr-TAG.log and "test result"
# lines to $OUT/mtr-TAG.results. mtr cannot restart an external server, so
# a failed test's leftovers (tables, users, procedures) would fail the
# tests after it; as mtr does with its own servers after a failure, the
# rest of the tests run on a fresh target after each failure
# (--max-test-fail=1 stops mtr there).
peer_mtr_run() {
	local mode=$1 tests=$2 tag=$3 n=${#MC_PIDS[@]} var start sock left=$MC_TMP/left-$3 round=0 log
	start=$SECONDS
	cp "$tests" "$left"
	: >"$OUT/mtr-$tag.log"
	: >"$OUT/mtr-$tag.results"
	echo "mtr: $(wc -l <"$tests") tests, $tag..."
	while [[ -s $left ]]; do
		round=$((round + 1))
		PEER_RUNS=$((PEER_RUNS + 1))
		var=$MC_TMP/var-$PEER_RUNS
		log=$MC_TMP/mtr-$PEER_RUNS.log
		peer_target "$mode" mtr "$var"
		sock=$var/tmp/mysqld.1.sock
		# Every client of the tests (mysqltest, and the mariadb,
		# mariadb-dump, ... that tests run) reads [client] of the file mtr
		# writes from the --extern options, so all connect over TCP to
		# TARGET_PORT. mtr's exit status only says that a test failed; the
		# results are read from its report lines.
		(cd "$MTR_DIR" && MASTER_MYPORT=$TARGET_PORT MASTER_MYSOCK=$sock perl ./mariadb-test-run.pl \
			--extern host=127.0.0.1 --extern port="$TARGET_PORT" --extern protocol=tcp --extern user=root \
			--vardir="$var" --force --max-test-fail=1 --retry=0 --parallel=1 \
			--testcase-timeout=2 --suite-timeout=600 \
			$(cat "$left")) >"$log" 2>&1 </dev/null || true
		peer_stop_from "$n"
		cat "$log" >>"$OUT/mtr-$tag.log"
		# Report lines look like "main.alias    [ pass ]   12" or
		# "main.x  'innodb'  [ skipped ]  reason".
		sed -nE 's/^(main\.[^ ]+)( +[^[]*)? +\[ ([a-z]+) \].*/\1 \3/p' "$log" >>"$OUT/mtr-$tag.results"
		sort -u -k1,1 -o "$OUT/mtr-$tag.results" "$OUT/mtr-$tag.results"
		awk 'NR == FNR { done[$1] = 1; next } !($1 in done)' "$OUT/mtr-$tag.results" "$left" >"$left.next"
		if cmp -s "$left" "$left.next"; then
			# No test reported: mtr itself failed. The tests left have no
			# result, and count as missing.
			tail -n 20 "$log" >&2
			echo "mtr: $tag: mtr stopped with $(wc -l <"$left") tests left unrun (log: $OUT/mtr-$tag.log)" >&2
			break
		fi
		mv "$left.next" "$left"
	done
	echo "mtr: $tag took $((SECONDS - start))s, $round targets"
}

# peer_result FILE TEST prints TEST's result in a results file, or missing.
peer_result() {
	local r
	r=$(awk -v t="$2" '$1 == t { print $2 }' "$1" 2>/dev/null)
	echo "${r:-missing}"
}

# peer_mtr_excerpt TAG TEST prints mtr's report of TEST's failure.
peer_mtr_excerpt() {
	awk -v t="$2" '
		index($0, t " ") == 1 { on = 1 }
		on && /^main\./ && index($0, t " ") != 1 { exit }
		on && n++ < 60 { print "    " $0 }
	' "$OUT/mtr-$1.log"
}

peer_mtr() {
	local tests=$MC_TMP/mtr-tests mode diffs=0 t r d
	peer_mtr_tests | sed 's/^\(main\.\)\?/main./' >"$tests"
	[[ -s $tests ]] || mc_die "no mtr tests listed"
	[[ -f $MTR_DIR/mariadb-test-run.pl ]] || mc_die "$MTR_DIR/mariadb-test-run.pl not found; install mariadb-test"
	peer_bootstrap
	for mode in $PEER_MODES; do peer_mtr_run "$mode" "$tests" "$mode"; done

	: >"$OUT/mtr-differences.txt"
	while read -r t; do
		[[ $(peer_result "$OUT/mtr-direct.results" "$t") == pass ]] || continue
		for mode in $PEER_MODES; do
			if [[ $mode != direct && $(peer_result "$OUT/mtr-$mode.results" "$t") != pass ]]; then
				echo "$t $mode" >>"$OUT/mtr-differences.txt"
			fi
		done
	done <"$tests"
	# One line per test: its result on each target, and DIFF where it
	# passed directly and not through mycached.
	printf '\n%-48s' "mtr test"
	for mode in $PEER_MODES; do printf ' %-11s' "$mode"; done
	printf '\n'
	while read -r t; do
		printf '%-48s' "$t"
		d=
		for mode in $PEER_MODES; do
			r=$(peer_result "$OUT/mtr-$mode.results" "$t")
			if grep -qx "$t $mode" "$OUT/mtr-differences.txt"; then d=1; fi
			printf ' %-11s' "$r"
		done
		if [[ -n $d ]]; then printf '  DIFF'; diffs=$((diffs + 1)); fi
		printf '\n'
	done <"$tests"
	echo
	while read -r t mode; do
		echo "== $t: passes directly, $(peer_result "$OUT/mtr-$mode.results" "$t") through $mode"
		peer_mtr_excerpt "$mode" "$t"
	done <"$OUT/mtr-differences.txt"
	for mode in $PEER_MODES; do
		printf 'mtr %s: %s passed, %s failed, %s skipped\n' "$mode" \
			"$(grep -c ' pass$' "$OUT/mtr-$mode.results" || true)" \
			"$(grep -vc -e ' pass$' -e ' skipped$' -e ' disabled$' "$OUT/mtr-$mode.results" || true)" \
			"$(grep -c -e ' skipped$' -e ' disabled$' "$OUT/mtr-$mode.results" || true)"
	done
	echo "mtr: $diffs tests pass directly and fail through mycached (logs: $OUT/mtr-*.log)"
	MTR_DIFFS=$diffs
}

# peer_discover finds which candidates (mtr-candidates.pl) pass directly:
# it runs them all, then runs those that passed again, on a fresh server,
# so that none passed only thanks to what a test before it left, and
# writes those that passed twice to $OUT/mtr-discovered.txt.
peer_discover() {
	local tests=$MC_TMP/mtr-tests
	[[ -f $MTR_DIR/mariadb-test-run.pl ]] || mc_die "$MTR_DIR/mariadb-test-run.pl not found; install mariadb-test"
	perl "$HERE/mtr-candidates.pl" "$MTR_DIR" | sed 's/^/main./' >"$tests"
	peer_bootstrap
	peer_mtr_run direct "$tests" discover-1
	awk '$2 == "pass" { print $1 }' "$OUT/mtr-discover-1.results" >"$MC_TMP/passed-1"
	peer_mtr_run direct "$MC_TMP/passed-1" discover-2
	awk '$2 == "pass" { sub(/^main\./, "", $1); print $1 }' "$OUT/mtr-discover-2.results" >"$OUT/mtr-discovered.txt"
	echo "discover: $(wc -l <"$OUT/mtr-discovered.txt") of $(wc -l <"$tests") candidates passed directly twice: $OUT/mtr-discovered.txt"
}

# ---- go-sql-driver/mysql -------------------------------------------------

# peer_driver_run MODE runs the driver's tests (go test -v) against a fresh
# target and writes "Test result" lines to $OUT/driver-MODE.results.
peer_driver_run() {
	local mode=$1 n=${#MC_PIDS[@]} start
	peer_target "$mode" plain ""
	"$(mc_bin mariadb)" --no-defaults -h 127.0.0.1 -P "$TARGET_DB_PORT" -uroot -e "CREATE DATABASE gotest"
	start=$SECONDS
	echo "driver: $mode (port $TARGET_PORT)..."
	(cd "$MC_ROOT" && MYSQL_TEST_USER=root MYSQL_TEST_PASS= MYSQL_TEST_PROT=tcp \
		MYSQL_TEST_ADDR="127.0.0.1:$TARGET_PORT" MYSQL_TEST_DBNAME=gotest MYSQL_TEST_CONCURRENT=1 \
		go test -count=1 -v -timeout 15m -run "${DRIVER_RUN:-.}" \
		-skip "^($DRIVER_NEVER${DRIVER_SKIP:+|$DRIVER_SKIP})\$" github.com/go-sql-driver/mysql) \
		>"$OUT/driver-$mode.log" 2>&1 </dev/null || true
	# Top-level results only: subtests are reported within their parent.
	sed -nE 's/^--- (PASS|FAIL|SKIP): (Test[^ /]+) .*/\2 \1/p' "$OUT/driver-$mode.log" |
		awk '{ print $1, tolower($2) }' | sort -u -k1,1 >"$OUT/driver-$mode.results"
	echo "driver: $mode took $((SECONDS - start))s"
	peer_stop_from "$n"
}

# peer_driver_excerpt MODE TEST prints the go test -v output of TEST and
# its subtests. Parallel tests interleave; go test names the test before
# each switch (=== RUN, CONT, NAME, PAUSE), which tells whose a line is.
peer_driver_excerpt() {
	awk -v t="$2" '
		function ours(n) { return n == t || index(n, t "/") == 1 }
		/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
		/^ *--- (PASS|FAIL|SKIP): / { if (ours($3) && n++ < 60) print "    " $0; next }
		ours(cur) && n++ < 60 { print "    " $0 }
	' "$OUT/driver-$1.log"
}

peer_driver() {
	local mode diffs=0 t r d
	command -v go >/dev/null || mc_die "go not found"
	[[ -d $MC_TMP/template ]] || peer_bootstrap
	for mode in $PEER_MODES; do peer_driver_run "$mode"; done
	printf '\n%-48s' "driver test"
	for mode in $PEER_MODES; do printf ' %-11s' "$mode"; done
	printf '\n'
	: >"$OUT/driver-differences.txt"
	while read -r t _; do
		printf '%-48s' "$t"
		d=
		for mode in $PEER_MODES; do
			r=$(awk -v t="$t" '$1 == t { print $2 }' "$OUT/driver-$mode.results")
			r=${r:-missing}
			printf ' %-11s' "$r"
			if [[ $mode != direct && $r != pass && $(awk -v t="$t" '$1 == t { print $2 }' "$OUT/driver-direct.results") == pass ]]; then
				d+=" $mode"
				echo "$t $mode" >>"$OUT/driver-differences.txt"
			fi
		done
		if [[ -n $d ]]; then printf '  DIFF'; diffs=$((diffs + 1)); fi
		printf '\n'
	done <"$OUT/driver-direct.results"
	echo
	while read -r t mode; do
		echo "== $t: passes directly, $(awk -v t="$t" '$1 == t { print $2 }' "$OUT/driver-$mode.results") through $mode"
		peer_driver_excerpt "$mode" "$t"
	done <"$OUT/driver-differences.txt"
	for mode in $PEER_MODES; do
		printf 'driver %s: %s passed, %s failed, %s skipped\n' "$mode" \
			"$(grep -c ' pass$' "$OUT/driver-$mode.results" || true)" \
			"$(grep -c ' fail$' "$OUT/driver-$mode.results" || true)" \
			"$(grep -c ' skip$' "$OUT/driver-$mode.results" || true)"
	done
	echo "driver: $diffs tests pass directly and fail through mycached (logs: $OUT/driver-*.log)"
	DRIVER_DIFFS=$diffs
}

# ---- main ----------------------------------------------------------------

what=${1:-all}
[[ " $PEER_MODES " == *" direct "* ]] || mc_die "PEER_MODES must include direct"
mkdir -p "$OUT"
mc_init peers
if [[ -z ${MYCACHED:-} ]]; then
	MYCACHED=$MC_TMP/mycached
	(cd "$MC_ROOT" && go build -o "$MYCACHED" ./cmd/mycached) || mc_die "go build ./cmd/mycached failed"
fi
MTR_DIFFS=0
DRIVER_DIFFS=0
PEER_RUNS=0
case $what in
all) peer_mtr; peer_driver ;;
mtr) peer_mtr ;;
driver) peer_driver ;;
discover) peer_discover; exit 0 ;;
*) mc_die "usage: $0 [all|mtr|driver|discover]" ;;
esac
total=$((MTR_DIFFS + DRIVER_DIFFS))
if ((total > 0)); then
	echo "FAIL: $total tests pass directly and fail through mycached"
	exit 1
fi
echo "ok: every test that passes directly passes through mycached"
