package relay

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Session state from the server. mycached asks the backend for
// CLIENT_SESSION_TRACK whatever the client asked, and sets the session's
// trackers to report every system variable, the current schema and any
// other change of state. Each OK packet then says what the statement
// changed, however it was changed (SET x=?, SET x=@v, EXECUTE IMMEDIATE,
// a stored routine, a failed multi-statement), in the values the server
// holds. The session keeps them in Vars; the client gets the changes it
// asked to track, or none.

// trackersSQL turns on every tracker mycached reads.
const trackersSQL = "SET SESSION session_track_system_variables='*', session_track_schema=ON, session_track_state_change=ON"

// clientTrackers are the trackers the client itself has on: what it gets
// of the session state changes.
type clientTrackers struct {
	list   string          // session_track_system_variables as the server gave it
	vars   map[string]bool // tracked system variables, lower case
	all    bool            // "*"
	schema bool
	state  bool
	tx     bool // session_track_transaction_info is not OFF
}

// setVars reads a session_track_system_variables value.
func (t *clientTrackers) setVars(v string) {
	t.list, t.all, t.vars = v, false, map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "*" {
			t.all = true
		}
		if n != "" {
			t.vars[n] = true
		}
	}
}

// ownTrackers are the values trackersSQL gives the trackers.
var ownTrackers = map[string]string{
	"session_track_system_variables": "*",
	"session_track_schema":           "ON",
	"session_track_state_change":     "ON",
}

// sql returns a statement that gives the backend session the client's
// trackers, or "" when their values are not known well enough to.
func (t *clientTrackers) sql() string {
	if t.vars == nil || strings.Trim(t.list, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_,* ") != "" {
		return ""
	}
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	return "SET SESSION session_track_system_variables='" + t.list + "', session_track_schema=" + onOff(t.schema) +
		", session_track_state_change=" + onOff(t.state)
}

// set applies a change of one of the session_track_* variables.
func (t *clientTrackers) set(name, v string) {
	on := strings.EqualFold(v, "ON") || v == "1"
	switch name {
	case "session_track_system_variables":
		t.setVars(v)
	case "session_track_schema":
		t.schema = on
	case "session_track_state_change":
		t.state = on
	case "session_track_transaction_info":
		t.tx = !strings.EqualFold(v, "OFF")
	}
}

// Tracked is what one response said of the session's state.
type Tracked struct {
	Vars map[string]string // system variables it changed
	// SchemaMoved says the server reported a current schema other than
	// the session's: it reports the schema after statements that did
	// not change it too (a CREATE USER after a read of mysql.user).
	SchemaMoved bool
	// Unseen says the state changed in ways no tracker shows: user
	// variables, prepared statements, temporary tables, the active roles.
	Unseen bool
}

// noteState applies the state changes of an OK packet to the session, and
// returns the part of them the client asked to track.
func (s *Session) noteState(raw []byte, t *Tracked) []byte {
	entries, err := wire.ParseState(raw)
	if err != nil {
		// Unreadable: the state may have changed in any way.
		t.Unseen = true
		return nil
	}
	var keep []wire.StateEntry
	sawVar, sawState := false, false
	for _, e := range entries {
		switch e.Type {
		case wire.TrackSystemVariables:
			name, rest, ok := wire.LenencString(e.Data)
			val, _, ok2 := wire.LenencString(rest)
			if !ok || !ok2 {
				t.Unseen = true
				continue
			}
			n := strings.ToLower(string(name))
			s.tsAsked = n == "timestamp"
			s.setVar(n, string(val))
			s.tsAsked = false
			if t.Vars == nil {
				t.Vars = map[string]string{}
			}
			t.Vars[n] = string(val)
			// Every binlogged write reports last_gtid, and sets no
			// state-change flag for it: a flag next to it alone is a
			// change no tracker shows (a trigger's temporary table).
			sawVar = sawVar || n != "last_gtid"
			if strings.HasPrefix(n, "session_track_") {
				s.trackersChanged = true
				s.clientTrack.set(n, string(val))
			}
			if s.clientTrack.all || s.clientTrack.vars[n] {
				keep = append(keep, e)
			}
		case wire.TrackSchema:
			if name, _, ok := wire.LenencString(e.Data); ok {
				moved := string(name) != s.Hello.DB
				t.SchemaMoved = t.SchemaMoved || moved
				s.Hello.DB = string(name)
				// The database the session was in already is reported
				// when stored code of another database ran (a trigger,
				// a routine) and came back, with the state-change flag,
				// whatever the code did: it explains no change.
				sawVar = sawVar || moved
			} else {
				t.Unseen = true
			}
			if s.clientTrack.schema {
				keep = append(keep, e)
			}
		case wire.TrackStateChange:
			sawState = true
			if s.clientTrack.state {
				keep = append(keep, e)
			}
		default:
			// GTIDs and transaction information, which mycached does not
			// ask for; pass them on.
			keep = append(keep, e)
		}
	}
	if sawState && !sawVar {
		t.Unseen = true
	}
	if s.handed {
		// The session has the client's own trackers: the client gets
		// what the server reported.
		keep = entries
	}
	switch {
	case !s.ClientTrack:
		return nil
	case len(entries) == 0 && (s.handed || s.clientTrack.state):
		// The flag with no changes: the statement turned the trackers
		// off (a procedure did) after changing state. The server sends
		// the same to a client whose state-change tracker was on.
		return []byte{}
	case len(keep) == 0:
		return nil
	}
	return wire.AppendState(nil, keep)
}

