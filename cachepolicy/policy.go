// Package cachepolicy decides which statements mycached memoizes, for how
// long and for whom, and what else a write invalidates. The decision is a
// small Go type; a Policy fills it, either the built-in default or an
// operator's Lua scripts.
package cachepolicy

import "time"

// Scope says who may share a cached entry.
type Scope uint8

// The scopes.
const (
	// ScopeUser keys entries by user name: each user reads only what
	// their own queries stored.
	ScopeUser Scope = iota
	// ScopeShared lets every account read the entry once the server has
	// answered that account a read of the same statement shape (since the
	// last change of privileges): accounts the server would refuse are
	// sent to it, and get its error.
	ScopeShared
)

// String returns the scope as scripts name it.
func (s Scope) String() string {
	if s == ScopeShared {
		return "shared"
	}
	return "user"
}

// Consistency says how a hit on an entry is checked against writes; see
// the proxy's --consistency.
type Consistency string

// The consistency levels a decision may ask for. The empty one is the
// server's --consistency.
const (
	ConsistencyStrict  Consistency = "strict"  // check the shared generations on every hit
	ConsistencyBounded Consistency = "bounded" // check the sidecar's own view while its binlog follower is current
)

// Decision is what a policy says about one cacheable statement.
type Decision struct {
	TTL         time.Duration // how long an entry lives; > 0
	SoftTTL     time.Duration // past it one read per key reads afresh and replaces the entry, the others are served it meanwhile; 0 = none
	Scope       Scope
	MaxBytes    int64       // the largest response to store; 0 = the server's limit
	CacheEmpty  bool        // store results with no rows
	Depends     []string    // extra "db.table" names whose writes invalidate the entry
	Consistency Consistency // "" = the server's
	Admit       Admit       // "" = as the shape's hit ratio says
}

// Admit overrides the adaptive admission of a statement's shape, which
// stops looking up and storing the shapes whose entries are seldom hit.
type Admit string

// The admission overrides.
const (
	AdmitAdaptive Admit = ""       // as the shape's hits pay for its lookups
	AdmitAlways   Admit = "always" // look up and store whatever the hit ratio
	AdmitNever    Admit = "never"  // neither look up nor store: relay it
)

// Query is what a policy sees of a statement. The proxy reuses one Query
// per session, so a policy must not keep it past the call.
type Query struct {
	SQL        string
	Digest     string // normalized text: the statement's shape
	Kind       string // select, show, insert, ...
	Tables     []string
	DB         string
	User       string
	ClientAddr string
	Prepared   bool
	Params     []any
	// ParamsFunc, when Params is nil, gives them the first time a script
	// reads q.params, so that a statement whose script does not read
	// them costs no decoding; ParamsSize is about how many bytes they
	// hold (a call's memory allowance counts them).
	ParamsFunc    func() []any
	ParamsSize    int
	InTransaction bool
	Cacheable     bool
	WhyNot        string
	// PointLookup is true for a SELECT that pins its table's whole
	// primary key to constants; its entry is invalidated row by row.
	PointLookup bool
	// Keys are the primary-key values a point lookup names, one string a
	// row (the columns of a composite key joined by ",").
	Keys []string
}

// Write is what a policy sees of a confirmed write.
type Write struct {
	Tables []string
	Kind   string
	SQL    string
	DB     string
	User   string
}

// Policy decides. Implementations are safe for concurrent use.
type Policy interface {
	// Cache returns the decision for a statement the analysis allows to
	// be cached, and false for "don't cache".
	Cache(q *Query) (Decision, bool)
	// Invalidate returns extra tables ("db.table") that a confirmed write
	// invalidates beyond those it names.
	// Everything among the tables stands for every entry.
	Invalidate(w *Write) []string
}

// Default is the built-in policy: every cacheable SELECT for TTL, per user.
type Default struct {
	TTL time.Duration
}

// Cache implements Policy.
func (d Default) Cache(q *Query) (Decision, bool) {
	if !q.Cacheable || q.Kind != "select" {
		return Decision{}, false
	}
	return Decision{TTL: d.TTL, Scope: ScopeUser, CacheEmpty: true}, true
}

// Invalidate implements Policy.
func (Default) Invalidate(*Write) []string { return nil }

// None caches nothing.
type None struct{}

// Cache implements Policy.
func (None) Cache(*Query) (Decision, bool) { return Decision{}, false }

// Invalidate implements Policy.
func (None) Invalidate(*Write) []string { return nil }

// Everything, among the tables Invalidate returns, stands for every
// entry: an invalidate hook that failed may have named any table.
const Everything = "*"
