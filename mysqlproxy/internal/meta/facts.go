package meta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// Facts are the server settings that decide whether the binlog can drive
// invalidation, and how.
type Facts struct {
	Version             string
	MariaDB             bool
	LogBin              bool
	BinlogFormat        string // ROW, MIXED or STATEMENT
	BinlogRowImage      string // FULL, MINIMAL, NOBLOB, FULL_NODUP
	BinlogRowMetadata   string // FULL, MINIMAL or NO_LOG; "" when the server has no such setting
	LowerCaseTableNames int
	ServerID            uint32
	HaveSSL             bool // the server accepts TLS
	// LogSlaveUpdates says the server writes to its own binlog what it
	// applies as a replica (or as a Galera node). Without it, those
	// writes never reach the binlog the follower reads.
	LogSlaveUpdates bool
	// Galera says the server is a Galera node (wsrep_on).
	Galera bool
	// GeneralLog says the server keeps its general query log
	// (general_log), and AuditReads that its server_audit plugin logs
	// reads (server_audit_logging, with events that include them):
	// neither sees a read the cache answers.
	GeneralLog, AuditReads bool
	// SlavePos is gtid_slave_pos when the facts were read: not empty
	// once the server has applied anything as a replica.
	SlavePos string
	// BinlogDoDB and BinlogIgnoreDB are the binlog's filters, as SHOW
	// MASTER STATUS lists them; FiltersUnknown says it could not be read.
	BinlogDoDB, BinlogIgnoreDB []string
	FiltersUnknown             bool
	// AutoIncIncrement is the global auto_increment_increment, which a
	// session may change for itself.
	AutoIncIncrement uint64
	// AutoIncLockMode is innodb_autoinc_lock_mode: under 0 and 1 the ids
	// of one multi-row insert are consecutive steps; under 2 they may
	// interleave with another statement's.
	AutoIncLockMode int
	// SettleDelay bounds how long after a transaction is in the binlog it
	// may still be invisible to other sessions. MariaDB writes the binlog
	// before the engine commit: normally microseconds, but semi-sync
	// replication waiting after the sync holds the commit for a replica's
	// acknowledgement, up to its timeout.
	SettleDelay time.Duration
	// Grants lists the privileges the account holds on *.*, upper case.
	Grants map[string]bool
	// Charsets maps the server's collation ids to their character sets,
	// lower case: the binlog names a statement's client charset by id.
	Charsets map[uint16]string
}

// defaultSettle is SettleDelay without semi-sync: generous against the
// microseconds a group commit takes between its binlog write and its
// engine commits.
const defaultSettle = 100 * time.Millisecond

// SettleDelayFor returns SettleDelay for the server's variables v (lower
// case names): with semi-sync waiting after the sync (AFTER_SYNC, the
// default), a commit is in the binlog before it is visible, for as long
// as a replica takes to acknowledge it, up to the timeout.
func SettleDelayFor(v map[string]string) time.Duration {
	d := defaultSettle
	if strings.EqualFold(v["rpl_semi_sync_master_enabled"], "ON") && !strings.EqualFold(v["rpl_semi_sync_master_wait_point"], "AFTER_COMMIT") {
		if ms, err := strconv.Atoi(v["rpl_semi_sync_master_timeout"]); err == nil {
			d = max(d, time.Duration(ms)*time.Millisecond+defaultSettle)
		}
	}
	return d
}

// semiSyncGlobals are the variables SettleDelayFor reads.
const semiSyncGlobals = "'rpl_semi_sync_master_enabled', 'rpl_semi_sync_master_wait_point', 'rpl_semi_sync_master_timeout'"

