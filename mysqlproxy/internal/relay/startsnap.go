package relay

import (
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"
)

// A session's set-up reads the values it starts with (startValuesSQL),
// and SHOW VARIABLES spends most of the set-up's time on the server: it
// formats every variable the server has before it filters them. Most of
// those values can be read instead by setting each variable to itself,
// which the trackers report at no cost. The others cannot be set by any
// session (the server's identity, max_allowed_packet, init_connect,
// sql_log_bin, the client's own trackers), but a session starts with
// their global values unless init_connect changed them. So a session
// that read them all leaves them, as a startSnap, to the sessions of the
// same server after it, which check them in the statement that turns
// the trackers on: that statement fails, and changes nothing, unless
// init_connect is empty and each of them still has the snapshot's
// value. A session whose check fails reads everything as before, one
// round trip later, and leaves a new snapshot.

// selfSettable are the start values any session may set to themselves,
// in the order they are set: sql_big_selects after max_join_size, whose
// setting turns it off. Every value a SET assigns is read before the
// first is assigned.
var selfSettable = strings.Fields("tx_isolation transaction_isolation sql_mode time_zone " +
	"character_set_client character_set_connection character_set_results collation_connection " +
	"default_week_format div_precision_increment lc_time_names max_sort_length group_concat_max_len " +
	"sql_select_limit sql_auto_is_null explicit_defaults_for_timestamp old_mode default_regex_flags " +
	"auto_increment_increment auto_increment_offset optimizer_switch in_predicate_conversion_threshold " +
	"max_recursive_iterations standard_compliant_cte max_join_size sql_big_selects old_passwords " +
	"sql_notes completion_type long_query_time net_write_timeout note_verbosity optimizer_trace profiling")

// snapMust are the values a snapshot must hold: a server that does not
// show them all is not one the check was written for.
var snapMust = strings.Fields("max_allowed_packet init_connect sql_log_bin hostname port datadir server_id " +
	"session_track_system_variables session_track_schema session_track_state_change")

// snapBools are the snapshot's variables that SHOW VARIABLES shows as
// ON or OFF and @@name reads as 1 or 0.
var snapBools = map[string]bool{"sql_log_bin": true, "session_track_schema": true, "session_track_state_change": true}

// startSnap is what a session's full read of its start values leaves to
// the next sessions.
type startSnap struct {
	rows        [][]string // name and value of the variables not set to themselves
	trackersSQL string     // trackersSQL, failing unless the rows hold
	selfSQL     string     // sets each settable variable the server has to itself
	// strikes counts the snapshots before this one, equal to it, whose
	// check failed: a check that fails against the values it was built
	// from is not one to pay for again.
	strikes int
}

// startSnaps holds the snapshot of the server behind one listener.
type startSnaps struct {
	cur atomic.Pointer[startSnap]
	off atomic.Bool // checks failed against their own values
}

// get returns the snapshot to check, or nil.
func (ss *startSnaps) get() *startSnap {
	if ss == nil || ss.off.Load() {
		return nil
	}
	return ss.cur.Load()
}

// note makes a snapshot of the start values a session read in full
// (rows, as SHOW VARIABLES gave them), where they can be checked:
// init_connect empty, and every value not set to itself printable ASCII,
// which reads the same in any character set. failed is the snapshot
// whose check the session failed, if it did.
func (ss *startSnaps) note(rows [][]string, failed *startSnap) {
	if ss == nil {
		return
	}
	snap := newStartSnap(rows)
	if snap == nil {
		ss.cur.Store(nil)
		return
	}
	if failed != nil && slices.EqualFunc(failed.rows, snap.rows, slices.Equal) {
		snap.strikes = failed.strikes + 1
		if snap.strikes >= 2 {
			ss.off.Store(true)
			return
		}
	}
	ss.cur.Store(snap)
}

// newStartSnap returns the snapshot of rows, or nil.
func newStartSnap(rows [][]string) *startSnap {
	snap := &startSnap{}
	have := map[string]bool{}
	var self, check []string
	// hold keeps name's value val in the snapshot, and checks that ref
	// (@@name or @@session.name) still reads it.
	hold := func(ref, name, val string) {
		snap.rows = append(snap.rows, []string{name, val})
		expr := "CONCAT(" + ref + ")"
		if snapBools[name] {
			expr = "IF(" + ref + ", 'ON', 'OFF')"
		}
		check = append(check, expr+" = X'"+hex.EncodeToString([]byte(val))+"'")
	}
	for _, n := range strings.Split(startValueNames, ", ") {
		n = strings.Trim(n, "'")
		i := slices.IndexFunc(rows, func(r []string) bool { return len(r) == 2 && strings.EqualFold(r[0], n) })
		if i < 0 {
			continue
		}
		name, val := strings.ToLower(rows[i][0]), rows[i][1]
		have[name] = true
		switch {
		case slices.Contains(selfSettable, name):
			continue
		case name == "timestamp":
			// The clock's, where init_connect is empty.
			continue
		case name == "init_connect" && val != "":
			return nil
		case strings.Trim(val, " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~") != "":
			return nil
		}
		hold("@@"+name, name, val)
	}
	for _, n := range []string{"session_track_system_variables", "session_track_schema",
		"session_track_state_change", "session_track_transaction_info"} {
		i := slices.IndexFunc(rows, func(r []string) bool { return len(r) == 2 && strings.EqualFold(r[0], n) })
		if i < 0 {
			continue
		}
		val := rows[i][1]
		if strings.Trim(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_,* ") != "" {
			return nil
		}
		have[n] = true
		// The session's own, which the trackers' SET replaces.
		hold("@@session."+n, n, val)
	}
	for _, n := range snapMust {
		if !have[n] {
			return nil
		}
	}
	for _, n := range selfSettable {
		if have[n] {
			self = append(self, "@@session."+n+" = @@session."+n)
		}
	}
	// init_connect runs before the set-up, and may set what no snapshot
	// shows (a frozen clock, the database): none may have run.
	check = append(check, "@@global.init_connect = ''")
	snap.trackersSQL = "SET SESSION session_track_system_variables='*', session_track_schema=IF(" +
		strings.Join(check, " AND ") + ", 'ON', 'changed'), session_track_state_change=ON"
	snap.selfSQL = "SET " + strings.Join(self, ", ")
	return snap
}
