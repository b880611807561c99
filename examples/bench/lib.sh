# lib.sh: start and stop the throwaway servers that the demo and the
# benchmarks run against. Source it from bash; call mc_init first. Every
# process started here is recorded by PID and only those PIDs are killed by
# mc_cleanup, which mc_init installs as the EXIT trap.

# The password of root@127.0.0.1 in the throwaway MariaDB. The proxy holds
# no passwords; clients send this one through it.
MC_ROOT_PASSWORD=${MC_ROOT_PASSWORD:-demo-root}
MC_BINLOG_PASSWORD=${MC_BINLOG_PASSWORD:-demo-binlog}

MC_PIDS=()
MC_TMP=
# Clock ticks per second, the unit of mc_cpu_ticks.
MC_CLK_TCK=$(getconf CLK_TCK)

# mc_cpu_ticks PID... prints the user and system CPU of the PIDs, summed,
# in clock ticks: fields 14 and 15 of /proc/PID/stat (no comm here has
# spaces). A PID that has gone counts 0, and so does none.
mc_cpu_ticks() {
	local p v t=0
	for p in "$@"; do
		v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null) || v=0
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# mc_init makes the temp dir and installs the cleanup trap. $1 names it.
mc_init() {
	MC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mycached-${1:-run}.XXXXXX")
	trap mc_cleanup EXIT
	trap 'exit 130' INT TERM
}