// setVar records a session variable's value as the server reports it.
func (s *Session) setVar(name, val string) {
	if s.Vars == nil {
		s.Vars = map[string]string{}
	}
	if name == "timestamp" && clockNow(val, s.sentAt, time.Now()) {
		// Within a moment of the clock: the clock's own (the session's
		// timestamp is not set), or a clock frozen a moment ago (SET
		// timestamp = UNIX_TIMESTAMP()), whose reads of the date stay on
		// that day. When the session's statement changed it (a tracker
		// reported it, or it is read again after a SET of it), a second
		// reading tells (settleTimestamp), before the session's next read
		// that the cache may answer; so does a reading of every variable
		// after stored code, which asks for it with the others.
		// Otherwise it is the clock's: the start values (init_connect's
		// SET timestamp keeps the cache off, from its text), and the
		// values read back when the trackers are restored.
		if !s.tsAsked {
			if _, ok := s.Vars[name]; ok {
				delete(s.Vars, name)
				s.VarsGen++
			}
			return
		}
		s.tsNear = val
		if s.Vars[name] != timestampUnsettled {
			s.Vars[name] = timestampUnsettled
			s.VarsGen++
		}
		if !slices.Contains(s.StaleVars, name) {
			s.StaleVars = append(s.StaleVars, name)
		}
		return
	}
	if name == "log_slow_query_time" {
		name = "long_query_time" // its other name
	}
	if old, ok := s.Vars[name]; ok && old == val {
		return
	}
	s.Vars[name] = val
	s.VarsGen++
}

// QueryWasSlow reports whether the server would have flagged a statement
// that took elapsed as slow (SERVER_QUERY_WAS_SLOW): longer than the
// session's long_query_time.
func (s *Session) QueryWasSlow(elapsed time.Duration) bool {
	if s.slow.gen != s.VarsGen+1 {
		s.slow.gen, s.slow.known = s.VarsGen+1, false
		if v, ok := s.Vars["long_query_time"]; ok {
			lqt, err := strconv.ParseFloat(v, 64)
			s.slow.after, s.slow.known = time.Duration(lqt*float64(time.Second)), err == nil
		}
	}
	return s.slow.known && elapsed > s.slow.after
}

// limitIn returns the number that follows name in a row of SHOW GRANTS.
func limitIn(row, name string) (int, bool) {
	_, rest, ok := strings.Cut(row, name)
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// timestampSQL reads @@timestamp in a statement of its own, before a
// reading of the variables (staleVarsSQL) that reads it again.
const timestampSQL = "SHOW VARIABLES WHERE Variable_name = 'timestamp'"

// timestampUnsettled is the session's timestamp, in Vars, while it is not
// known whether it is the clock's or a clock frozen near it.
const timestampUnsettled = "?"

// settleTimestamp tells, from first (timestampSQL) and the reading of the
// variables after it, whether a timestamp near the clock is the clock's:
// the server reports the clock as each statement's start, which two
// statements do not share; a timestamp that is set is the same in both.
func (s *Session) settleTimestamp(first ownResult) {
	if first.err != nil || s.Vars["timestamp"] != timestampUnsettled {
		return
	}
	for _, row := range first.rows {
		if len(row) != 2 || !strings.EqualFold(row[0], "timestamp") {
			continue
		}
		a, err := strconv.ParseFloat(row[1], 64)
		b, err2 := strconv.ParseFloat(s.tsNear, 64)
		if err != nil || err2 != nil {
			return
		}
		if a == b {
			s.Vars["timestamp"] = s.tsNear
		} else {
			delete(s.Vars, "timestamp")
		}
		s.VarsGen++
		s.StaleVars = slices.DeleteFunc(s.StaleVars, func(n string) bool { return n == "timestamp" })
	}
}

// clockNow reports whether a value of @@timestamp is the clock's own, as
// a session that did not set it reads it: within clockSlack of the time
// between sent, when the statement that read it was sent (zero: not
// known), and now. A loaded machine may take seconds to read the answer:
// the clock the server read is no older than the statement.
func clockNow(val string, sent, now time.Time) bool {
	f, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return false
	}
	at := f * 1e6 // microseconds
	from, to := now.UnixMicro(), now.UnixMicro()
	if !sent.IsZero() && sent.Before(now) {
		from = sent.UnixMicro()
	}
	slack := float64(clockSlack.Microseconds())
	return at > float64(from)-slack && at < float64(to)+slack
}

