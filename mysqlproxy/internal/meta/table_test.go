package meta

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
)

func TestGeneratedVaries(t *testing.T) {
	for _, c := range []struct {
		create, want string
		dated        bool
	}{
		{"CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `a` int(11) DEFAULT NULL\n) ENGINE=InnoDB", "", false},
		{"CREATE TABLE `t` (\n  `b` int(11) GENERATED ALWAYS AS (`a` + 1) VIRTUAL INVISIBLE COMMENT 'now() ) VIRTUAL',\n) ENGINE=InnoDB", "", false},
		{"CREATE TABLE `t` (\n  `c` varchar(10) GENERATED ALWAYS AS (concat('a)b\\')',`a`,\"x)\")) STORED,\n) ENGINE=InnoDB", "", false},
		{"CREATE TABLE `t` (\n  `n` datetime(6) GENERATED ALWAYS AS (current_timestamp(6)) VIRTUAL,\n) ENGINE=InnoDB", "generated:nondeterministic:current_timestamp", false},
		{"CREATE TABLE `t` (\n  `x` double GENERATED ALWAYS AS (rand() * `id`) VIRTUAL\n) ENGINE=InnoDB", "generated:nondeterministic:rand", false},
		{"CREATE TABLE `t` (\n  `x` int GENERATED ALWAYS AS (1 +\n", "generated-unreadable", false},
		// A comment that reads like a generated column is not one.
		{"CREATE TABLE `t` (\n  `a` int COMMENT '\n GENERATED ALWAYS AS (rand()) VIRTUAL'\n) ENGINE=InnoDB", "", false},
		// Nor does a name; and a name may hold a newline.
		{"CREATE TABLE `t` (\n  `a\n GENERATED ALWAYS AS (rand()) VIRTUAL` int\n) ENGINE=InnoDB", "", false},
		{"CREATE TABLE `t` (\n  `g\nx` double GENERATED ALWAYS AS (rand()) VIRTUAL\n) ENGINE=InnoDB", "generated:nondeterministic:rand", false},
		// A column of another type that reads a TIME as a date takes
		// today's date.
		{"CREATE TABLE `g` (\n  `x` int(11) DEFAULT NULL,\n  `d` datetime GENERATED ALWAYS AS (cast(sec_to_time(`x`) as datetime)) VIRTUAL,\n) ENGINE=InnoDB", "", true},
		{"CREATE TABLE `g` (\n  `s` varchar(8),\n  `d` varchar(30) GENERATED ALWAYS AS (concat(timediff(`s`,'01:00:00') + interval 0 day)) VIRTUAL\n) ENGINE=InnoDB", "", true},
		{"CREATE TABLE `g` (\n  `a` int COMMENT 'cast(sec_to_time(1) as datetime)',\n  `b` int GENERATED ALWAYS AS (`a` + 1) VIRTUAL\n) ENGINE=InnoDB", "", false},
	} {
		got, dated := generatedVaries(c.create, maskQuoted(c.create))
		if got != c.want || dated != c.dated {
			t.Errorf("generatedVaries(%q) = %q, %v, want %q, %v", c.create, got, dated, c.want, c.dated)
		}
	}
}

// TestCoWrites: what one statement was seen to write with a table is
// what a write to it bumps too; past the bound of names a table keeps,
// a write to it bumps everything rather than forget one.
func TestCoWrites(t *testing.T) {
	m := &Meta{}
	m.NoteCoWrites([]string{"d.t"}, []string{"d.t", "d.audit"})
	m.NoteCoWrites([]string{"d.t"}, []string{"d.big"})
	if got := m.CoWritten("d.t"); !slices.Equal(got, []string{"d.audit", "d.big"}) {
		t.Errorf("CoWritten(d.t) = %q", got)
	}
	if got := m.CoWritten("d.audit"); got != nil {
		t.Errorf("CoWritten(d.audit) = %q: a table a trigger writes does not write the trigger's table", got)
	}
	var many []string
	for i := range maxCoWritten + 1 {
		many = append(many, fmt.Sprintf("d.u%d", i))
	}
	m.NoteCoWrites([]string{"d.w"}, many)
	got := m.CoWritten("d.w")
	if len(got) > maxCoWritten+1 || !slices.Contains(got, deps.Global) {
		t.Errorf("CoWritten(d.w) past the bound: %d names, global %v", len(got), slices.Contains(got, deps.Global))
	}
	if !m.CoWritesSeen("d.t") {
		t.Error("d.t not seen after statements on it")
	}
	// DDL on a table, or DDL mycached cannot map (CREATE TRIGGER),
	// makes it to be seen again; what was learned stays meanwhile.
	m.Forget("d.t")
	if m.CoWritesSeen("d.t") || len(m.CoWritten("d.t")) != 2 {
		t.Errorf("after DDL on d.t: seen %v, co-written %q", m.CoWritesSeen("d.t"), m.CoWritten("d.t"))
	}
	m.NoteCoWrites([]string{"d.t"}, nil)
	m.ForgetAll()
	if m.CoWritesSeen("d.t") || m.CoWritesSeen("d.w") || len(m.CoWritten("d.t")) != 2 {
		t.Errorf("after ForgetAll: seen %v %v, co-written %q", m.CoWritesSeen("d.t"), m.CoWritesSeen("d.w"), m.CoWritten("d.t"))
	}
}

