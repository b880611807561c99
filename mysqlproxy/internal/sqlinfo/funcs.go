package sqlinfo

import "strings"

// nondeterministic lists the functions whose result depends on time, the
// session, randomness or server state, so a statement calling one is never
// cached. Names are lowercase, as ast.FuncCallExpr.FnName.L.
var nondeterministic = map[string]bool{
	"now": true, "curdate": true, "curtime": true, "current_date": true,
	"current_time": true, "current_timestamp": true, "localtime": true,
	"localtimestamp": true, "sysdate": true, "unix_timestamp": true,
	"utc_date": true, "utc_time": true, "utc_timestamp": true,
	"rand": true, "random_bytes": true, "uuid": true, "uuid_short": true, "uuid_v7": true, "sys_guid": true,
	"connection_id": true, "last_insert_id": true, "found_rows": true,
	"row_count": true, "user": true, "current_user": true,
	"current_role": true, "session_user": true, "system_user": true,
	"database": true, "schema": true, "get_lock": true,
	"is_free_lock": true, "is_used_lock": true, "release_lock": true,
	"release_all_locks": true, "sleep": true, "benchmark": true,
	"load_file": true, "master_pos_wait": true, "master_gtid_wait": true, "nextval": true, "lastval": true,
	"setval": true, "getvar": true, "setvar": true, "version": true, "tidb_current_tso": true, "tidb_is_ddl_owner": true,
	"password": true, "encrypt": true,
	// The binlog's contents, and a Galera cluster's replication state,
	// which no table generation covers.
	"binlog_gtid_pos": true, "wsrep_last_seen_gtid": true,
	"wsrep_last_written_gtid": true, "wsrep_sync_wait_upto_gtid": true,
}

