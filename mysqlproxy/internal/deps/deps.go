// Package deps names the generations that cached entries depend on, so
// that the reads that record them and every path that bumps them (a
// relayed write, the binlog follower, an admin command) agree on the
// names.
//
// A table "db.t" has three kinds of generation:
//
//   - "db.t", the range generation: every write to the table bumps it, and
//     every read that is not a primary-key lookup depends on it;
//   - "db.t!nk", the non-key generation: every write that is not known row
//     by row bumps it, and every primary-key lookup depends on it;
//   - "db.t#<key>", one per row: a write known row by row bumps the rows
//     it names, and a primary-key lookup depends on the rows it names.
//
// Above them, "db.*" covers a database and "*" everything: every entry
// depends on both, so a write that cannot be mapped to tables bumps one
// of them.
package deps

import "strings"

// Global is the generation every entry depends on.
const Global = "*"

// Unlogged is bumped, besides what they change, by the writes a sidecar
// knows the binlog will not show (a session's sql_log_bin off, an admin
// invalidation), so that sidecars whose hits trust their own follower
// hear of them (see the engine's unlogged watch). No entry depends on it,
// and no table can be named so: table names hold a dot.
const Unlogged = "~unlogged"

// Namer turns table names into dependency names. The zero value keeps
// names as given, which is right for a server with
// lower_case_table_names=0; Fold is for the other settings, under which
// the server compares names case-insensitively.
type Namer struct {
	// Fold lowercases database and table names.
	Fold bool
}

// Table returns the range generation's name of db.table.
func (n Namer) Table(db, table string) string {
	if n.Fold {
		db, table = strings.ToLower(db), strings.ToLower(table)
	}
	return escape(db) + "." + escape(table)
}

// DB returns the database-wide generation's name of db.
func (n Namer) DB(db string) string {
	if n.Fold {
		db = strings.ToLower(db)
	}
	return escape(db) + ".*"
}

// special are the bytes that structure a generation's name. A database
// or table name may hold any of them (`t1.a`.`b` is not `t1`.`a.b`), so
// each is written in a name as % and its two hex digits, as % itself is.
const special = ".%#!*"

// escape returns a database or table name with its special bytes
// escaped; most names have none, and are returned as they are.
func escape(name string) string {
	if !strings.ContainsAny(name, special) {
		return name
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if c := name[i]; strings.IndexByte(special, c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// NonKey returns the non-key generation's name of a table named by Table.
func NonKey(table string) string { return table + "!nk" }

// MaxRows bounds the row generations one write (a statement through a
// sidecar, a transaction the binlog follower applies) bumps in one table:
// past it the table's non-key generation, which every row lookup of the
// table depends on too, stands for them all, and memcached gets two keys
// for the table rather than thousands.
const MaxRows = 1000

// Row returns the generation name of one row of a table named by Table;
// key holds the row's primary-key values in key order, as decimal
// integers.
func Row(table string, key []string) string {
	return RowJoined(table, strings.Join(key, ","))
}

// RowJoined is Row with the key values already joined by commas.
func RowJoined(table, key string) string { return table + "#" + key }

// TableOf returns the table a generation belongs to: the range
// generation's name for a table's three kinds, Global for the others (a
// database's, Global, Unlogged).
func TableOf(dep string) string {
	if t, _, ok := strings.Cut(dep, "#"); ok {
		return t
	}
	if t, ok := strings.CutSuffix(dep, "!nk"); ok {
		return t
	}
	if strings.HasSuffix(dep, ".*") || !strings.Contains(dep, ".") {
		return Global
	}
	return dep
}