// clockSlack is how far from the clock a reading of it may be: the
// server's clock and this process's may differ a little.
const clockSlack = 2 * time.Second

// ownResult is the response to one of mycached's own statements.
type ownResult struct {
	err  error
	cols []string
	rows [][]string
	// charset is the character set number of the first column's
	// definition: for a string column, the collation results are
	// described in (which SET NAMES x COLLATE y sets and no variable
	// shows).
	charset uint16
	// limitsLifted says the statement ran under ownLimitsSQL.
	limitsLifted bool
}

// sessionAborted is the server's error ending a session whose
// init_connect failed, which it sends in answer to the session's first
// statement, mycached's own.
type sessionAborted struct{ packet []byte }

func (e sessionAborted) Error() string {
	return "relay: the server aborted the session (init_connect failed)"
}

// errOwn means a statement of mycached's own failed on the backend.
var errOwn = errors.New("relay: statement failed")

// ownQueries runs statements of mycached's own on the backend session,
// sent together and answered in order, before the client's next command.
// Their state changes are applied but not passed to the client.
func (s *Session) ownQueries(qs ...string) ([]ownResult, error) {
	s.backendWatch.stop()
	if s.dead.Load() {
		return nil, ErrBackendGone
	}
	s.sentAt = time.Now()
	for _, q := range qs {
		if _, err := s.Backend.WritePacket(append([]byte{mysql.COM_QUERY}, q...), 0); err != nil {
			return nil, BackendError{err}
		}
	}
	if err := s.Backend.W.Flush(); err != nil {
		return nil, BackendError{err}
	}
	if f := s.beforeOwnRead; f != nil {
		s.beforeOwnRead = nil
		if err := f(); err != nil {
			return nil, err
		}
	}
	out := make([]ownResult, len(qs))
	for i, q := range qs {
		out[i].limitsLifted = strings.HasPrefix(q, ownLimitsSQL)
	}
	var buf []byte
	read := func() ([]byte, error) {
		// The server's answers to mycached's own statements: the bound
		// on client commands has nothing to do with them.
		b, _, err := s.Backend.ReadPacket(buf, 1<<30)
		if err != nil {
			return nil, BackendError{err}
		}
		buf = b
		return b, nil
	}
	for i := range qs {
		p, err := read()
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, BackendError{errors.New("relay: empty response")}
		}
		switch p[0] {
		case mysql.OK_HEADER:
			if o, err := wire.ParseOKPacket(p, s.Track); err == nil {
				s.Status = o.Status
				if o.State != nil {
					var t Tracked
					s.noteState(o.State, &t)
				}
			}
			continue
		case mysql.ERR_HEADER:
			code, _, msg := wire.ParseErr(p)
			if code == mysql.ER_NEW_ABORTING_CONNECTION {
				// init_connect failed: the server ends the session.
				return nil, sessionAborted{packet: slices.Clone(p)}
			}
			out[i].err = errorf(code, msg)
			continue
		}
		n, _ := wire.Lenenc(p)
		for range n {
			c, err := read()
			if err != nil {
				return nil, err
			}
			if len(out[i].cols) == 0 {
				out[i].charset = columnCharset(c)
			}
			out[i].cols = append(out[i].cols, columnName(c))
		}
		if !s.DeprecateEOF() {
			if _, err := read(); err != nil {
				return nil, err
			}
		}
		for {
			r, err := read()
			if err != nil {
				return nil, err
			}
			if len(r) > 0 && r[0] == mysql.ERR_HEADER {
				out[i].err = errOwn
				break
			}
			if len(r) > 0 && wire.IsTerminator(r[0], len(r)) {
				if o, err := wire.ParseOKPacket(r, s.Track); err == nil && len(r) >= 7 {
					s.Status = o.Status
				} else if len(r) == 5 {
					s.Status, _ = wire.ParseEOF(r)
				}
				break
			}
			out[i].rows = append(out[i].rows, textRow(r))
		}
	}
	return out, nil
}

