package clientmatrix

// knownDiff is a difference between what a client sees directly and
// through mycached that exists today. The matrix fails on a difference
// that is not listed, and on a listed one that no longer occurs, so this
// table is the list of what is still to fix.
type knownDiff struct {
	Case   string // a case id of testdata/cases.json
	Client string // a client name (see clients), or "*" for every client
	Via    string // "cached", "passthrough", or "*" for both
	Reason string // "bug: " and the cause, naming mycached's code
}

// Causes shared by several entries.
const (
	whyCursor = "bug: relay.go relayer.columns (the EOF after the column definitions) and relayer.rows (a result's last OK under CLIENT_DEPRECATE_EOF, which stays set for the next result) take SERVER_STATUS_CURSOR_EXISTS, set while the procedure's own cursor is open, for a COM_STMT_EXECUTE cursor, and relayer.results returns before the rows: the client waits for them forever"

	whyKV = "bug: kv.go session.kvAllowed lets every user use kv when Config.KVUsers is empty (the default), so session.kvQuery, which query.go comQuery calls before the Passthrough check, answers valid SQL SELECT \"...\" from the kv store (an empty key/value result, or a kv key error); DESIGN.md makes kv opt-in per account on the main listener"

	whyKVPrepared = "bug: kv.go session.kvPrepare marks SELECT ?[, ?] as a dual kv statement for every user (Config.KVUsers empty by default), and query.go comStmtExecute answers an execute that binds key-like strings from the kv store instead of MariaDB"

	whyPseudoVar = "bug: admin.go session.pseudo answers SET @mycached_cache itself and never sends it to MariaDB, so the user variable stays NULL there"

	whyAdmin = "bug: admin.go session.pseudo answers SHOW MYCACHED and MYCACHED ... for users not in Config.AdminUsers with its own error 1227, where MariaDB (which should get the statement) answers 1064"

	whyHit = "bug: cache.go session.cacheRead serves a hit without the backend, so the session's diagnostics on MariaDB (ROW_COUNT(), warnings, FOUND_ROWS()) still describe the statement before it"

	whyBackendGone = "bug: session.go session.loop waits only for the client between commands and never notices the backend closing the session (wait_timeout, KILL): the client's connection stays open, so node sees no error event and the client's write of the next statement succeeds (libmariadb's reconnect and retry on a failed write never fire), a cached read still succeeds (cache.go session.cacheRead), and the next statement gets mycached's own ERR 2013 (session.loop's sendError with wire.go codeBackendLost), which libmariadb rejects as malformed (2027) because 2013 is a client-side code, instead of a closed connection (2006)"

	whyBackendGoneRelay = "bug: session.go session.loop waits only for the client between commands and never notices the backend closing the session (wait_timeout, KILL): the client's connection stays open, so node sees no error event and the client's write of the next statement succeeds (libmariadb's reconnect and retry on a failed write never fire), and the statement gets mycached's own ERR 2013 (session.loop's sendError with wire.go codeBackendLost), which libmariadb rejects as malformed (2027) because 2013 is a client-side code, instead of a closed connection (2006)"

	whyAbandon = "bug: while relaying a statement mycached reads only the backend (relay.go relayer.packet) and watches no client connection (session.go session.loop reads it between commands), so when the client goes away mid-statement the backend session stays and MariaDB goes on running the statement"

	whyPrimaryKey = "bug: rowlevel.go session.writeDeps calls session.primaryKey for INSERT ... SELECT after the write (query.go prefetchKeys learns keys only for statements with VALUES rows or a point WHERE), and learnPrimaryKey's SHOW KEYS on the session's backend connection resets ROW_COUNT() and the warnings"
)