// builtins lists the built-in scalar functions. A call to any other name is
// a stored function, which may read tables the statement does not name or
// be non-deterministic, so it is never cached. The list is MariaDB's:
// each name is one a stored function of the session's database cannot
// take over (checked on MariaDB 10.11: the server calls its own function,
// or refuses the call). A built-in of MySQL or of later MariaDB versions
// that MariaDB 10.11 lacks (REGEXP_LIKE, BIN_TO_UUID, FORMAT_BYTES, ...)
// is a stored function's name there, and is taken as one. char_func,
// insert_func and default_func are the parser's names for CHAR(),
// INSERT() and DEFAULT().
var builtins = map[string]bool{
	"abs":                       true,
	"acos":                      true,
	"add_months":                true,
	"adddate":                   true,
	"addtime":                   true,
	"aes_decrypt":               true,
	"aes_encrypt":               true,
	"and":                       true,
	"asbinary":                  true,
	"ascii":                     true,
	"asin":                      true,
	"astext":                    true,
	"atan":                      true,
	"atan2":                     true,
	"avg":                       true,
	"benchmark":                 true,
	"bin":                       true,
	"binlog_gtid_pos":           true,
	"bit_and":                   true,
	"bit_count":                 true,
	"bit_length":                true,
	"bit_or":                    true,
	"bit_xor":                   true,
	"case":                      true,
	"cast":                      true,
	"ceil":                      true,
	"ceiling":                   true,
	"char":                      true,
	"char_func":                 true,
	"char_length":               true,
	"character_length":          true,
	"charset":                   true,
	"chr":                       true,
	"coalesce":                  true,
	"coercibility":              true,
	"collation":                 true,
	"column_add":                true,
	"column_check":              true,
	"column_create":             true,
	"column_delete":             true,
	"column_exists":             true,
	"column_get":                true,
	"column_json":               true,
	"column_list":               true,
	"compress":                  true,
	"concat":                    true,
	"concat_ws":                 true,
	"connection_id":             true,
	"conv":                      true,
	"convert":                   true,
	"convert_tz":                true,
	"cos":                       true,
	"cot":                       true,
	"count":                     true,
	"crc32":                     true,
	"crc32c":                    true,
	"cume_dist":                 true,
	"curdate":                   true,
	"current_date":              true,
	"current_role":              true,
	"current_time":              true,
	"current_timestamp":         true,
	"current_user":              true,
	"curtime":                   true,
	"database":                  true,
	"date":                      true,
	"date_add":                  true,
	"date_format":               true,
	"date_sub":                  true,
	"datediff":                  true,
	"day":                       true,
	"dayname":                   true,
	"dayofmonth":                true,
	"dayofweek":                 true,
	"dayofyear":                 true,
	"decode":                    true,
	"decode_oracle":             true,
	"default_func":              true,
	"degrees":                   true,
	"dense_rank":                true,
	"des_decrypt":               true,
	"des_encrypt":               true,
	"div":                       true,
	"elt":                       true,
	"encode":                    true,
	"encrypt":                   true,
	"exp":                       true,
	"export_set":                true,
	"extract":                   true,
	"field":                     true,
	"find_in_set":               true,
	"first_value":               true,
	"floor":                     true,
	"format":                    true,
	"found_rows":                true,
	"from_base64":               true,
	"from_days":                 true,
	"from_unixtime":             true,
	"geometrycollection":        true,
	"geomfromtext":              true,
	"get_format":                true,
	"get_lock":                  true,
	"greatest":                  true,
	"group_concat":              true,
	"hex":                       true,
	"hour":                      true,
	"if":                        true,
	"ifnull":                    true,
	"in":                        true,
	"inet6_aton":                true,
	"inet6_ntoa":                true,
	"inet_aton":                 true,
	"inet_ntoa":                 true,
	"insert_func":               true,
	"instr":                     true,
	"interval":                  true,
	"is_free_lock":              true,
	"is_ipv4":                   true,
	"is_ipv4_compat":            true,
	"is_ipv4_mapped":            true,
	"is_ipv6":                   true,
	"is_used_lock":              true,
	"isnull":                    true,
	"json_array":                true,
	"json_array_append":         true,
	"json_array_insert":         true,
	"json_arrayagg":             true,
	"json_compact":              true,
	"json_contains":             true,
	"json_contains_path":        true,
	"json_depth":                true,
	"json_detailed":             true,
	"json_equals":               true,
	"json_exists":               true,
	"json_extract":              true,
	"json_insert":               true,
	"json_keys":                 true,
	"json_length":               true,
	"json_loose":                true,
	"json_merge":                true,
	"json_merge_patch":          true,
	"json_merge_preserve":       true,
	"json_normalize":            true,
	"json_object":               true,
	"json_objectagg":            true,
	"json_overlaps":             true,
	"json_pretty":               true,
	"json_query":                true,
	"json_quote":                true,
	"json_remove":               true,
	"json_replace":              true,
	"json_search":               true,
	"json_set":                  true,
	"json_type":                 true,
	"json_unquote":              true,
	"json_valid":                true,
	"json_value":                true,
	"lag":                       true,
	"last_day":                  true,
	"last_insert_id":            true,
	"last_value":                true,
	"lastval":                   true,
	"lcase":                     true,
	"lead":                      true,
	"least":                     true,
	"left":                      true,
	"length":                    true,
	"like":                      true,
	"linestring":                true,
	"ln":                        true,
	"load_file":                 true,
	"localtime":                 true,
	"localtimestamp":            true,
	"locate":                    true,
	"log":                       true,
	"log10":                     true,
	"log2":                      true,
	"lower":                     true,
	"lpad":                      true,
	"ltrim":                     true,
	"make_set":                  true,
	"makedate":                  true,
	"maketime":                  true,
	"master_gtid_wait":          true,
	"max":                       true,
	"mbrcontains":               true,
	"mbrintersects":             true,
	"mbrwithin":                 true,
	"md5":                       true,
	"median":                    true,
	"microsecond":               true,
	"mid":                       true,
	"min":                       true,
	"minute":                    true,
	"mod":                       true,
	"month":                     true,
	"monthname":                 true,
	"multilinestring":           true,
	"multipoint":                true,
	"multipolygon":              true,
	"name_const":                true,
	"natural_sort_key":          true,
	"nextval":                   true,
	"now":                       true,
	"nth_value":                 true,
	"ntile":                     true,
	"nullif":                    true,
	"nvl":                       true,
	"nvl2":                      true,
	"oct":                       true,
	"octet_length":              true,
	"old_password":              true,
	"or":                        true,
	"ord":                       true,
	"password":                  true,
	"percent_rank":              true,
	"percentile_cont":           true,
	"percentile_disc":           true,
	"period_add":                true,
	"period_diff":               true,
	"pi":                        true,
	"polygon":                   true,
	"position":                  true,
	"pow":                       true,
	"power":                     true,
	"quarter":                   true,
	"quote":                     true,
	"radians":                   true,
	"rand":                      true,
	"random_bytes":              true,
	"rank":                      true,
	"regexp":                    true,
	"regexp_instr":              true,
	"regexp_replace":            true,
	"regexp_substr":             true,
	"release_all_locks":         true,
	"release_lock":              true,
	"repeat":                    true,
	"replace":                   true,
	"reverse":                   true,
	"right":                     true,
	"round":                     true,
	"row":                       true,
	"row_count":                 true,
	"row_number":                true,
	"rpad":                      true,
	"rtrim":                     true,
	"schema":                    true,
	"sec_to_time":               true,
	"second":                    true,
	"session_user":              true,
	"setval":                    true,
	"sformat":                   true,
	"sha":                       true,
	"sha1":                      true,
	"sha2":                      true,
	"sign":                      true,
	"sin":                       true,
	"sleep":                     true,
	"soundex":                   true,
	"space":                     true,
	"sqrt":                      true,
	"st_asbinary":               true,
	"st_astext":                 true,
	"st_aswkb":                  true,
	"st_aswkt":                  true,
	"st_contains":               true,
	"st_distance":               true,
	"st_geomfromtext":           true,
	"st_geomfromwkb":            true,
	"st_intersects":             true,
	"st_within":                 true,
	"st_x":                      true,
	"st_y":                      true,
	"std":                       true,
	"stddev":                    true,
	"stddev_pop":                true,
	"stddev_samp":               true,
	"str_to_date":               true,
	"strcmp":                    true,
	"subdate":                   true,
	"substr":                    true,
	"substring":                 true,
	"substring_index":           true,
	"subtime":                   true,
	"sum":                       true,
	"sys_guid":                  true,
	"sysdate":                   true,
	"system_user":               true,
	"tan":                       true,
	"time":                      true,
	"time_format":               true,
	"time_to_sec":               true,
	"timediff":                  true,
	"timestamp":                 true,
	"timestampadd":              true,
	"timestampdiff":             true,
	"to_base64":                 true,
	"to_char":                   true,
	"to_days":                   true,
	"to_seconds":                true,
	"trim":                      true,
	"truncate":                  true,
	"ucase":                     true,
	"uncompress":                true,
	"uncompressed_length":       true,
	"unhex":                     true,
	"unix_timestamp":            true,
	"upper":                     true,
	"user":                      true,
	"utc_date":                  true,
	"utc_time":                  true,
	"utc_timestamp":             true,
	"uuid":                      true,
	"uuid_short":                true,
	"values":                    true,
	"var_pop":                   true,
	"var_samp":                  true,
	"variance":                  true,
	"version":                   true,
	"week":                      true,
	"weekday":                   true,
	"weekofyear":                true,
	"weight_string":             true,
	"wsrep_last_seen_gtid":      true,
	"wsrep_last_written_gtid":   true,
	"wsrep_sync_wait_upto_gtid": true,
	"xor":                       true,
	"year":                      true,
	"yearweek":                  true,
}