type ownError struct {
	code uint16
	msg  string
}

func (e ownError) Error() string { return "relay: server error " + e.msg }

func errorf(code uint16, msg string) error { return ownError{code, msg} }

// columnName reads the name of a column definition packet.
func columnName(p []byte) string {
	rest := p
	for i := 0; i < 4; i++ { // catalog, schema, table, org_table
		_, r, ok := wire.LenencString(rest)
		if !ok {
			return ""
		}
		rest = r
	}
	name, _, _ := wire.LenencString(rest)
	return string(name)
}

// What Temporary found of a table name.
const (
	TableUnknown   = iota // the server would not say
	TableReal             // a table or view of the database
	TableTemporary        // a temporary table of the session
)

// Temporary asks the server, in one round trip, whether each of names
// (database, table) is a temporary table of the session: MariaDB lists
// them nowhere, but SHOW CREATE TABLE shows the one a name reaches.
func (s *Session) Temporary(names [][2]string) ([]int, error) {
	qs := make([]string, len(names))
	for i, n := range names {
		qs[i] = "SHOW CREATE TABLE " + quoteIdent(n[0]) + "." + quoteIdent(n[1])
	}
	res, err := s.ownQueries(qs...)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(names))
	for i, r := range res {
		switch {
		case r.err != nil || len(r.rows) != 1 || len(r.rows[0]) < 2:
		case strings.HasPrefix(r.rows[0][1], "CREATE TEMPORARY TABLE"):
			out[i] = TableTemporary
		default:
			out[i] = TableReal
		}
	}
	return out, nil
}

// quoteIdent quotes an identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// columnCharset reads the character set number of a column definition
// packet, or 0.
func columnCharset(p []byte) uint16 {
	rest := p
	for i := 0; i < 6; i++ { // catalog, schema, table, org_table, name, org_name
		_, r, ok := wire.LenencString(rest)
		if !ok {
			return 0
		}
		rest = r
	}
	// The length of the fixed fields (0x0c), then the character set.
	if len(rest) < 3 {
		return 0
	}
	return binary.LittleEndian.Uint16(rest[1:])
}

// textRow reads a text protocol row (NULL as "").
func textRow(b []byte) []string {
	var row []string
	for len(b) > 0 {
		if b[0] == 0xfb {
			row = append(row, "")
			b = b[1:]
			continue
		}
		v, rest, ok := wire.LenencString(b)
		if !ok {
			return row
		}
		row = append(row, string(v))
		b = rest
	}
	return row
}