// knownDiffs holds every difference found today.
var knownDiffs = []knownDiff{
	{"proc-cursor", "*", "*", whyCursor},
	// Connector/J uses CLIENT_DEPRECATE_EOF, and this procedure returns no
	// result after the one read while its cursor is open.
	{"proc-cursor-prepared", "mariadb-cli", "*", whyCursor},
	{"proc-cursor-prepared", "pymysql", "*", whyCursor},
	{"proc-cursor-prepared", "mysqlclient", "*", whyCursor},
	{"proc-cursor-prepared", "php-mysqli", "*", whyCursor},
	{"proc-cursor-prepared", "php-pdo", "*", whyCursor},
	{"proc-cursor-prepared", "ruby-mysql2", "*", whyCursor},
	{"proc-cursor-prepared", "perl-dbd-mariadb", "*", whyCursor},
	{"proc-cursor-prepared", "node-mysql", "*", whyCursor},

	{"kvlike-hello", "*", "*", whyKV},
	{"kvlike-two", "*", "*", whyKV},
	{"kvlike-digit", "*", "*", whyKV},
	{"kvlike-date", "*", "*", whyKV},
	{"kvlike-datetime", "*", "*", whyKV},
	{"kvlike-email", "*", "*", whyKV},
	{"kvlike-emoji", "*", "*", whyKV},
	{"kvlike-space", "*", "*", whyKV},
	{"kvlike-empty", "*", "*", whyKV},
	{"kvlike-ansi-quotes", "*", "*", "bug: kv.go session.parseKV reads double quotes as strings whatever the session's sql_mode (only NO_BACKSLASH_ESCAPES, from the status flags, is heeded), and kvAllowed lets every user use kv by default, so under ANSI_QUOTES SELECT \"x\" is answered from the kv store instead of failing with 1054"},
	// The clients that interpolate parameters themselves send text, which
	// kvlike-hello covers.
	{"kvlike-prepared-one", "php-mysqli", "*", whyKVPrepared},
	{"kvlike-prepared-one", "php-pdo", "*", whyKVPrepared},
	{"kvlike-prepared-one", "ruby-mysql2", "*", whyKVPrepared},
	{"kvlike-prepared-one", "perl-dbd-mariadb", "*", whyKVPrepared},
	{"kvlike-prepared-one", "connector-j", "*", whyKVPrepared},
	{"kvlike-prepared-two", "php-mysqli", "*", whyKVPrepared},
	{"kvlike-prepared-two", "php-pdo", "*", whyKVPrepared},
	{"kvlike-prepared-two", "ruby-mysql2", "*", whyKVPrepared},
	{"kvlike-prepared-two", "perl-dbd-mariadb", "*", whyKVPrepared},
	{"kvlike-prepared-two", "connector-j", "*", whyKVPrepared},

	{"timeout", "*", "cached", whyBackendGone},
	{"timeout", "*", "passthrough", whyBackendGoneRelay},
	{"timeout-reconnect", "*", "*", whyBackendGoneRelay},
	{"kill", "*", "cached", whyBackendGone},
	{"kill", "*", "passthrough", whyBackendGoneRelay},
	{"kill-reconnect", "*", "*", whyBackendGoneRelay},
	{"abandon", "*", "*", whyAbandon},

	{"insert-select-rowcount", "*", "*", whyPrimaryKey},
	{"hit-diagnostics", "*", "cached", whyHit},
	{"found-rows", "*", "cached", "bug: sqlinfo walk.go walker.Enter does not reject SELECT SQL_CALC_FOUND_ROWS (SelectStmtOpts.CalcFoundRows), and cache.go session.cacheRead serves it without the backend, so the next FOUND_ROWS() answers for the statement before it"},
	{"is-view", "*", "cached", "bug: sqlinfo walk.go walker.table takes a view for a base table, so cache.go session.cacheRead caches reads of a view over information_schema (never to be cached, DESIGN.md) under the view's own generation, which CREATE TABLE does not bump: the new table stays unseen"},
	// Only the mariadb client asks for and shows the extended metadata.
	{"ext-types", "mariadb-cli", "*", "bug: handshake.go greeting.mask and setCaps zero MariaDB's extended capabilities, MARIADB_CLIENT_EXTENDED_METADATA among them, so MariaDB sends no format=json or type=inet6/uuid/point in the column definitions"},

	{"cache-var", "*", "*", whyPseudoVar},
	{"admin-status", "*", "*", whyAdmin},
	{"admin-flush", "*", "*", whyAdmin},
}
