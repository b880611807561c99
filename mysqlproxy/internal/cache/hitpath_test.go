package cache

import (
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// benchSession is a cache session over a relayed session that never
// connects, for measuring what a hit costs before the lookup.
func benchSession() (*Engine, *Session) {
	e := NewEngine(Config{}, sqlinfo.NewAnalyzer(sqlinfo.Options{ExactCap: 100000}), nil, cachepolicy.Default{TTL: 60e9}, nil, nil)
	rs := &relay.Session{}
	rs.Hello.User, rs.Hello.DB = "sbtest", "sbtest"
	c := &Session{e: e, s: rs}
	c.state.reset(45)
	return e, c
}

// BenchmarkHitPathAnalysisAndKey measures what a hit costs before the
// lookup: the analysis of a repeated statement, its dependencies, the
// policy decision and the key.
func BenchmarkHitPathAnalysisAndKey(b *testing.B) {
	srv, s := benchSession()
	p := append([]byte{3}, "SELECT c FROM sbtest1 WHERE id=5012"...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sql := string(p[1:])
		info := srv.Analyzer.Analyze(sql)
		deps := srv.deps(info, s.s.Hello.DB)
		s.q = cachepolicy.Query{SQL: sql, Digest: info.Digest, Tables: deps.tables, DB: s.s.Hello.DB, User: s.s.Hello.User, Cacheable: info.Cacheable}
		dec, _ := srv.Policy.Cache(&s.q)
		check := s.checkBytes(dec.Scope, p, sql, nil)
		_ = cacheKey(xxhash.Sum64(check))
	}
}

// BenchmarkHitPathNewLiterals is the same for a repeated shape with a new
// literal each time (a sysbench point select over random ids), which costs
// a normalization pass instead of a parse.
func BenchmarkHitPathNewLiterals(b *testing.B) {
	srv, s := benchSession()
	texts := make([][]byte, 50000)
	for i := range texts {
		texts[i] = append([]byte{3}, "SELECT c FROM sbtest1 WHERE id="+strconv.Itoa(i+100000)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := texts[i%len(texts)]
		sql := string(p[1:])
		info := srv.Analyzer.Analyze(sql)
		deps := srv.deps(info, s.s.Hello.DB)
		s.q = cachepolicy.Query{SQL: sql, Digest: info.Digest, Tables: deps.tables, DB: s.s.Hello.DB, User: s.s.Hello.User, Cacheable: info.Cacheable}
		dec, _ := srv.Policy.Cache(&s.q)
		check := s.checkBytes(dec.Scope, p, sql, nil)
		_ = cacheKey(xxhash.Sum64(check))
	}
}