// setupSession prepares a freshly authenticated backend session: it turns
// the trackers on (learning first what the client itself tracks, when it
// asked for tracking) and learns the account and roles in force, and the
// values the session starts with. Its statements go in one round trip.
//
// turn is why the grants are read: TurnLogin for a login, a change of
// user; TurnUnknown after a reset or a refused change of user, which
// keep the privileges (and the role) the session had.
func (s *Session) setupSession(turn GrantsTurn) error {
	s.Vars, s.VarsGen = nil, s.VarsGen+1
	s.tracksPrepared = false // a new session, a reset or a change of user drops them
	if !s.Track {
		res, err := s.ownQueries(append([]string{startValuesSQL, showGrants}, setupTail...)...)
		if err != nil {
			return err
		}
		s.noteStartValues(res[0])
		s.GrantsTurn = turn
		s.setIdentity(res[1])
		return nil
	}
	var failed *startSnap
	if snap := s.opts.starts.get(); snap != nil && s.mariadb {
		done, err := s.setupFromSnap(turn, snap)
		if done || err != nil {
			return err
		}
		failed = snap
		s.Vars, s.VarsGen = nil, s.VarsGen+1
	}
	// The values are read before the trackers change, so that the
	// client's own trackers are among them; the limits (see varsSQL)
	// after, through the trackers.
	// The client's trackers are read whether or not it asked to track
	// state: a client that did not still reads them (SELECT
	// @@session_track_state_change), and gets its own.
	vars := s.varsSQL(startValuesTrackSQL)
	res, err := s.ownQueries(slices.Concat(vars[:1], []string{trackersSQL}, vars[1:], []string{showGrants}, setupTail)...)
	if err != nil {
		return err
	}
	res = res[:len(res)-len(setupTail)]
	s.clientTrack = clientTrackers{}
	s.noteStartValues(res[0])
	if res[0].err != nil {
		s.MarkVarsStale()
	}
	s.trackersChanged = false
	if res[1].err != nil {
		// A server without the trackers: state comes from parsing.
		s.Track = false
	}
	if res[0].err == nil && s.Track && s.mariadb && res[0].limitsLifted {
		s.opts.starts.note(res[0].rows, failed)
	}
	if oe, ok := res[0].err.(ownError); ok && oe.code == mysql.ER_MUST_CHANGE_PASSWORD && s.Track {
		// An expired password's session refuses every statement but
		// SET until the password changes: the client's trackers could
		// not be read, and ours were set. They go back to the client's,
		// which are the defaults there (init_connect does not run),
		// and state comes from parsing.
		if _, err := s.ownQueries(untrackSQL); err != nil {
			return err
		}
		s.Track = false
	}
	s.GrantsTurn = turn
	s.setIdentity(res[len(res)-1])
	return nil
}

// setupFromSnap is setupSession's statements with the start values
// that cannot be set to themselves taken from snap, which the statement
// turning the trackers on checks (startsnap.go). It reports false, having
// changed nothing the full set-up does not set again, when the check
// failed.
func (s *Session) setupFromSnap(turn GrantsTurn, snap *startSnap) (bool, error) {
	res, err := s.ownQueries(slices.Concat([]string{snap.trackersSQL, snap.selfSQL, showGrants}, setupTail)...)
	if err != nil {
		return false, err
	}
	if res[0].err != nil {
		return false, nil
	}
	s.trackersChanged = false
	s.clientTrack = clientTrackers{}
	grants := res[2]
	start := ownResult{rows: snap.rows}
	if grants.err == nil {
		// Described in the collation results are, as the full read is.
		start.charset = grants.charset
	}
	s.noteStartValues(start)
	if res[1].err != nil {
		s.MarkVarsStale()
	}
	if oe, ok := grants.err.(ownError); ok && oe.code == mysql.ER_MUST_CHANGE_PASSWORD {
		// As in setupSession.
		s.MarkVarsStale()
		if _, err := s.ownQueries(untrackSQL); err != nil {
			return true, err
		}
		s.Track = false
	}
	s.GrantsTurn = turn
	s.setIdentity(grants)
	return true, nil
}

// untrackSQL sets back the trackers trackersSQL sets to their defaults.
const untrackSQL = "SET SESSION session_track_system_variables=DEFAULT, session_track_schema=DEFAULT, session_track_state_change=DEFAULT"

// readDBAfterInit learns the session's database from the server when
// init_connect may have changed it, after a login, a reset or a change of
// user and their set-up: a USE there runs before the trackers are on
// (and after the login's OK, which names the database the client asked
// for), and only for an account without the privilege to skip it. A
// SHOW of no rows names the database in its column; then ROW_COUNT() is
// left at 0 again (see setupTail).
func (s *Session) readDBAfterInit() error {
	if !initConnectUses(s.Vars["init_connect"]) {
		return nil
	}
	res, err := s.ownQueries("SHOW TABLES WHERE 0", "DO 0")
	if err != nil {
		return err
	}
	var oe ownError
	switch r := res[0]; {
	case r.err == nil && len(r.cols) == 1 && strings.HasPrefix(r.cols[0], "Tables_in_"):
		s.Hello.DB = strings.TrimPrefix(r.cols[0], "Tables_in_")
	case errors.As(r.err, &oe) && oe.code == mysql.ER_NO_DB_ERROR:
		s.Hello.DB = ""
	}
	return nil
}

// initConnectUses reports whether an init_connect text may hold a USE.
func initConnectUses(text string) bool {
	for _, stmt := range strings.Split(text, ";") {
		if sqlinfo.FirstKeyword(stmt) == "USE" {
			return true
		}
	}
	return false
}