func (m *Meta) readFacts(ctx context.Context) error {
	rows, err := m.query(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata', 'lower_case_table_names', 'server_id', 'rpl_semi_sync_master_enabled', 'rpl_semi_sync_master_wait_point', 'rpl_semi_sync_master_timeout', 'auto_increment_increment', 'innodb_autoinc_lock_mode', 'have_ssl', 'log_slave_updates', 'wsrep_on', 'gtid_slave_pos', 'general_log', 'server_audit_logging', 'server_audit_events')")
	if err != nil {
		return fmt.Errorf("meta: reading the server's settings as %s: %w", m.opts.User, err)
	}
	v := map[string]string{}
	for _, r := range rows {
		v[strings.ToLower(r["variable_name"])] = r["value"]
	}
	f := Facts{
		Version:           v["version"],
		MariaDB:           strings.Contains(strings.ToLower(v["version"]), "mariadb"),
		LogBin:            isOn(v["log_bin"]),
		BinlogFormat:      strings.ToUpper(v["binlog_format"]),
		BinlogRowImage:    strings.ToUpper(v["binlog_row_image"]),
		BinlogRowMetadata: strings.ToUpper(v["binlog_row_metadata"]),
		SettleDelay:       defaultSettle,
	}
	f.LowerCaseTableNames, _ = strconv.Atoi(v["lower_case_table_names"])
	f.HaveSSL = strings.EqualFold(v["have_ssl"], "YES")
	f.LogSlaveUpdates = isOn(v["log_slave_updates"])
	f.Galera = isOn(v["wsrep_on"])
	f.GeneralLog = isOn(v["general_log"])
	f.AuditReads = isOn(v["server_audit_logging"]) && auditsReads(v["server_audit_events"])
	f.SlavePos = v["gtid_slave_pos"]
	f.AutoIncIncrement, _ = strconv.ParseUint(v["auto_increment_increment"], 10, 64)
	f.AutoIncLockMode = -1
	if n, err := strconv.Atoi(v["innodb_autoinc_lock_mode"]); err == nil {
		f.AutoIncLockMode = n
	}
	id, _ := strconv.ParseUint(v["server_id"], 10, 32)
	f.ServerID = uint32(id)
	f.SettleDelay = SettleDelayFor(v)
	if st, err := m.query(ctx, "SHOW MASTER STATUS"); err != nil {
		f.FiltersUnknown = true
	} else if len(st) == 1 {
		f.BinlogDoDB, f.BinlogIgnoreDB = dbList(st[0]["binlog_do_db"]), dbList(st[0]["binlog_ignore_db"])
	}
	f.Grants = map[string]bool{}
	if grants, err := m.query(ctx, "SHOW GRANTS"); err == nil {
		for _, g := range grants {
			for _, text := range g {
				parseGrant(text, f.Grants)
			}
		}
	}
	f.Charsets = map[uint16]string{}
	if cs, err := m.query(ctx, "SHOW COLLATION"); err == nil {
		for _, r := range cs {
			if id, err := strconv.ParseUint(r["id"], 10, 16); err == nil {
				f.Charsets[uint16(id)] = strings.ToLower(r["charset"])
			}
		}
	}
	m.facts.Store(&f)
	return nil
}

// dbList splits a comma-separated list of databases.
func dbList(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Logged reports whether the binlog surely holds the row changes of the
// tables of db: its filters (binlog_do_db, binlog_ignore_db) leave db
// in. A name the server may match with another case counts as left out.
func (f Facts) Logged(db string) bool {
	for _, d := range f.BinlogIgnoreDB {
		if strings.EqualFold(d, db) {
			return false
		}
	}
	return len(f.BinlogDoDB) == 0 || slices.Contains(f.BinlogDoDB, db)
}

// SeesTriggers reports whether the account may list every table's
// triggers (TRIGGER on *.*): without it, SHOW TRIGGERS leaves out those
// it may not see, and a table that shows none may have some.
func (f Facts) SeesTriggers() bool {
	return f.Grants["TRIGGER"] || f.Grants["ALL PRIVILEGES"] || f.Grants["ALL"]
}

func isOn(v string) bool { return strings.EqualFold(v, "ON") || v == "1" }

// parseGrant adds the privileges a "GRANT ... ON *.* TO ..." line gives.
func parseGrant(text string, into map[string]bool) {
	up := strings.ToUpper(text)
	if !strings.HasPrefix(up, "GRANT ") {
		return
	}
	on := strings.Index(up, " ON ")
	if on < 0 || !strings.HasPrefix(strings.TrimSpace(up[on+4:]), "*.*") {
		return
	}
	for _, p := range strings.Split(up[len("GRANT "):on], ",") {
		into[strings.TrimSpace(p)] = true
	}
}

// Problems says what keeps the binlog from driving invalidation, one
// sentence each, with what to do about it; none means it can.
func (f Facts) Problems() []string {
	var out []string
	if !f.MariaDB {
		// MySQL's GTIDs, its position variables and its grants differ;
		// the follower speaks MariaDB's replication dialect only.
		return append(out, fmt.Sprintf("the server (version %s) is not MariaDB: the binlog follower reads MariaDB's replication protocol only, so invalidation stays parse-based", orNone(f.Version)))
	}
	if !f.LogBin {
		out = append(out, "the server's binary log is off: start it with log_bin (log-bin=mariadb-bin in its config)")
	}
	if f.BinlogFormat != "ROW" {
		out = append(out, fmt.Sprintf("binlog_format is %s, not ROW: set binlog_format=ROW (SET GLOBAL binlog_format=ROW, and in the server's config)", orNone(f.BinlogFormat)))
	}
	switch f.BinlogRowImage {
	case "FULL", "MINIMAL", "NOBLOB", "FULL_NODUP", "":
	default:
		out = append(out, fmt.Sprintf("binlog_row_image is %s, whose row images may lack the primary key: set binlog_row_image=FULL", f.BinlogRowImage))
	}
	all := f.Grants["ALL PRIVILEGES"] || f.Grants["ALL"]
	if !all && !f.Grants["REPLICATION SLAVE"] && !f.Grants["REPLICA"] {
		out = append(out, "the account lacks REPLICATION SLAVE: GRANT REPLICATION SLAVE ON *.* TO it")
	}
	return out
}

// Advice says what would make invalidation finer or cheaper, without
// keeping the follower from running.
func (f Facts) Advice() []string {
	var out []string
	if f.BinlogRowMetadata != "FULL" && f.BinlogRowMetadata != "" {
		out = append(out, "binlog_row_metadata is "+f.BinlogRowMetadata+": primary keys are learned with SHOW CREATE TABLE instead of read from each event, and columns moved or renamed by DDL run with sql_log_bin=0 go unseen (writes then invalidate the wrong rows); binlog_row_metadata=FULL closes that gap")
	}
	all := f.Grants["ALL PRIVILEGES"] || f.Grants["ALL"]
	var lacks []string
	for _, g := range []string{"SELECT", "SHOW VIEW"} {
		if !all && !f.Grants[g] {
			lacks = append(lacks, g)
		}
	}
	if len(lacks) > 0 {
		g := strings.Join(lacks, " and ")
		out = append(out, "the account lacks "+g+" on *.*: without SELECT and SHOW VIEW mycached cannot read primary keys, views and foreign keys, and reads of such tables are not cached; GRANT "+strings.Join(lacks, ", ")+" ON *.* TO it")
	}
	if !all && !f.Grants["BINLOG MONITOR"] && !f.Grants["REPLICATION CLIENT"] && !f.Grants["SUPER"] {
		out = append(out, "the account lacks BINLOG MONITOR: GRANT BINLOG MONITOR ON *.* TO it")
	}
	if f.GeneralLog {
		out = append(out, "general_log is ON: a read answered from the cache never reaches the server, so the general log does not have it")
	}
	if f.AuditReads {
		out = append(out, "the server_audit plugin logs reads: a read answered from the cache never reaches the server, so the audit log does not have it; a policy that caches nothing for the audited accounts keeps all their reads in it")
	}
	if f.FiltersUnknown {
		out = append(out, "SHOW MASTER STATUS failed, so the binlog's filters (binlog_do_db, binlog_ignore_db) are unknown: writes to databases they leave out would not be seen; GRANT BINLOG MONITOR ON *.* TO the account")
	}
	return out
}

// Gaps says what the server changes without writing it to its binlog,
// which the follower runs despite: it cannot see those changes one by
// one, and invalidates everything instead, or cannot see them at all.
func (f Facts) Gaps() []string {
	var out []string
	if len(f.BinlogDoDB) > 0 || len(f.BinlogIgnoreDB) > 0 {
		out = append(out, fmt.Sprintf("the binlog leaves databases out (binlog_do_db=%s, binlog_ignore_db=%s): reads of their tables are not cached, and DDL, GRANT and REVOKE run by a session whose default database is left out are not seen (they stay unseen until the ttl of what they change, unless they pass through mycached); remove the filters from the server's config",
			orNone(strings.Join(f.BinlogDoDB, ",")), orNone(strings.Join(f.BinlogIgnoreDB, ","))))
	}
	if f.LogSlaveUpdates {
		return out
	}
	if f.Galera {
		out = append(out, "the server is a Galera node with log_slave_updates=OFF: the writes of the other nodes are not in its binlog, and cached reads of what they change stay stale until their ttl; set log_slave_updates=ON")
	}
	if f.SlavePos != "" {
		out = append(out, "the server replicates (gtid_slave_pos "+f.SlavePos+") with log_slave_updates=OFF: what it applies from its primary is not in its binlog, so each change of gtid_slave_pos invalidates every cached entry; set log_slave_updates=ON so that replicated writes invalidate only what they change")
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// GTIDBinlogPos returns the server's gtid_binlog_pos alone: a SHOW of
// one variable, which costs the server less than BinlogPos's.
func (m *Meta) GTIDBinlogPos(ctx context.Context) (string, error) {
	rows, err := m.query(ctx, "SHOW GLOBAL VARIABLES LIKE 'gtid\\_binlog\\_pos'")
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if strings.EqualFold(r["variable_name"], "gtid_binlog_pos") {
			return r["value"], nil
		}
	}
	return "", fmt.Errorf("meta: the server has no gtid_binlog_pos")
}

// BinlogPos returns the server's current GTID position (gtid_binlog_pos):
// every transaction visible to sessions at the time of the call is at or
// before it.
func (m *Meta) BinlogPos(ctx context.Context) (string, error) {
	pos, _, err := m.BinlogPosAndGlobals(ctx)
	return pos, err
}

// Resets returns how many RESET statements the server has run since it
// started (Com_reset), RESET MASTER among them, which replaces the binlog
// and numbers transactions from the start again; and when it started, to
// the second, which tells whether two counts are of the same run.
func (m *Meta) Resets(ctx context.Context) (n uint64, started int64, err error) {
	rows, err := m.query(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_reset', 'Uptime')")
	if err != nil {
		return 0, 0, err
	}
	var up uint64
	found := 0
	for _, r := range rows {
		v, err := strconv.ParseUint(r["value"], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("meta: %s = %q: %w", r["variable_name"], r["value"], err)
		}
		switch strings.ToLower(r["variable_name"]) {
		case "com_reset":
			n, found = v, found+1
		case "uptime":
			up, found = v, found+1
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("meta: the server has no Com_reset or Uptime")
	}
	return n, time.Now().Unix() - int64(up), nil
}

// BinlogEnd returns where the server's binlog ends (SHOW MASTER STATUS)
// and the GTID position its binlog holds there.
func (m *Meta) BinlogEnd(ctx context.Context) (file string, offset uint32, pos string, err error) {
	rows, err := m.query(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return "", 0, "", err
	}
	if len(rows) != 1 {
		return "", 0, "", errors.New("meta: SHOW MASTER STATUS showed no binlog")
	}
	file = rows[0]["file"]
	n, err := strconv.ParseUint(rows[0]["position"], 10, 32)
	if err != nil {
		return "", 0, "", fmt.Errorf("meta: SHOW MASTER STATUS: position %q: %w", rows[0]["position"], err)
	}
	pos, ok, err := m.BinlogPosAt(ctx, file, uint32(n))
	if err != nil {
		return "", 0, "", err
	}
	if !ok {
		return "", 0, "", fmt.Errorf("meta: no GTID position at %s:%d", file, n)
	}
	return file, uint32(n), pos, nil
}

// BinlogPosAt returns the GTID position the server's binlog holds at an
// offset of one of its files (BINLOG_GTID_POS), or false when the server
// has no such file, or no event begins at that offset.
func (m *Meta) BinlogPosAt(ctx context.Context, file string, offset uint32) (string, bool, error) {
	lit := "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(file) + "'"
	rows, err := m.query(ctx, fmt.Sprintf("SELECT IFNULL(BINLOG_GTID_POS(%s, %d), '-') AS pos", lit, offset))
	if err != nil || len(rows) == 0 {
		return "", false, err
	}
	pos := rows[0]["pos"]
	return pos, pos != "-", nil
}

// resultGlobals are sqlinfo.ResultGlobals as a list of SQL strings. A
// change of one invalidates everything. The binlog does not log SET
// GLOBAL; the follower's polls read them.
var resultGlobals = "'" + strings.Join(sqlinfo.ResultGlobals, "', '") + "'"

// ErrBinlogOff says the server runs without its binary log.
var ErrBinlogOff = errors.New("meta: the server's binary log is off (log_bin)")

// BinlogPosAndGlobals returns BinlogPos and, in the same round trip, the
// values of resultGlobals and semiSyncGlobals as one string, a
// name=value line each. On a server that does not log
// what it replicates, the string holds gtid_slave_pos too: the server
// changed rows the binlog does not show whenever it moves. A server
// running without its binary log gives ErrBinlogOff.
func (m *Meta) BinlogPosAndGlobals(ctx context.Context) (string, string, error) {
	names := "'gtid_binlog_pos', 'log_bin', " + resultGlobals + ", " + semiSyncGlobals
	if !m.Facts().LogSlaveUpdates {
		names += ", 'gtid_slave_pos'"
	}
	rows, err := m.query(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ("+names+")")
	if err != nil {
		return "", "", err
	}
	pos, found := "", false
	var globals []string
	for _, r := range rows {
		if strings.EqualFold(r["variable_name"], "gtid_binlog_pos") {
			pos, found = r["value"], true
			continue
		}
		if strings.EqualFold(r["variable_name"], "log_bin") {
			if strings.EqualFold(r["value"], "OFF") {
				// Its position says nothing of the binlog the follower
				// reads: empty, it is not a RESET.
				return "", "", ErrBinlogOff
			}
			continue
		}
		globals = append(globals, r["variable_name"]+"="+r["value"])
	}
	if !found {
		return "", "", fmt.Errorf("meta: the server has no gtid_binlog_pos")
	}
	slices.Sort(globals)
	return pos, strings.Join(globals, "\n"), nil
}

// auditsReads reports whether server_audit_events has the plugin log
// reads: all events when empty, or QUERY, QUERY_DML or TABLE among them.
func auditsReads(events string) bool {
	if strings.TrimSpace(events) == "" {
		return true
	}
	for e := range strings.SplitSeq(events, ",") {
		switch strings.ToUpper(strings.TrimSpace(e)) {
		case "QUERY", "QUERY_DML", "TABLE":
			return true
		}
	}
	return false
}
