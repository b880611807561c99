package cache

import (
	"strconv"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// TestUnjudgedProbes: a rejected shape's text reads outside its sample
// are relayed with their shape alone, but for one in admProbe, which the
// hook declines with the probe it drew kept for cacheRead (c.probed);
// a text of the sample is declined without drawing one.
func TestUnjudgedProbes(t *testing.T) {
	e, c := benchSession()
	c.db = c.s.Hello.DB
	c.s.Status = mysql.SERVER_STATUS_AUTOCOMMIT
	c.s.Vars = map[string]string{"tx_isolation": "REPEATABLE-READ", "transaction_isolation": "REPEATABLE-READ"}
	shape := e.Analyzer.Analyze("SELECT c FROM sbtest1 WHERE id=1")
	qs := e.Queries.stat(shape.Digest)
	hook := func(p []byte, sql string) func(*sqlinfo.Info) bool { return c.unjudgedHook(p, sql) }
	check := func(want string) (relayed, probes, inSample int) {
		t.Helper()
		for i := 2; i < 2002; i++ {
			sql := "SELECT c FROM sbtest1 WHERE id=" + strconv.Itoa(i)
			p := append([]byte{mysql.COM_QUERY}, sql...)
			_, only := e.Analyzer.AnalyzeShapeIn(sql, c.dialect(), hook(p, sql))
			switch {
			case c.sampled(p, sql, nil):
				if only || c.probed {
					t.Fatalf("%q of the sample: relayed with its shape %v, probe drawn %v", sql, only, c.probed)
				}
				inSample++
			case only:
				if c.unjudgedStat != qs {
					t.Fatalf("%q: relayed with another shape's counts", sql)
				}
				relayed++
			case c.probed:
				probes++
			case want == "rejected":
				t.Fatalf("%q of a rejected shape: neither relayed with its shape nor a probe", sql)
			}
		}
		return relayed, probes, inSample
	}
	if r, p, _ := check("admitted"); r != 0 || p != 0 {
		t.Fatalf("a shape not rejected: %d reads relayed with their shape, %d probes", r, p)
	}
	qs.adm.state.Store(admRejected)
	r, p, s := check("rejected")
	if n := r + p; p != n/admProbe || s == 0 || r == 0 {
		t.Errorf("%d reads relayed with their shape, %d probes, %d of the sample: want one probe in %d outside it", r, p, s, admProbe)
	}
}

// TestSampleByKeyText: a read with a trace id in a comment before or
// after it falls in its shape's sample exactly when the read without it
// does, so that their ghosts see each other.
func TestSampleByKeyText(t *testing.T) {
	_, c := benchSession()
	in := 0
	for i := range 400 {
		sql := "SELECT c FROM sbtest1 WHERE id=" + strconv.Itoa(i)
		want := c.sampled(append([]byte{mysql.COM_QUERY}, sql...), sql, nil)
		if want {
			in++
		}
		for _, v := range []string{"/* trace_id=" + strconv.Itoa(7*i) + " */ " + sql, sql + " -- " + strconv.Itoa(i*i)} {
			if got := c.sampled(append([]byte{mysql.COM_QUERY}, v...), v, nil); got != want {
				t.Errorf("%q in the sample: %v, want %v as %q", v, got, want, sql)
			}
		}
	}
	if in == 0 || in == 400 {
		t.Errorf("%d of 400 texts in the sample", in)
	}
}