// Statements of mycached's own that read variables run under the
// session's limits, which may cut their answer short (sql_select_limit),
// refuse it (max_join_size, max_statement_time) or hide it. On MariaDB
// with the trackers on, SHOW VARIABLES runs with the limits lifted for
// it alone (ownLimitsSQL), which makes it report the lifted values of
// sql_select_limit and sql_big_selects; those two are read through the
// trackers instead, by setting each to itself (limitVarsSQL), which
// changes nothing.
const (
	ownLimitsSQL  = "SET STATEMENT max_statement_time=0, sql_select_limit=18446744073709551615, sql_big_selects=1 FOR "
	limitVarsSQL  = "SET @@session.sql_select_limit = @@session.sql_select_limit, @@session.sql_big_selects = @@session.sql_big_selects"
	limitVarNames = "sql_select_limit sql_big_selects"
)

// varsSQL returns the statements that read the variables show reads,
// the limits lifted where they can be; none for an empty show.
func (s *Session) varsSQL(show string) []string {
	switch {
	case show == "":
		return nil
	case !s.mariadb || !s.Track:
		return []string{show}
	}
	return []string{ownLimitsSQL + show, limitVarsSQL}
}

// restoreTrackers turns mycached's trackers back on after the client
// changed them itself. It first reads the client's trackers, which decide
// what the client gets of each state change from then on, and the values
// of the variables that change reads, which the client's trackers may
// have hidden meanwhile.
//
// With handed true, the session had the client's own trackers while the
// client's statement ran (handOverTrackers), and the values read are the
// client's. Otherwise it had mycached's, and a tracker at mycached's own
// value is taken to be the client's as it was, or as the client's
// statement reported it.
func (s *Session) restoreTrackers(handed bool) error {
	s.handed = false
	mine := s.clientTrack
	vars := s.varsSQL(startValuesTrackSQL)
	res, err := s.ownQueries(slices.Concat(vars[:1], []string{trackersSQL}, vars[1:])...)
	if err != nil {
		return err
	}
	s.trackersChanged = false
	// The OK of trackersSQL reported mycached's trackers as the client's.
	s.clientTrack = mine
	if res[0].err == nil {
		r := res[0]
		if !handed {
			r.rows = slices.DeleteFunc(r.rows, func(row []string) bool {
				return len(row) == 2 && ownTrackers[row[0]] == row[1]
			})
		}
		s.noteStartValues(r)
	}
	if res[1].err != nil {
		s.Track = false
	}
	return nil
}

// handOverTrackers gives the backend session the client's own trackers
// for a statement that may change them, which then runs as it would
// directly: it reads them back, or changes them to anything, with or
// without a report. It reports whether it did.
func (s *Session) handOverTrackers() (bool, error) {
	q := s.clientTrack.sql()
	if q == "" {
		return false, nil
	}
	res, err := s.ownQueries(q)
	if err != nil {
		return false, err
	}
	s.handed = res[0].err == nil
	return s.handed, nil
}

// showGrants names the account the server matched and, with them, the
// roles in force; SHOW rather than SELECT CURRENT_USER(), so that the
// server's Com_select counts only the client's statements.
const showGrants = "SHOW GRANTS"

// setupTail are the statements that end setupSession's, so that the
// session's diagnostics are the server's after a login, a change of user
// or a reset: ROW_COUNT() is 0 after each, as DO leaves it. FOUND_ROWS()
// is set to 0 by a SHOW of no rows, where SHOW VARIABLES left its own
// count: of the character sets, which the server lists in a fraction of
// the time it takes to list its variables. The server's own value there
// is not one mycached can restore:
// the server does not reset it for a new connection (0 on a fresh
// server, another connection's count later), and a change of user or a
// reset keeps the session's count, which only a SELECT could read (and
// the client would see it in Com_select).
var setupTail = []string{"SHOW CHARACTER SET WHERE 0", "DO 0"}

