package sqlinfo

import (
	"strconv"
	"strings"
	"testing"
)

const hibernateLoad = "select user0_.id as id1_0_0_, user0_.email as email2_0_0_, user0_.name as name3_0_0_, " +
	"user0_.created as created4_0_0_ from users user0_ where user0_.id=?"

func BenchmarkAnalyzeExactHit(b *testing.B) {
	a := NewAnalyzer(Options{})
	q := "SELECT c FROM sbtest1 WHERE id=4242"
	a.Analyze(q)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.Analyze(q)
	}
}

func BenchmarkAnalyzeExactHitParallel(b *testing.B) {
	a := NewAnalyzer(Options{})
	q := "SELECT c FROM sbtest1 WHERE id=4242"
	a.Analyze(q)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.Analyze(q)
		}
	})
}

// benchDigestHit measures new literal values of a known shape. The exact
// memo is kept tiny so every text misses it.
func benchDigestHit(b *testing.B, prefix, suffix string) {
	a := NewAnalyzer(Options{ExactCap: 1})
	qs := make([]string, 1024)
	for i := range qs {
		qs[i] = prefix + strconv.Itoa(i*7919) + suffix
	}
	a.Analyze(qs[0])
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.Analyze(qs[i%len(qs)])
	}
}

// BenchmarkAnalyzeDigestHitRange is a shape without point values: new
// literals are answered from the digest memo.
func BenchmarkAnalyzeDigestHitRange(b *testing.B) {
	benchDigestHit(b, "SELECT c FROM sbtest1 WHERE id BETWEEN ", " AND 100000")
}

// BenchmarkAnalyzeDigestHitPrepared is a point lookup whose key is a ?
// placeholder, so the digest memo answers it.
func BenchmarkAnalyzeDigestHitPrepared(b *testing.B) {
	benchDigestHit(b, "SELECT c, ", " FROM sbtest1 WHERE id=?")
}

// BenchmarkAnalyzeNewPointSysbench is a point lookup with a new literal key:
// its values come from the literals, which the shape's template reads from
// the new text without a parse, found by the text's skeleton without a
// digest.
func BenchmarkAnalyzeNewPointSysbench(b *testing.B) {
	benchDigestHit(b, "SELECT c FROM sbtest1 WHERE id=", "")
}

func BenchmarkAnalyzeNewPointHibernate(b *testing.B) {
	benchDigestHit(b, hibernateLoad[:len(hibernateLoad)-1], "")
}

func BenchmarkAnalyzeNewPointIn100(b *testing.B) {
	q := "SELECT * FROM t WHERE id IN ("
	for i := 0; i < 99; i++ {
		q += strconv.Itoa(i) + ", "
	}
	benchDigestHit(b, q, ")")
}

func BenchmarkAnalyzeFullParseSysbench(b *testing.B) {
	a := NewAnalyzer(Options{ExactCap: 1, DigestCap: 1})
	qs := make([]string, 1024)
	for i := range qs {
		// A distinct table per text defeats the digest memo.
		qs[i] = "SELECT c FROM sbtest" + strconv.Itoa(i) + " WHERE id=5"
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.Analyze(qs[i%len(qs)])
	}
}

func BenchmarkFirstKeyword(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		FirstKeyword("/* trace=abc */ select c from sbtest1 where id=1")
	}
}

// BenchmarkAnalyzeInList60KB is a full analysis of a 60 KB point lookup,
// an IN list of about 8,000 keys: a text no memo answers (a table of its
// own) pays it on every miss.
func BenchmarkAnalyzeInList60KB(b *testing.B) {
	var list strings.Builder
	for j := 0; list.Len() < 60<<10; j++ {
		if j > 0 {
			list.WriteString(", ")
		}
		list.WriteString(strconv.Itoa(j))
	}
	qs := make([]string, 64)
	for i := range qs {
		qs[i] = "SELECT * FROM t" + strconv.Itoa(i) + " WHERE id IN (" + list.String() + ")"
	}
	a := NewAnalyzer(Options{ExactCap: 1, DigestCap: 1})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if info := a.Analyze(qs[i%len(qs)]); info.Point == nil {
			b.Fatal("no point")
		}
	}
}
