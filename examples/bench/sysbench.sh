# sysbench.sh: run sysbench oltp_point_select and the query tool, record
# each measurement as one line, and summarize them as a markdown table.
# Source it after lib.sh.

BENCH_TIME=${BENCH_TIME:-10}   # seconds per measurement
BENCH_REPS=${BENCH_REPS:-3}    # repetitions, interleaved across targets
BENCH_ROWS=${BENCH_ROWS:-10000}

# sb PORT [sysbench args...] runs oltp_point_select against PORT as root.
sb() {
	local port=$1; shift
	"$(mc_bin sysbench)" oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 \
		--mysql-port="$port" --mysql-user=root --mysql-password="$MC_ROOT_PASSWORD" \
		--mysql-db=sbtest --mysql-ssl=off --tables=1 --table-size="$BENCH_ROWS" "$@"
}

# sb_prepare PORT creates database sbtest and the sysbench table.
sb_prepare() {
	mc_sql "$1" -e "CREATE DATABASE IF NOT EXISTS sbtest"
	sb "$1" prepare >"$MC_TMP/prepare-$1.log" 2>&1 || { tail "$MC_TMP/prepare-$1.log" >&2; mc_die "sysbench prepare failed"; }
}

# sb_measure LABEL PORT MODE THREADS appends "LABEL MODE THREADS qps p50
# p99 errors" to $RESULTS. p50 comes from sysbench's histogram, p99 from
# --percentile=99; both are per query, in ms.
sb_measure() {
	local label=$1 port=$2 mode=$3 threads=$4 out
	out=$MC_TMP/sb-$label-$mode-$threads.log
	sb "$port" --db-ps-mode="$mode" --threads="$threads" --time="$BENCH_TIME" \
		--percentile=99 --histogram=on run >"$out" 2>&1 || {
		# A failed run is recorded as such (errors -1) and the others go on.
		echo "  $label $mode $threads threads: FAILED: $(grep -m1 FATAL "$out")"
		echo "$label $mode $threads 0 0 0 -1" >>"$RESULTS"
		return 0
	}
	awk -v label="$label" -v mode="$mode" -v threads="$threads" '
		/^ *queries:/ { gsub(/[()]/, "", $3); qps = $3 }
		/99th percentile:/ { p99 = $3 }
		/ignored errors:/ { errs = $3 }
		# Histogram rows: "value |*****  count".
		$2 == "|" || $2 ~ /^\|/ { v[n] = $1; c[n] = $NF; total += $NF; n++ }
		END {
			half = total / 2; acc = 0; p50 = 0
			for (i = 0; i < n; i++) { acc += c[i]; if (acc >= half) { p50 = v[i]; break } }
			printf "%s %s %s %s %s %s %s\n", label, mode, threads, qps, p50, p99, errs + 0
		}' "$out" | tee -a "$RESULTS" | awk '{ printf "  %-22s %-8s %2s threads: %10.0f q/s  p50 %s ms  p99 %s ms  errors %s\n", $1, $2, $3, $4, $5, $6, $7 }'
}

# q_measure LABEL PORT THREADS QUERY records the query tool's numbers in
# the same format, with mode "heavy".
q_measure() {
	local label=$1 port=$2 threads=$3 query=$4 line
	line=$("$MC_ROOT/bin/mycached-bench" query -dsn "root:$MC_ROOT_PASSWORD@tcp(127.0.0.1:$port)/sbtest?interpolateParams=true" \
		-query "$query" -threads "$threads" -duration "${BENCH_TIME}s") || mc_die "query tool against $label failed"
	echo "$line" | awk -v label="$label" -v threads="$threads" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		printf "%s heavy %s %s %s %s 0\n", label, threads, f["ops_per_sec"], f["p50_ms"], f["p99_ms"]
	}' | tee -a "$RESULTS" | awk '{ printf "  %-22s %-8s %2s threads: %10.1f q/s  p50 %s ms  p99 %s ms\n", $1, $2, $3, $4, $5, $6 }'
}

# hits PORT prints mycached's total hits and misses ("hits misses").
hits() {
	mc_sql "$1" -N -B -e "SHOW MYCACHED STATUS" |
		awk '$1 == "Hits_l1" || $1 == "Hits_memcached" { h += $2 } $1 == "Misses" { m = $2 } END { print h + 0, m + 0 }'
}

# summarize BASELINE [RELATIVE...] prints a markdown table of $RESULTS:
# per target, mode and threads, the median queries/s with the min-max
# spread, median p50 and p99, and the ratio of the median to the
# BASELINE target's and to each RELATIVE target's median.
summarize() {
	local base=$1; shift
	local rel="$*"
	sort -k2,2 -k3,3n -k1,1 "$RESULTS" | awk -v base="$base" -v rel="$rel" -v order="$TARGETS" '
		function median(s,   a, n, i, j, t) {
			n = split(s, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function lo(s,   a, n, i, m) { n = split(s, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]; return m }
		function hi(s,   a, n, i, m) { n = split(s, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]; return m }
		{
			k = $2 SUBSEP $3; if (!(k in seen)) { seen[k] = 1; groups[ng++] = k }
			if ($7 < 0) { failed[$1, k]++; next }
			q[$1, k] = q[$1, k] " " $4; p50[$1, k] = p50[$1, k] " " $5; p99[$1, k] = p99[$1, k] " " $6; errs[$1, k] += $7
		}
		END {
			nt = split(order, tg, " "); nr = split(rel, rl, " ")
			printf "| workload | threads | target | q/s median | q/s min-max | p50 ms | p99 ms | errors | vs %s |", base
			for (r = 1; r <= nr; r++) printf " vs %s |", rl[r]
			printf "\n|---|---|---|---|---|---|---|---|---|"
			for (r = 1; r <= nr; r++) printf "---|"
			printf "\n"
			for (g = 0; g < ng; g++) {
				k = groups[g]; split(k, kk, SUBSEP)
				for (t = 1; t <= nt; t++) {
					name = tg[t]
					if ((name, k) in failed && !((name, k) in q)) {
						printf "| %s | %s | %s | FAILED (%d of %d runs) | | | | | |", kk[1], kk[2], name, failed[name, k], failed[name, k]
						for (r = 1; r <= nr; r++) printf " |"
						printf "\n"; continue
					}
					if (!((name, k) in q)) continue
					m = median(q[name, k]); b = ((base, k) in q) ? median(q[base, k]) : 0
					nerr = errs[name, k] + 0
					if ((name, k) in failed) nerr = nerr " (" failed[name, k] " runs FAILED)"
					printf "| %s | %s | %s | %.0f | %.0f-%.0f | %.3f | %.3f | %s | %s |", kk[1], kk[2], name, m,
						lo(q[name, k]), hi(q[name, k]), median(p50[name, k]), median(p99[name, k]), nerr,
						(b > 0 ? sprintf("%.2fx", m / b) : "-")
					for (r = 1; r <= nr; r++) {
						rb = ((rl[r], k) in q) ? median(q[rl[r], k]) : 0
						printf " %s |", (rb > 0 ? sprintf("%.2fx", m / rb) : "-")
					}
					printf "\n"
				}
			}
		}'
}