// startValuesSQL reads, when a session begins, the server's identity
// (ServerIdentity), the values the session starts with of the variables
// that can change what a read returns (the trackers report only changes,
// and a session started after a SET GLOBAL starts with other values than
// one started before), its isolation level, the largest packet the
// server accepts, how long it waits for a client that does not read
// (net_write_timeout), and what the server ran for it after the login
// (init_connect). startValuesTrackSQL reads the client's own trackers
// too.
const (
	startValuesSQL      = "SHOW VARIABLES WHERE Variable_name IN (" + startValueNames + ")"
	startValuesTrackSQL = "SHOW VARIABLES WHERE Variable_name IN (" + startValueNames + ", " +
		"'session_track_system_variables', 'session_track_schema', " +
		"'session_track_state_change', 'session_track_transaction_info')"
	startValueNames = "'tx_isolation', 'transaction_isolation', 'max_allowed_packet', " +
		"'sql_mode', 'time_zone', 'character_set_client', 'character_set_connection', " +
		"'character_set_results', 'collation_connection', 'default_week_format', " +
		"'div_precision_increment', 'lc_time_names', 'max_sort_length', " +
		"'group_concat_max_len', 'sql_select_limit', 'sql_auto_is_null', " +
		"'explicit_defaults_for_timestamp', 'old_mode', 'default_regex_flags', " +
		"'auto_increment_increment', 'auto_increment_offset', " +
		"'optimizer_switch', 'in_predicate_conversion_threshold', " +
		"'max_recursive_iterations', 'system_versioning_asof', 'block_encryption_mode', " +
		"'character_set_collations', 'standard_compliant_cte', 'max_join_size', " +
		"'sql_big_selects', 'old_passwords', 'sql_notes', 'init_connect', " +
		"'sql_log_bin', 'timestamp', 'completion_type', 'long_query_time', " +
		"'hostname', 'port', 'datadir', 'server_id', 'net_write_timeout', 'note_verbosity', 'log_bin', " +
		"'optimizer_trace', 'profiling'"
)

// ServerIdentity are the variables that tell the server a session reached
// from another: sidecars in front of different servers (shards, staging
// and production) may share a memcached, and must not serve one's rows
// for the other's.
var ServerIdentity = []string{"hostname", "port", "datadir", "server_id"}

// MarkVarsStale has the session read again, before its next cacheable
// read, every variable it read when it began: after a statement that may
// have changed any of them unseen. MariaDB reports no change made by an
// unscoped SET @@name, and the parse cannot see the ones run by EXECUTE
// or stored code.
func (s *Session) MarkVarsStale() {
	s.StaleVars = s.StaleVars[:0]
	for _, n := range strings.Split(startValueNames, ", ") {
		n = strings.Trim(n, "'")
		if n != "max_allowed_packet" {
			s.StaleVars = append(s.StaleVars, n)
		}
	}
	// Stored code may have turned the trackers off (noteVarsRead).
	s.StaleVars = append(s.StaleVars, slices.Sorted(maps.Keys(ownTrackers))...)
}

// noteStartValues notes what startValuesSQL read, and the collation its
// columns were described in.
func (s *Session) noteStartValues(r ownResult) {
	if r.err == nil && r.charset != 0 {
		s.setVar(sqlinfo.ResultsCollation, "#"+strconv.Itoa(int(r.charset)))
	}
	for _, row := range r.rows {
		if len(row) != 2 {
			continue
		}
		name := strings.ToLower(row[0])
		if strings.HasPrefix(name, "session_track_") {
			s.clientTrack.set(name, row[1])
			continue
		}
		if r.limitsLifted && slices.Contains(strings.Fields(limitVarNames), name) {
			continue // read through the trackers
		}
		if name == "max_allowed_packet" {
			// Read-only in a session: the server refuses a larger
			// command, and so does mycached, before buffering it. It
			// changes results too: a string function whose result would
			// be larger returns NULL, with a warning.
			if n, err := strconv.Atoi(row[1]); err == nil && n > 0 {
				s.maxAllowed = n
			}
		}
		s.setVar(name, row[1])
	}
}

// ClientTracksTransactions reports whether the client asked the server
// for its transactions' state in each OK packet.
func (s *Session) ClientTracksTransactions() bool { return s.ClientTrack && s.clientTrack.tx }

// AccountUser returns the user name of the account the server matched,
// or "" when it is not known.
func (s *Session) AccountUser() string {
	i := strings.LastIndexByte(s.Account, '@')
	if i < 0 {
		return ""
	}
	return s.Account[:i]
}

// AccountHost returns the host of the account the server matched, or ""
// when it is not known.
func (s *Session) AccountHost() string {
	i := strings.LastIndexByte(s.Account, '@')
	if i < 0 {
		return ""
	}
	return s.Account[i+1:]
}

// User returns the user name of the account the server matched, or the
// one the client gave when that is not known.
func (s *Session) User() string {
	if s.Account != "" {
		return s.AccountUser()
	}
	return s.Hello.User
}

