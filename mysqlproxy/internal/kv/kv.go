// Package kv parses and executes mycached's key/value pseudo-queries, which
// let any MySQL client read and write raw pairs in the cache tier.
//
// # Language
//
// Parse recognizes seven statement forms (keywords are case-insensitive,
// the trailing ";" is optional, and whitespace and comments may appear
// between tokens):
//
//	INSERT "key" = "value";          inserts or overwrites (OK, 1 row)
//	INSERT "key" = "value" TTL 60;   the same, expiring after 60 seconds
//	SELECT "key";                    rows (key, value); none if absent
//	SELECT "k1", "k2", ...;          one row per present key (one GetMulti)
//	DELETE "key";                    OK with 1 or 0 affected rows
//	SELECT *;                        every pair in the namespace
//	DROP;                            removes every pair; OK with the count
//
// In INSERT and DELETE a key or value is any MySQL literal a driver might
// produce: a string quoted with ' or " (with MySQL's escapes \0 \' \" \b
// \n \r \t \Z \\ \% \_ and doubled quotes), optionally preceded by a
// character set introducer such as _binary or by N; a hex literal X'4142'
// or 0x4142; a number (stored as written, so a go-sql-driver interpolated
// int64 works); or a ? placeholder. TTL takes a whole number of seconds,
// as a number, a quoted number or a ? placeholder; TTL 0 means no expiry.
//
// Prepared statements use the same text with ? placeholders, for example
// "INSERT ? = ? TTL ?", "SELECT ?, ?" or "DELETE ?". Parse counts them in
// Stmt.Params and Bind fills them from COM_STMT_EXECUTE's values.
//
// # The ambiguity with SQL
//
// INSERT "k" = ..., DELETE 'k' and a bare DROP are never valid SQL, so any
// quoting is accepted there. SELECT is different: SELECT "x" and
// SELECT 'x' are valid MySQL that return the string. The kv SELECT form is
// taken only when the statement is SELECT followed by one or more
// comma-separated double-quoted literals without an introducer, or ?
// placeholders, and nothing else but an optional ";". Everything else
// (SELECT 'x', SELECT _binary"x", SELECT "x" AS y, SELECT "x" FROM t,
// SELECT "a" "b", SELECT 1, SELECT * FROM t) is not kv and goes to MySQL.
// SELECT * alone is kv, since it is invalid SQL without FROM.
//
// Placeholders in SELECT are meant for COM_STMT_PREPARE: a prepared
// SELECT ? is answered by kv. A client-side interpolating driver
// (go-sql-driver with interpolateParams=true) turns SELECT ? with the
// argument "k" into SELECT 'k', which stays SQL; such clients must write
// the key literally in double quotes or prepare the statement.
//
// The same care applies where a server with sql_mode ANSI_QUOTES would read
// a double-quoted word as a table name: INSERT "t" VALUES ... and
// DELETE "t" FROM ... are left to MySQL.
//
// # Storage
//
// Exec stores each pair raw (the value bytes only) under Options.Prefix +
// namespace + key, so any memcached client reads the same bytes. Keys obey
// memcached's rules once namespaced: 1 to 250 bytes, no whitespace or
// control bytes. Every check happens before the Store is written, so an
// error never leaves a half-written value.
package kv

import (
	"context"
	"errors"
	"time"
)

// Op is the kind of a kv statement.
type Op uint8

// The kv statement kinds.
const (
	// OpInsert stores one pair: INSERT "key" = "value" [TTL n].
	OpInsert Op = iota + 1
	// OpSelect reads one or more keys: SELECT "k1", "k2".
	OpSelect
	// OpDelete removes one key: DELETE "key".
	OpDelete
	// OpSelectAll lists every pair in the namespace: SELECT *.
	OpSelectAll
	// OpDrop removes every pair in the namespace: DROP.
	OpDrop
)

// String returns the statement keyword(s) of op, for logs and metrics.
func (op Op) String() string {
	switch op {
	case OpInsert:
		return "INSERT"
	case OpSelect:
		return "SELECT"
	case OpDelete:
		return "DELETE"
	case OpSelectAll:
		return "SELECT *"
	case OpDrop:
		return "DROP"
	}
	return "unknown"
}