# mc_cleanup kills the processes this script started, newest first, and
# removes the temp dir. Set MC_KEEP=1 to keep the dir (logs) for debugging.
mc_cleanup() {
	local i pid
	for ((i = ${#MC_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${MC_PIDS[i]}
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${MC_PIDS[@]}"; do
		# Give each up to 10s to exit cleanly, then insist.
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	MC_PIDS=()
	if [[ -n $MC_TMP && -z ${MC_KEEP:-} ]]; then rm -rf "$MC_TMP"; fi
}

mc_die() { echo "error: $*" >&2; exit 1; }

# mc_bin NAME finds NAME on PATH or in the Debian sbin dirs, which are
# often missing from a non-login PATH.
mc_bin() {
	local d
	if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
	for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
		if [[ -x $d/$1 ]]; then echo "$d/$1"; return; fi
	done
	mc_die "$1 not found; run 'make deps' as root to install it"
}

# mc_port_free PORT succeeds when nothing accepts connections on it.
mc_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# mc_free_port prints a port that nothing listens on now. It picks from
# 10000-31999, below Linux's default ephemeral range (32768-60999), so that
# an outgoing connection cannot hold it. Another process could still take
# it before it is bound, which the wait in the start functions reports.
mc_free_port() {
	local p
	for _ in $(seq 50); do
		p=$((10000 + RANDOM % 22000))
		if mc_port_free "$p"; then echo "$p"; return; fi
	done
	mc_die "no free port found"
}

# mc_wait_port PORT PID LOG waits until PORT accepts connections, failing
# with LOG's tail if PID dies or 30s pass.
mc_wait_port() {
	local port=$1 pid=$2 log=$3
	for _ in $(seq 300); do
		if ! mc_port_free "$port"; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$log" >&2
			mc_die "process $pid exited before listening on $port (log: $log)"
		fi
		sleep 0.1
	done
	tail -n 20 "$log" >&2
	mc_die "nothing listening on $port after 30s (log: $log)"
}

# mc_start_mariadb NAME [mariadbd args...] starts a private MariaDB with a
# ROW binlog and sets NAME_PORT (for example DB_PORT). root@127.0.0.1 gets
# MC_ROOT_PASSWORD, and mycached@127.0.0.1, the account of mycached's
# binlog follower, MC_BINLOG_PASSWORD. The datadir of the first instance is copied for the
# next ones, which is faster than installing again.
mc_start_mariadb() {
	local name=$1; shift
	local dir=$MC_TMP/$name user=() port
	mkdir -p "$dir/tmp"
	if [[ $(id -u) -eq 0 ]]; then user=(--user=root); fi
	if [[ -d $MC_TMP/datadir-template ]]; then
		cp -a "$MC_TMP/datadir-template" "$dir/data"
	else
		"$(mc_bin mariadb-install-db)" --no-defaults --auth-root-authentication-method=normal \
			--skip-test-db --skip-name-resolve "${user[@]}" --datadir="$MC_TMP/datadir-template" \
			--innodb-log-file-size=48M --innodb-buffer-pool-size=128M >"$dir/install.log" 2>&1 ||
			{ tail -n 20 "$dir/install.log" >&2; mc_die "mariadb-install-db failed"; }
		cp -a "$MC_TMP/datadir-template" "$dir/data"
	fi
	port=$(mc_free_port)
	"$(mc_bin mariadbd)" --no-defaults --datadir="$dir/data" --socket="$dir/mariadbd.sock" \
		--port="$port" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$dir/mariadbd.pid" \
		--log-error="$dir/error.log" --tmpdir="$dir/tmp" --max-connections=1000 \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
		--innodb-buffer-pool-size=128M --innodb-log-file-size=48M \
		--innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 \
		--log-bin="$dir/data/mariadb-bin" --binlog-format=ROW --server-id=1 --sync-binlog=0 \
		"${user[@]}" "$@" >"$dir/mariadbd.out" 2>&1 &
	MC_PIDS+=($!)
	mc_wait_port "$port" "$!" "$dir/error.log"
	"$(mc_bin mariadb)" --no-defaults -S "$dir/mariadbd.sock" -uroot <<-SQL || mc_die "bootstrap of $name failed"
		CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
		ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '$MC_ROOT_PASSWORD';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
		CREATE USER IF NOT EXISTS 'mycached'@'127.0.0.1' IDENTIFIED BY '$MC_BINLOG_PASSWORD';
		GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT, SHOW VIEW ON *.* TO 'mycached'@'127.0.0.1';
	SQL
	printf -v "${name^^}_PORT" %s "$port"
	printf -v "${name^^}_SOCK" %s "$dir/mariadbd.sock"
}

# mc_start_memcached NAME [memcached args...] starts a 64 MB memcached
# (later args win, for example -m 512) and sets NAME_PORT.
mc_start_memcached() {
	local name=$1 port user=()
	shift
	port=$(mc_free_port)
	# memcached refuses to run as root unless told which user to be.
	if [[ $(id -u) -eq 0 ]]; then user=(-u root); fi
	"$(mc_bin memcached)" -l 127.0.0.1 -p "$port" -U 0 -m 64 -t 2 "${user[@]}" "$@" >"$MC_TMP/$name.log" 2>&1 &
	MC_PIDS+=($!)
	mc_wait_port "$port" "$!" "$MC_TMP/$name.log"
	printf -v "${name^^}_PORT" %s "$port"
}

# mc_start_mycached NAME BACKEND_PORT [mycached args...] starts bin/mycached
# in front of the MariaDB on BACKEND_PORT and sets NAME_PORT. With
# MC_MYCACHED_WRAP set (words of a command that execs its arguments, such
# as "chrt -b 0"), mycached runs under it.
mc_start_mycached() {
	local name=$1 backend=$2 port; shift 2
	port=$(mc_free_port)
	# shellcheck disable=SC2086 # the wrapper is words
	${MC_MYCACHED_WRAP:-} "$MC_ROOT/bin/mycached" --listen "127.0.0.1:$port" --backend "127.0.0.1:$backend" \
		--backend-tls off --log-level warn "$@" >"$MC_TMP/$name.log" 2>&1 &
	MC_PIDS+=($!)
	mc_wait_port "$port" "$!" "$MC_TMP/$name.log"
	printf -v "${name^^}_PORT" %s "$port"
}

# mc_start_relay NAME BACKEND_PORT [relay args...] starts the plain
# io.Copy relay and sets NAME_PORT; -delay D makes it a slow network.
mc_start_relay() {
	local name=$1 backend=$2 port
	shift 2
	port=$(mc_free_port)
	"$MC_ROOT/bin/mycached-bench" relay -listen "127.0.0.1:$port" -backend "127.0.0.1:$backend" "$@" >"$MC_TMP/$name.log" 2>&1 &
	MC_PIDS+=($!)
	mc_wait_port "$port" "$!" "$MC_TMP/$name.log"
	printf -v "${name^^}_PORT" %s "$port"
}

# mc_sql PORT [mariadb args...] runs the mariadb client as root over TCP.
mc_sql() {
	local port=$1; shift
	"$(mc_bin mariadb)" --no-defaults -h 127.0.0.1 -P "$port" -uroot -p"$MC_ROOT_PASSWORD" "$@"
}

# mc_has_flag FLAG succeeds when bin/mycached --help lists FLAG.
mc_has_flag() { "$MC_ROOT/bin/mycached" --help 2>&1 | grep -q -- "$1"; }