// IsAccount reports whether the session's account is one of names, each
// a user name ("root", any host) or an account ("root@localhost").
func (s *Session) IsAccount(names []string) bool {
	if s.Account == "" {
		return false
	}
	user := s.AccountUser()
	for _, n := range names {
		if n == s.Account || (!strings.Contains(n, "@") && n == user) {
			return true
		}
	}
	return false
}

// staleVarsSQL returns the statement that reads the values of StaleVars
// from the server, or "", and empties StaleVars. A name that is not a
// plain variable name is dropped: only names the server accepted in a
// SET get there.
func (s *Session) staleVarsSQL() string {
	var b strings.Builder
	b.WriteString("SHOW VARIABLES WHERE Variable_name IN (")
	n := 0
	for _, v := range s.StaleVars {
		if v == "" || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + v + "'")
		n++
	}
	b.WriteString(")")
	s.StaleVars = s.StaleVars[:0]
	if n == 0 {
		return ""
	}
	return b.String()
}

// setIdentity reads SHOW GRANTS: the column is "Grants for user@host",
// and the rows are the account's grants, the roles granted to it, and
// the grants of the roles in force. The scope is the account and a hash
// of these rows as the server wrote them, at login and, where it
// differs, now: two sessions share entries only when the server grants
// them exactly the same, whatever the roles are called (a role's name
// may hold spaces or an @).
func (s *Session) setIdentity(r ownResult) {
	s.IdentityStale = false
	if r.err != nil || len(r.cols) != 1 || !strings.HasPrefix(r.cols[0], "Grants for ") {
		// Unknown: a scope of this connection's own, shared with nobody,
		// in this process or another (whose connections may have the
		// same address and number).
		var nonce [16]byte
		_, _ = rand.Read(nonce[:])
		s.Identity = "?" + hex.EncodeToString(nonce[:])
		s.Account = ""
		return
	}
	id := strings.TrimPrefix(r.cols[0], "Grants for ")
	s.Account = id
	rows := make([]string, 0, len(r.rows))
	s.QueryLimited = false
	for _, row := range r.rows {
		rows = append(rows, strings.Join(row, "\x00"))
		if n, ok := limitIn(rows[len(rows)-1], "MAX_QUERIES_PER_HOUR "); ok && n > 0 {
			s.QueryLimited = true
		}
	}
	slices.Sort(rows)
	h := sha256.New()
	for _, row := range rows {
		h.Write([]byte(row))
		h.Write([]byte{'\n'})
	}
	now := hex.EncodeToString(h.Sum(nil)[:16])
	// The grants the session saw at its turns count, not only those in
	// force now: after a REVOKE, a session that logged in, or used its
	// database, or set its role, before it may still read what a new
	// one may not, and the two must not share entries.
	turn := s.GrantsTurn
	s.GrantsTurn = TurnUnknown
	switch {
	case turn == TurnLogin || s.grantsGlobal == "":
		s.grantsGlobal, s.grantsDB, s.grantsUnknown = now, now, ""
	case turn == TurnRole:
		// SET ROLE fixes the privileges now, whatever stored code set
		// before: nothing of them is unknown any more.
		s.grantsGlobal, s.grantsDB, s.grantsUnknown = now, now, ""
	case turn == TurnUse:
		s.grantsDB = now
	case now != s.grantsGlobal || now != s.grantsDB:
		// Stored code may have set the role, or not: the scope keeps
		// both possibilities apart from every other session's.
		h := sha256.Sum256([]byte(s.grantsUnknown + "+" + now))
		s.grantsUnknown = hex.EncodeToString(h[:16])
	}
	s.Identity = id + "+" + s.grantsGlobal + "/" + s.grantsDB + "/" + s.grantsUnknown
}

// GrantsTurn is why a session's grants are read.
type GrantsTurn int

const (
	// TurnUnknown: after a statement that may have changed the roles
	// unseen, or may not.
	TurnUnknown GrantsTurn = iota
	// TurnLogin: the session began, or changed its user.
	TurnLogin
	// TurnRole: SET ROLE, which fixes the global privileges and those
	// on the current database.
	TurnRole
	// TurnUse: USE, which fixes the privileges on the database.
	TurnUse
)

// NoSchema reports whether the client set CLIENT_NO_SCHEMA: the server
// then reads a qualified table name, db.t, as t in the session's
// database.
func (s *Session) NoSchema() bool { return s.Caps&mysql.CLIENT_NO_SCHEMA != 0 }