// Stmt is one parsed kv pseudo-query. A Stmt with Params > 0 must be
// bound with Bind before Exec. A Stmt is not modified after Parse returns
// it, so a prepared Stmt may be shared by concurrent executions.
type Stmt struct {
	// Op is the statement kind.
	Op Op
	// Keys are the unprefixed keys: one for INSERT and DELETE, one or more
	// for SELECT, none for SELECT * and DROP. An entry is nil while it is
	// a placeholder.
	Keys [][]byte
	// Value is the INSERT value (nil while it is a placeholder).
	Value []byte
	// TTL is the INSERT expiry; 0 means none.
	TTL time.Duration
	// Params is the number of ? placeholders still to bind.
	Params int

	// paramSlots says where each placeholder goes, in order.
	paramSlots []slot
	// extraKeys counts the keys of a SELECT past MaxSelectKeys, which
	// Parse reads but does not keep; such a SELECT is an error.
	extraKeys int
}

// MaxSelectKeys is the most keys one SELECT may name. Each key costs a few
// hundred bytes of memory while the statement runs, so without a bound a
// statement of a few MB could make mycached hold hundreds.
const MaxSelectKeys = 10000

// slot is the destination of one ? placeholder.
type slot struct {
	kind  slotKind
	index int // into Keys, for slotKey
}

type slotKind uint8

const (
	slotKey slotKind = iota
	slotValue
	slotTTL
)

// Store is what kv needs from the cache tier. Keys passed to it are fully
// namespaced (prefix included) and already valid memcached keys.
type Store interface {
	// GetMulti returns the values of keys, indexed like keys: nil for a
	// key that does not exist, and non-nil (if empty) for one that does.
	GetMulti(ctx context.Context, keys []string) ([][]byte, error)
	// Set stores val under key, expiring after ttl (0 = never). An
	// implementation whose backend rejects the value as too large should
	// return an error that wraps ErrTooLarge.
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// DeleteMulti removes keys and returns how many existed; on an error,
	// how many it is known to have removed.
	DeleteMulti(ctx context.Context, keys []string) (n int, err error)
	// Keys lists the keys that start with prefix.
	Keys(ctx context.Context, prefix string) ([]string, error)
	// ItemSizeMax is memcached's item size limit (its -I setting) in
	// bytes, or 0 when values are not limited (the in-process L1 tier).
	ItemSizeMax(ctx context.Context) int
}

// Defaults for Options.
const (
	// DefaultPrefix is the namespace prefix of every kv key.
	DefaultPrefix = "kv:"
	// DefaultMaxBytes is the largest value INSERT accepts (8 MiB).
	DefaultMaxBytes = 8 << 20
	// DefaultTimeout bounds each statement as a whole (1 s).
	DefaultTimeout = time.Second
)

// MaxKeyLen is memcached's key length limit, which applies to the key
// once the prefix and namespace are prepended.
const MaxKeyLen = 250

// ItemOverhead is the room kept for memcached's item header when checking
// a value against ItemSizeMax: key plus value must fit in ItemSizeMax
// minus ItemOverhead. It matches the allowance the store package keeps.
const ItemOverhead = 1024

// MaxTTL is the longest TTL accepted. memcached reads expirations over 30
// days as absolute Unix times in 32 bits, so far-future ones would wrap;
// pairs that should live longer are inserted without TTL.
const MaxTTL = 365 * 24 * time.Hour

// Options configures Exec. The zero value uses the defaults.
type Options struct {
	// Prefix is prepended to every key (after it, the namespace). Empty
	// means DefaultPrefix; it keeps kv pairs apart from query-cache
	// entries and generations.
	Prefix string
	// MaxBytes is the largest value INSERT accepts (--kv-max-bytes).
	// Zero or negative means DefaultMaxBytes.
	MaxBytes int
	// Timeout bounds each statement as a whole, from its first call to
	// the Store to its last (--kv-timeout): a DROP of many pairs, or a
	// SELECT * that walks every server, fails when it would take longer.
	// Zero or negative means DefaultTimeout.
	Timeout time.Duration
	// MaxReplyBytes bounds the values one SELECT of many keys, or one
	// SELECT *, returns together: the reply is held in memory whole.
	// Zero or negative means the larger of DefaultMaxReplyBytes and
	// MaxBytes.
	MaxReplyBytes int
	// Replies, when set, bounds the bytes the values of all SELECTs in
	// flight hold together (--fill-memory): a SELECT whose values come
	// to more than SmallReply bytes takes them from it as it reads them,
	// and fails with CodeOutOfResources when it has no room. The Result
	// holds them until its Release.
	Replies Budget
}

// Budget is a bound on bytes that many holders share.
type Budget interface {
	// Take reserves n bytes, all or none, and reports whether it did.
	Take(n int64) bool
	// Give returns n bytes that Take reserved.
	Give(n int64)
}

