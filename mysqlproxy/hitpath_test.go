package mysqlproxy

import (
	"strconv"
	"testing"

	"github.com/mycached/mycached/cachepolicy"
)

// BenchmarkHitPathAnalysisAndKey measures what a hit costs before the
// lookup: the analysis of a repeated statement, its dependencies, the
// policy decision and the key.
func BenchmarkHitPathAnalysisAndKey(b *testing.B) {
	srv, err := NewServer(Config{Backend: "127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	s := &session{srv: srv}
	s.hello.user, s.hello.db = "sbtest", "sbtest"
	s.state.reset(45)
	p := append([]byte{3}, "SELECT c FROM sbtest1 WHERE id=5012"...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sql := string(p[1:])
		info := srv.analyzer.Analyze(sql)
		deps := srv.deps(info, s.hello.db)
		s.q = cachepolicy.Query{SQL: sql, Digest: info.Digest, Tables: deps.tables, DB: s.hello.db, User: s.hello.user, Cacheable: info.Cacheable}
		dec, _ := srv.policy.Cache(&s.q)
		check := s.checkBytes(dec.Scope, p, nil)
		_ = cacheKey(check)
	}
}

// BenchmarkHitPathNewLiterals is the same for a repeated shape with a new
// literal each time (a sysbench point select over random ids), which costs
// a normalization pass instead of a parse.
func BenchmarkHitPathNewLiterals(b *testing.B) {
	srv, err := NewServer(Config{Backend: "127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	s := &session{srv: srv}
	s.hello.user, s.hello.db = "sbtest", "sbtest"
	s.state.reset(45)
	texts := make([][]byte, 50000)
	for i := range texts {
		texts[i] = append([]byte{3}, "SELECT c FROM sbtest1 WHERE id="+strconv.Itoa(i+100000)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := texts[i%len(texts)]
		sql := string(p[1:])
		info := srv.analyzer.Analyze(sql)
		deps := srv.deps(info, s.hello.db)
		s.q = cachepolicy.Query{SQL: sql, Digest: info.Digest, Tables: deps.tables, DB: s.hello.db, User: s.hello.user, Cacheable: info.Cacheable}
		dec, _ := srv.policy.Cache(&s.q)
		check := s.checkBytes(dec.Scope, p, nil)
		_ = cacheKey(check)
	}
}