// TestCoWritesSnapshot: a snapshot restored into a new Meta gives the
// same answers; a table whose co-writes were learned but that DDL made
// unseen stays unseen; the version moves with every change, and with no
// change it stays.
func TestCoWritesSnapshot(t *testing.T) {
	m := &Meta{}
	m.NoteCoWrites([]string{"d.t"}, []string{"d.audit"})
	m.NoteCoWrites([]string{"d.plain"}, nil)
	m.NoteCoWrites([]string{"d.old"}, []string{"d.log"})
	m.Forget("d.old")
	v := m.CoWritesVersion()
	m.NoteCoWrites([]string{"d.t"}, []string{"d.audit"})
	if m.CoWritesVersion() != v {
		t.Error("the version moved with nothing new learned")
	}
	snap, sv := m.SnapshotCoWrites()
	if sv != v {
		t.Errorf("the snapshot's version %d, want %d", sv, v)
	}
	r := &Meta{}
	r.RestoreCoWrites(snap)
	for _, tb := range []string{"d.t", "d.plain", "d.old", "d.audit"} {
		if got, want := r.CoWritesSeen(tb), m.CoWritesSeen(tb); got != want {
			t.Errorf("restored: CoWritesSeen(%s) = %v, want %v", tb, got, want)
		}
		if got, want := r.CoWritten(tb), m.CoWritten(tb); !slices.Equal(got, want) {
			t.Errorf("restored: CoWritten(%s) = %q, want %q", tb, got, want)
		}
	}
	for _, change := range []func(){
		func() { r.NoteCoWrites([]string{"d.t"}, []string{"d.audit2"}) },
		func() { r.NoteCoWrites([]string{"d.new"}, nil) },
		func() { r.Forget("d.t") },
		func() { r.ForgetAll() },
	} {
		v := r.CoWritesVersion()
		change()
		if r.CoWritesVersion() == v {
			t.Error("the version did not move with a change")
		}
	}
}

// TestCoWritesPerEvent: what writes of one event teach is known by that
// event's key only, and DDL on the table forgets every event's.
func TestCoWritesPerEvent(t *testing.T) {
	m := &Meta{}
	m.NoteCoWrites(CoKeys("d.t", CoUpdate), []string{"d.t", "d.pu"})
	if got := m.CoWritten(CoKeys("d.t", CoUpdate)[0]); !slices.Equal(got, []string{"d.pu"}) {
		t.Errorf("update co-writes %q, want [d.pu] (not the table itself)", got)
	}
	if m.CoWritesSeen(CoKeys("d.t", CoInsert)[0]) || !m.CoWritesSeen(CoKeys("d.t", CoUpdate)[0]) {
		t.Error("an UPDATE's co-writes stand for another event, or not for its own")
	}
	if got := CoKeys("d.t", CoAll); len(got) != 3 {
		t.Errorf("CoKeys(CoAll) = %q", got)
	}
	m.Forget("d.t")
	if m.CoWritesSeen(CoKeys("d.t", CoUpdate)[0]) {
		t.Error("DDL on d.t left its UPDATE co-writes seen")
	}
}

// TestCoWritesPastTheBound: a writer whose co-writes find no room is not
// seen, so that its writes wait for the follower rather than bump too
// little.
func TestCoWritesPastTheBound(t *testing.T) {
	m := &Meta{coWrites: make(map[string]map[string]bool, maxCoWriters)}
	shared := map[string]bool{"d.x": true}
	for i := range maxCoWriters {
		m.coWrites["d.t"+strconv.Itoa(i)] = shared
	}
	m.NoteCoWrites([]string{"d.old#insert"}, nil)
	m.NoteCoWrites([]string{"d.new#insert", "d.old#insert"}, []string{"d.audit"})
	for _, w := range []string{"d.new#insert", "d.old#insert"} {
		if m.CoWritesSeen(w) {
			t.Errorf("%s is seen, but what it writes was not noted", w)
		}
	}
	m.NoteCoWrites([]string{"d.plain#update"}, nil)
	if !m.CoWritesSeen("d.plain#update") {
		t.Error("a writer that writes nothing else is not seen")
	}
}