// SmallReply is the most bytes of values a SELECT reads without taking
// them from Options.Replies: a reply that small goes out through the
// session's write buffer.
const SmallReply = 64 << 10

// DefaultMaxReplyBytes is the default of Options.MaxReplyBytes.
const DefaultMaxReplyBytes = 64 << 20

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = max(DefaultMaxReplyBytes, o.MaxBytes)
	}
	return o
}

// Columns returns the column names of kv result sets: "key" and "value".
// Each call returns a new slice.
func Columns() []string { return []string{"key", "value"} }

// MySQL error codes and SQL states that kv results use.
const (
	// CodeParseError is ER_PARSE_ERROR, for malformed pseudo-queries.
	CodeParseError uint16 = 1064
	// StateParseError is the SQL state of CodeParseError.
	StateParseError = "42000"
	// CodeWrongArguments is ER_WRONG_ARGUMENTS, for a bad execute.
	CodeWrongArguments uint16 = 1210
	// CodeOutOfResources is ER_OUT_OF_RESOURCES, for a SELECT that
	// Options.Replies has no room for.
	CodeOutOfResources uint16 = 1041
	// CodeUnknown is ER_UNKNOWN_ERROR, for bad keys, oversized values and
	// store failures.
	CodeUnknown uint16 = 1105
	// StateGeneral is the SQL state HY000.
	StateGeneral = "HY000"
)

// Errors returned by Parse and Bind, and expected from Store. Their text
// is meant for the client and starts with "mycached: ".
var (
	// ErrSyntax means a statement is kv-shaped but malformed.
	ErrSyntax = errors.New("mycached: kv syntax error")
	// ErrParamCount means Bind got a different number of values than the
	// statement has placeholders.
	ErrParamCount = errors.New("mycached: wrong number of parameters for kv statement")
	// ErrNullParam means Bind got NULL for a key, value or TTL.
	ErrNullParam = errors.New("mycached: kv parameters must not be NULL")
	// ErrBadParam means Bind got a value its placeholder cannot take, such
	// as a TTL that is not a whole number of seconds.
	ErrBadParam = errors.New("mycached: bad kv parameter")
	// ErrUnbound means Exec got a statement whose placeholders are not
	// bound, such as SELECT ? sent as plain text.
	ErrUnbound = errors.New("mycached: kv statement has ? placeholders; send it as a prepared statement")
	// ErrTooLarge is what a Store wraps when its backend refuses a value
	// for its size.
	ErrTooLarge = errors.New("mycached: value too large for the cache tier")
	// ErrTooLargeForMemory is what a Store with no memcached wraps when
	// the in-process cache refuses a value.
	ErrTooLargeForMemory = errors.New("mycached: value too large for the in-process cache")
)

// Result is what to send to the client: a result set (IsRows, with
// Columns and Rows), an OK packet with Affected rows, or, when Code is
// not zero, an error packet (Code, State, Msg).
type Result struct {
	// Columns are the column names of a result set.
	Columns []string
	// Rows are the (key, value) rows of a result set.
	Rows [][2][]byte
	// IsRows says the result is a result set (possibly with no rows).
	IsRows bool
	// Affected is the affected-rows count of an OK packet.
	Affected uint64
	// Code is the MySQL error code; 0 means no error.
	Code uint16
	// State is the SQL state of an error.
	State string
	// Msg is the message of an error.
	Msg string

	// held bytes of the values are reserved in replies.
	held    int64
	replies Budget
}

// IsError reports whether r is an error packet.
func (r Result) IsError() bool { return r.Code != 0 }

// Release gives back what r's values hold of Options.Replies. Call it
// once, when r has been written.
func (r Result) Release() {
	if r.held > 0 {
		r.replies.Give(r.held)
	}
}

// ErrorResult turns an error from Parse or Bind into the Result to send:
// ER_PARSE_ERROR for ErrSyntax and ErrUnbound, ER_WRONG_ARGUMENTS for
// ErrParamCount, ErrNullParam and ErrBadParam, and ER_UNKNOWN_ERROR
// otherwise.
func ErrorResult(err error) Result {
	switch {
	case errors.Is(err, ErrSyntax), errors.Is(err, ErrUnbound):
		return errorResult(CodeParseError, StateParseError, err.Error())
	case errors.Is(err, ErrParamCount), errors.Is(err, ErrNullParam), errors.Is(err, ErrBadParam):
		return errorResult(CodeWrongArguments, StateGeneral, err.Error())
	}
	return errorResult(CodeUnknown, StateGeneral, err.Error())
}

func errorResult(code uint16, state, msg string) Result {
	return Result{Code: code, State: state, Msg: msg}
}