// spaceSensitive are the functions the grammar reads as its own only when
// "(" follows the name at once. With a space or a comment between
// (unless sql_mode has IGNORE_SPACE), or with the name quoted, the name
// is an identifier, and the call is to a stored function of the session's
// database: "count (1)" calls db.count (checked on MariaDB 10.11).
var spaceSensitive = map[string]bool{
	"adddate": true, "bit_and": true, "bit_or": true, "bit_xor": true,
	"cast": true, "count": true, "cume_dist": true, "curdate": true,
	"curtime": true, "date_add": true, "date_sub": true, "dense_rank": true,
	"extract": true, "first_value": true, "group_concat": true,
	"json_arrayagg": true, "json_objectagg": true, "lag": true, "lead": true,
	"max": true, "median": true, "mid": true, "min": true, "now": true,
	"nth_value": true, "ntile": true, "percent_rank": true,
	"percentile_cont": true, "percentile_disc": true, "position": true,
	"rank": true, "session_user": true, "std": true,
	"stddev": true, "stddev_pop": true, "stddev_samp": true, "subdate": true,
	"substr": true, "substring": true, "sum": true, "system_user": true,
	"trim": true, "trim_oracle": true, "var_pop": true, "var_samp": true,
	"variance": true,
}

// callsByIdentifier reports whether sql calls one of spaceSensitive by
// its name as an identifier: spaced or commented from its "(", or quoted.
// It errs on the side of a stored function: under IGNORE_SPACE such a
// call is the built-in, and it is not cached either.
func callsByIdentifier(sql string) bool {
	if !mayCallByIdentifier(sql) {
		return false
	}
	// "count"(1) names the function under ANSI_QUOTES, and is a syntax
	// error otherwise: a pass that reads it so costs nothing.
	return callsByIdentifierAs(sql, LexOptions{}) || callsByIdentifierAs(sql, LexOptions{ANSIQuotes: true})
}

