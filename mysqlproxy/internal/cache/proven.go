package cache

import (
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// A policy may put entries in the shared scope, where every account reads
// what any account stored. An account the server would refuse (no SELECT
// on a table, on a column, a revoked grant) must not read them: a shared
// entry is served to an account only once the server has answered that
// account the same statement shape since the last change of the global
// generation, which every GRANT, REVOKE and role change bumps, and since
// the last DDL this process relayed or its binlog follower applied (the
// columns SELECT * reads, or what a view selects, may have changed: the
// tables it forgot). Until then the read goes to the server, which
// decides.

// provenMax bounds the proofs kept; past it they are all dropped, and
// each account proves its shapes again.
const provenMax = 1 << 16

// proof is an account, a statement shape, and the global generation and
// the count of DDL seen that the account's read of the shape was answered
// under.
type proof struct {
	account, shape, global, schema uint64
}

// provenSet holds the proofs. Its methods are safe for concurrent use.
type provenSet struct {
	mu sync.RWMutex
	m  map[proof]struct{}
}

func (s *provenSet) has(p proof) bool {
	s.mu.RLock()
	_, ok := s.m[p]
	s.mu.RUnlock()
	return ok
}

func (s *provenSet) add(p proof) {
	s.mu.Lock()
	if s.m == nil || len(s.m) >= provenMax {
		s.m = make(map[proof]struct{})
	}
	s.m[p] = struct{}{}
	s.mu.Unlock()
}

// sharedProof returns the proof that this session's read of shape needs
// to be served a shared entry whose dependencies ds had the generations
// gens (and, with memcached, this process's local ones).
func (c *Session) sharedProof(shape string, ds []string, gens, local []uint64) proof {
	d := xxhash.New()
	_, _ = d.WriteString(shape)
	_, _ = d.WriteString("\x00")
	_, _ = d.WriteString(c.db)
	p := proof{account: xxhash.Sum64String(c.scope()), shape: d.Sum64(), schema: c.e.schemaGen()}
	for i, name := range ds {
		if name != deps.Global {
			continue
		}
		if i < len(gens) {
			p.global = gens[i]
		}
		if i < len(local) {
			p.global = p.global*31 + local[i]
		}
		break
	}
	return p
}

// shapeOf is the statement shape a proof is for: the digest, with the
// names of sql as written, or the entry's whole check text (one
// statement) for a statement with no digest, or one that the session's
// dialect reads otherwise than the default (plain is false). The digest
// alone drops what decides privileges as well as values: the case of
// names (tables and databases are case-sensitive on most servers), and,
// under ANSI_QUOTES or NO_BACKSLASH_ESCAPES, which words are names at all
// (its normalizer reads "x" as a string, and \' as an escape).
func shapeOf(info *sqlinfo.Info, sql string, plain bool, check []byte) string {
	if info.Digest != "" && plain {
		return info.Digest + "\x00" + sqlinfo.Names(sql)
	}
	return "\x01" + string(check)
}

// proofShape is shapeOf for a read of sql by this session.
func (c *Session) proofShape(info *sqlinfo.Info, sql string, check []byte) string {
	return shapeOf(info, sql, c.dialect().PlainFor(sql), check)
}

// entryProof is sharedProof for a hit on ent.
func (c *Session) entryProof(shape string, ent *store.Entry) proof {
	return c.sharedProof(shape, ent.Deps, ent.Gens, ent.Local)
}

// relayProving relays a read this session's account has not proven it
// may make, and records the proof when the server answers it.
func (c *Session) relayProving(p []byte, pr proof) error {
	err := c.s.RelayMode(p, relay.ModeResult)
	if err == nil && c.s.Last.Kind == relay.RespResultSet && !c.s.Last.Failed() {
		c.e.proven.add(pr)
	}
	return err
}
