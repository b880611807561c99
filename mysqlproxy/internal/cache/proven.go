package cache

import (
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// A policy may put entries in the shared scope, where every account reads
// what any account stored. An account the server would refuse (no SELECT
// on a table, on a column, a revoked grant) must not read them: a shared
// entry is served to an account only once the server has answered that
// account the same statement shape since the last change of the global
// generation, which every GRANT, REVOKE and role change bumps. Until
// then the read goes to the server, which decides.

// provenMax bounds the proofs kept; past it they are all dropped, and
// each account proves its shapes again.
const provenMax = 1 << 16

// proof is an account, a statement shape and the global generation the
// account's read of the shape was answered under.
type proof struct {
	account, shape, global uint64
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

// sharedProof returns the proof a hit on ent, a shared entry, needs from
// this session for a read of shape in database db.
func (c *Session) sharedProof(shape string, ent *store.Entry) proof {
	d := xxhash.New()
	_, _ = d.WriteString(shape)
	_, _ = d.WriteString("\x00")
	_, _ = d.WriteString(c.db)
	p := proof{account: xxhash.Sum64String(c.scope()), shape: d.Sum64()}
	for i, name := range ent.Deps {
		if name != deps.Global {
			continue
		}
		if i < len(ent.Gens) {
			p.global = ent.Gens[i]
		}
		if i < len(ent.Local) {
			p.global = p.global*31 + ent.Local[i]
		}
		break
	}
	return p
}