// mayCallByIdentifier is callsByIdentifier's quick test: sql holds a
// quote, or a "(" after a space or a comment.
func mayCallByIdentifier(sql string) bool {
	if strings.ContainsAny(sql, "`\"") {
		return true
	}
	for i := 1; i < len(sql); i++ {
		if sql[i] == '(' {
			switch sql[i-1] {
			case ' ', '\t', '\n', '\r', '\f', '\v', '/':
				return true
			}
		}
	}
	return false
}

func callsByIdentifierAs(sql string, opts LexOptions) bool {
	lx := NewLexer(sql, opts)
	var prev Token
	for {
		t, err := lx.Next()
		if err != nil || t.Kind == TokEOF {
			return false
		}
		if t.Is('(') {
			switch prev.Kind {
			case TokWord:
				if t.Pos > prev.Pos+len(prev.Text) && spaceSensitive[strings.ToLower(prev.Text)] {
					return true
				}
			case TokQuotedIdent:
				if len(prev.Text) >= 2 && spaceSensitive[strings.ToLower(prev.Text[1:len(prev.Text)-1])] {
					return true
				}
			}
		}
		prev = t
	}
}

// mayCallRoutine reports whether a text the parser refused may call a
// stored function: a name not of a built-in function before "(", a
// qualified name (db.f), or a quoted one, which under ANSI_QUOTES may be
// a double-quoted string's. Keywords that precede a parenthesis (IN,
// EXISTS, AS, a type in CAST) call nothing. A text it cannot read may.
func mayCallRoutine(sql string) bool {
	lx := NewLexer(sql, LexOptions{})
	var prev, before Token
	for {
		t, err := lx.Next()
		if err != nil {
			return true
		}
		if t.Kind == TokEOF {
			return false
		}
		if t.Is('(') {
			switch prev.Kind {
			case TokWord:
				name := strings.ToLower(prev.Text)
				if before.Is('.') || !builtins[name] && !parenKeywords[name] {
					return true
				}
			case TokQuotedIdent, TokString:
				return true
			}
		}
		before, prev = prev, t
	}
}

// parenKeywords are the words other than function names that a "(" may
// follow in a read.
var parenKeywords = map[string]bool{
	"select": true, "from": true, "in": true, "exists": true, "as": true, "join": true, "on": true,
	"and": true, "or": true, "xor": true, "not": true, "where": true, "having": true, "values": true,
	"value": true, "into": true, "over": true, "using": true, "any": true, "all": true, "some": true,
	"by": true, "case": true, "when": true, "then": true, "else": true, "union": true, "except": true,
	"intersect": true, "distinct": true, "lateral": true, "row": true, "with": true, "recursive": true,
	"limit": true, "offset": true, "is": true, "like": true, "between": true, "div": true,
	"interval": true, "regexp": true, "rlike": true, "escape": true, "window": true, "partition": true,
	"straight_join": true, "natural": true, "inner": true, "outer": true, "cross": true, "for": true,
	"to": true, "of": true, "table": true, "returning": true, "binary": true, "outfile": true,
	"dumpfile": true, "index": true, "key": true, "ignore": true, "force": true, "use": true,
	"columns": true, "path": true, "nested": true, "rows": true, "range": true, "preceding": true,
	"following": true, "unbounded": true, "current": true, "asc": true, "desc": true, "order": true,
	"group": true, "char": true, "varchar": true, "nchar": true, "decimal": true, "numeric": true,
	"dec": true, "float": true, "double": true, "real": true, "int": true, "integer": true,
	"signed": true, "unsigned": true, "datetime": true, "time": true, "timestamp": true, "date": true,
	"varbinary": true, "json": true, "set": true, "enum": true, "text": true, "blob": true,
	"collate": true, "charset": true, "sounds": true, "mode": true, "share": true, "update": true,
	"lock": true, "wait": true, "nowait": true, "skip": true, "locked": true, "fields": true,
	"lines": true, "terminated": true, "enclosed": true, "optionally": true, "starting": true,
	"system_time": true, "portion": true, "ordinality": true, "default": true, "error": true,
	"empty": true, "null": true, "true": true, "false": true, "unknown": true, "left": true,
	"right": true, "straight": true, "high_priority": true, "sql_no_cache": true, "sql_cache": true,
	"sql_calc_found_rows": true, "sql_small_result": true, "sql_big_result": true,
	"sql_buffer_result": true, "all_columns": true,
}
