package sqlinfo

import (
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fullParse analyses sql with a fresh Analyzer, so without any memo.
func fullParse(sql string) *Info {
	return NewAnalyzer(Options{}).Analyze(sql)
}

// sameAnalysis reports whether two analyses say the same, whichever
// shape each was made from.
func sameAnalysis(a, b *Info) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Shape, y.Shape = nil, nil
	return reflect.DeepEqual(&x, &y)
}

// sameShape reports whether a and b agree in every field of a shape
// (AnalyzeShapeIn): all but a text's own Point and Insert rows.
func sameShape(a, b *Info) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Point, y.Point, x.Insert, y.Insert = nil, nil, nil, nil
	return sameAnalysis(&x, &y)
}

// checkShapeIn checks that the shape AnalyzeShapeIn answers for sql, if
// any, agrees with want, sql's full analysis, and that it answers where
// the skeleton memo does. (Where it does not, it analyses sql in full.)
func checkShapeIn(t *testing.T, a *Analyzer, sql string, want *Info) {
	t.Helper()
	hit, _ := viaSkeleton(a, sql)
	_, exact := a.exact.get(sql) // which answers first, with the text's own
	shape, ok := a.AnalyzeShapeIn(sql, DialectOf("", "utf8mb4"), func(*Info) bool { return true })
	if hit && !exact && !ok {
		t.Errorf("%q: the skeleton memo answers it, AnalyzeShapeIn gives no shape", sql)
	}
	if ok && !sameShape(shape, want) {
		t.Errorf("%q: AnalyzeShapeIn gave %+v, want %+v", sql, *shape, *want)
	}
}

// viaTemplate reports whether a's digest memo answers sql by substituting
// its literals into a template, without parsing.
func viaTemplate(a *Analyzer, sql string) bool {
	digest, ok := normalize(sql)
	if !ok {
		return false
	}
	sh, ok := a.digest.get(digest)
	if !ok {
		return false
	}
	var sig []byte
	if hasNoCacheHint(sql) {
		sig = append(sig, '+')
	}
	sig = appendShape(sig, sql)
	sc := &textScan{}
	if !scanText(sc, sql) {
		return false
	}
	for i, s := range sh.sigs {
		if s == string(sig) && sh.tmpls[i] != nil {
			if _, ok := sh.tmpls[i].instantiate(sh.infos[i], sql, sc); ok {
				return true
			}
		}
	}
	return false
}

// viaSkeleton reports whether a's skeleton memo answers sql, without a
// digest, and whether it does so through a template.
func viaSkeleton(a *Analyzer, sql string) (hit, tmpl bool) {
	sc := &textScan{}
	if !scanText(sc, sql) || !skelKey(sc, sql) {
		return false, false
	}
	e, ok := a.skels.get(string(sc.key))
	if !ok {
		return false, false
	}
	_, ok = e.answer(sql, sc)
	return ok, ok && e.tmpl != nil
}

// litGen writes random literals for the verbs of a text pattern:
//
//	%I  an unsigned integer, sometimes huge or with leading zeros
//	%i  a small integer, so that IN items repeat
//	%N  an integer, sometimes negative (written -5 or - 5)
//	%D  a decimal
//	%F  a float with an exponent
//	%S  a single-quoted string with quotes and escapes
//	%Q  a double-quoted string
//	%X  an odd literal the template does not read (hex, bit, introducers)
//	%L  a list of one to four small integers
//	%_  nothing, a space, a newline or a comment
type litGen struct{ r *rand.Rand }

func (g litGen) fill(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' || i+1 == len(pattern) {
			b.WriteByte(pattern[i])
			continue
		}
		i++
		switch pattern[i] {
		case 'I':
			b.WriteString(g.uint())
		case 'i':
			b.WriteString(strconv.Itoa(g.r.Intn(5)))
		case 'N':
			switch g.r.Intn(3) {
			case 0:
				b.WriteString("-")
			case 1:
				b.WriteString("- ")
			}
			b.WriteString(g.uint())
		case 'D':
			b.WriteString(g.decimal())
		case 'F':
			b.WriteString(g.float())
		case 'S':
			b.WriteString(g.str('\''))
		case 'Q':
			b.WriteString(g.str('"'))
		case 'X':
			odd := []string{"X'41'", "x'4142'", "0x41", "0b101", "b'1'", "_utf8mb4'a'", "_binary 'ab'",
				"N'a'", "TRUE", "false", "NULL", "'a' 'b'", "'a'\n'b'", "DATE '2020-01-01'", "1e", "0x"}
			b.WriteString(odd[g.r.Intn(len(odd))])
		case 'L':
			n := 1 + g.r.Intn(4)
			for k := 0; k < n; k++ {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(g.r.Intn(6)))
			}
		case '_':
			seps := []string{"", " ", "\n", "/* x */", " -- c\n"}
			b.WriteString(seps[g.r.Intn(len(seps))])
		default:
			b.WriteByte('%')
			b.WriteByte(pattern[i])
		}
	}
	return b.String()
}

func (g litGen) uint() string {
	switch g.r.Intn(10) {
	case 0:
		return "0"
	case 1:
		return "00" + strconv.Itoa(g.r.Intn(1000))
	case 2:
		return strconv.FormatUint(g.r.Uint64(), 10)
	case 3:
		return "123456789012345678901234567890"[:19+g.r.Intn(11)]
	case 4:
		return "9223372036854775808"
	default:
		return strconv.Itoa(g.r.Intn(100000))
	}
}

func (g litGen) decimal() string {
	switch g.r.Intn(4) {
	case 0:
		return "." + strconv.Itoa(g.r.Intn(100))
	case 1:
		return strconv.Itoa(g.r.Intn(100)) + "."
	default:
		return strconv.Itoa(g.r.Intn(1000)) + "." + strconv.Itoa(g.r.Intn(1000))
	}
}

func (g litGen) float() string {
	exp := []string{"e", "E", "e+", "e-", "E-"}
	return strconv.Itoa(g.r.Intn(100)) + exp[g.r.Intn(len(exp))] + strconv.Itoa(g.r.Intn(20))
}

func (g litGen) str(q byte) string {
	pieces := []string{"a", "b", "Z", " ", "é", "日本", "%", "_", `\\`, `\n`, `\t`, `\0`, `\Z`, `\%`, `\_`,
		`\x`, `\'`, `\"`, "''", `""`, "`", "?", "--", "/*", "#", "\xff", "\x00", "\n"}
	var b strings.Builder
	b.WriteByte(q)
	n := g.r.Intn(6)
	for k := 0; k < n; k++ {
		p := pieces[g.r.Intn(len(pieces))]
		if p == "''" && q != '\'' || p == `""` && q != '"' {
			p = "q"
		}
		b.WriteString(p)
	}
	b.WriteByte(q)
	return b.String()
}

// templatePatterns are the shapes of the differential test. fast reports
// patterns whose texts must mostly take the template path.
var templatePatterns = []struct {
	pattern string
	fast    bool
}{
	{"SELECT c FROM sbtest1 WHERE id=%I", true},
	{"SELECT c FROM sbtest1 WHERE id%_=%_%N", false},
	{"select user0_.id as id1_0_0_, user0_.email as email2_0_0_ from users user0_ where user0_.id=%I", true},
	{"SELECT * FROM t WHERE name = %S", true},
	{"SELECT * FROM t WHERE name = %Q", true},
	{"SELECT * FROM t WHERE name = %S COLLATE utf8mb4_bin", true},
	{"SELECT * FROM t WHERE id = %D", true},
	// A float's exponent makes it a word of the shape signature, which
	// splits the digest memo per value: such texts are parsed in full.
	{"SELECT * FROM t WHERE id = %F", false},
	{"SELECT * FROM t WHERE id = %X", false},
	{"SELECT * FROM t WHERE id IN (%I, %I, %I)", true},
	{"SELECT * FROM t WHERE id IN (%i, %i, %i)", false},
	{"SELECT * FROM t WHERE id IN (%L)", false},
	{"SELECT * FROM t WHERE id IN (%L) AND k NOT IN (%L)", false},
	{"SELECT * FROM t WHERE id IN (%i, %i) AND k NOT IN (%i, %i, %i)", false},
	{"SELECT * FROM t WHERE a = %I AND b = %S", true},
	{"SELECT * FROM t WHERE a = %N AND b IN (%N, %N) AND c > %I LIMIT 10", false},
	{"SELECT * FROM t WHERE (a, b) IN ((%I, %S), (%I, %S))", true},
	{"SELECT * FROM t WHERE (a, b) = (%i, %i) AND a = %i", false},
	{"SELECT * FROM t WHERE id = %i AND id = %i", false},
	{"SELECT * FROM t WHERE id = -(-%I) AND k = %X", false},
	{"SELECT * FROM t WHERE id = %I AND k = ?", true},
	{"SELECT * FROM t WHERE t.id = %I AND t.1c = %I", true},
	{"/* note %I */ SELECT * FROM t WHERE id = %I # %S\n", true},
	{"SELECT /*+ no_cache */ * FROM t WHERE id = %I", true},
	{"SELECT * FROM t WHERE id = %I AND v LIKE %S ORDER BY 1", true},
	{"UPDATE t SET v = %S, w = w + %I WHERE id = %I", true},
	{"UPDATE t SET v = %S WHERE a = %I AND b IN (%I, %I)", true},
	{"DELETE FROM t WHERE id = %I AND k = %D", true},
	{"DELETE FROM t WHERE id IN (%L)", false},
	{"INSERT INTO t (id, c, d) VALUES (%I, %S, %F), (%N, %Q, NULL)", false},
	{"INSERT INTO t (id, c, d) VALUES (%I, %S, %D), (%I, %Q, NULL)", true},
	{"INSERT INTO t VALUES (%I, %S, NOW())", true},
	{"INSERT INTO t (id, v) VALUES (%I, %X) ON DUPLICATE KEY UPDATE v = v + %I", false},
	{"INSERT INTO t SET id = %I, c = %S", true},
	{"REPLACE INTO t (id) VALUES (%I), (%I), (%I)", true},
	{"INSERT INTO t (id) VALUES %_(%I)%_,%_(%I)", false},
	{"SELECT * FROM t WHERE id = %I; SELECT * FROM t WHERE id = %I", false},
	{"SELECT * FROM t WHERE id = %I AND k IN (SELECT k FROM u WHERE id = %I)", false},
	// Literals the digest keeps or that the grammar rejects by value.
	{"SELECT * FROM t WHERE id = %I ORDER BY %i", false},
	{"SELECT * FROM t WHERE id = %I GROUP BY k, %i ORDER BY 2", false},
	{"SELECT * FROM t WHERE name = %S LIMIT %I", false},
	{"SELECT /*+ MAX_EXECUTION_TIME(%i) */ * FROM t WHERE id = %I", false},
	{"SELECT * FROM t WHERE name = %S%_AND k = %I%_", true},
}

// TestTemplateDifferential checks that the Info of a new text answered from
// a shape's template, or from the skeleton memo, equals the full parse's,
// digest included, for many random texts of each shape, and that both paths
// are taken where they should be.
func TestTemplateDifferential(t *testing.T) {
	for seed := int64(1); seed <= 2; seed++ {
		g := litGen{r: rand.New(rand.NewSource(seed))}
		for _, p := range templatePatterns {
			a := NewAnalyzer(Options{ExactCap: 1})
			fast, skel := 0, 0
			const n = 300
			for i := 0; i < n; i++ {
				q := g.fill(p.pattern)
				tmpl := viaTemplate(a, q)
				if tmpl {
					fast++
				}
				skelHit, skelTmpl := viaSkeleton(a, q)
				if skelHit {
					skel++
				}
				// The skeleton memo also answers some texts the digest
				// memo parses (a float's exponent splits its shapes). An
				// answer from a template must equal the full parse's.
				tmpl = tmpl || skelTmpl
				want := fullParse(q)
				checkShapeIn(t, a, q, want)
				got := a.Analyze(q)
				if got.Digest != want.Digest {
					t.Fatalf("%q (template %v, skeleton %v): digest %q, want %q", q, tmpl, skelHit, got.Digest, want.Digest)
				}
				if !tmpl && got.Point == nil && want.Point != nil && hasLiteralValues(want) {
					// A text whose literals leave no Point ("a = 1 AND a = 2")
					// shares its analysis with the digest; a later text of it
					// with equal values gets that analysis, without a Point.
					// That is coarser, never wrong, and not the template's.
					g := *want
					g.Point = nil
					want = &g
				}
				if !sameAnalysis(got, want) {
					t.Fatalf("%q (template %v):\ngot  %+v point %s insert %+v\nwant %+v point %s insert %+v",
						q, tmpl, *got, fmtPoint(got.Point), got.Insert, *want, fmtPoint(want.Point), want.Insert)
				}
			}
			if p.fast && fast < n*9/10 {
				t.Errorf("%q: %d of %d texts took the template path, want at least 90%%", p.pattern, fast, n)
			}
			if p.fast && skel < n*9/10 {
				t.Errorf("%q: %d of %d texts took the skeleton path, want at least 90%%", p.pattern, skel, n)
			}
		}
	}
}

// TestTemplateScan checks the literal tokens the scan finds.
func TestTemplateScan(t *testing.T) {
	tests := []struct {
		sql  string
		want []string // literal tokens; nil with ok false
		ok   bool
	}{
		{"SELECT c FROM t WHERE id=5", []string{"5"}, true},
		{"SELECT 'a''b', \"c\\\"d\", 1.5, .5, 1., 1e3, 1E-3 FROM t", []string{"'a''b'", `"c\"d"`, "1.5", ".5", "1.", "1e3", "1E-3"}, true},
		{"SELECT 0x41, 0b1, 1abc, t.1c, t1.5, `x``5`, x'41' FROM t", []string{"'41'"}, true},
		{"SELECT 1 /* 2 */ -- 3\n # 4\n, '5'", []string{"1", "'5'"}, true},
		{"SELECT /*!50000 7 */ 8", []string{"7", "8"}, true},
		{"SELECT 'a' 'b'", nil, false},
		{"SELECT 'a", nil, false},
		{"SELECT `a", nil, false},
		{"SELECT 1\x01I", nil, false},
	}
	for _, tt := range tests {
		sc := &textScan{}
		ok := scanText(sc, tt.sql)
		if ok != tt.ok {
			t.Errorf("scanText(%q) ok = %v, want %v", tt.sql, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		var got []string
		for _, tk := range sc.toks {
			got = append(got, tt.sql[tk.off:tk.end])
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("scanText(%q) literals = %q, want %q", tt.sql, got, tt.want)
		}
	}
}

// TestTemplateSkeleton checks that texts differing in more than literals do
// not share a template.
func TestTemplateSkeleton(t *testing.T) {
	pairs := []struct{ x, y string }{
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = -1"},
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = '1'"},
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = 1.0"},
		{"SELECT * FROM t WHERE id IN (1, 2)", "SELECT * FROM t WHERE id IN (1, 2, 3)"},
		{"SELECT * FROM t WHERE id IN (1, 2)", "SELECT * FROM t WHERE id IN (3, 3)"},
		{"SELECT * FROM t WHERE id = 'a'", "SELECT * FROM t WHERE id = X'61'"},
		{"SELECT * FROM t WHERE id = 'a'", "SELECT * FROM t WHERE id = _binary'a'"},
		{"SELECT * FROM t WHERE id = 'a'", "SELECT * FROM t WHERE id = 'a' 'b'"},
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = 0x1"},
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = NULL"},
		{"SELECT * FROM t WHERE id < 1 AND k = 2", "SELECT * FROM t WHERE id <= 1 AND k = 2"},
	}
	for _, p := range pairs {
		a := NewAnalyzer(Options{ExactCap: 1})
		a.Analyze(p.x)
		if viaTemplate(a, p.y) {
			t.Errorf("%q answered from the template of %q", p.y, p.x)
		}
		if got, want := a.Analyze(p.y), fullParse(p.y); !sameAnalysis(got, want) {
			t.Errorf("%q after %q: got point %s, want %s", p.y, p.x, fmtPoint(got.Point), fmtPoint(want.Point))
		}
	}
}

// TestTemplateFreshCopy checks that a text answered from a template gets
// its own Info and leaves the shape's untouched.
func TestTemplateFreshCopy(t *testing.T) {
	a := NewAnalyzer(Options{ExactCap: 1})
	first := a.Analyze("SELECT * FROM t WHERE a = 1 AND b IN (2, 3)")
	snapshot := fmt.Sprintf("%+v %s", *first, fmtPoint(first.Point))
	second := a.Analyze("SELECT * FROM t WHERE a = 4 AND b IN (5, 6)")
	if !viaTemplate(a, "SELECT * FROM t WHERE a = 7 AND b IN (8, 9)") {
		t.Fatalf("no template for the shape")
	}
	if got := fmt.Sprintf("%+v %s", *first, fmtPoint(first.Point)); got != snapshot {
		t.Errorf("shape's Info changed: got %s, want %s", got, snapshot)
	}
	want := pt("t", cols("a", "b"), row(intv("4"), intv("5")), row(intv("4"), intv("6")))
	if !reflect.DeepEqual(second.Point, want) {
		t.Errorf("Point = %s, want %s", fmtPoint(second.Point), fmtPoint(want))
	}
	if &second.Point.Rows[0][0] == &first.Point.Rows[0][0] {
		t.Errorf("rows share storage with the shape's")
	}
}

// TestTemplateNotRetained checks that a template's values do not alias the
// caller's buffer.
func TestTemplateNotRetained(t *testing.T) {
	a := NewAnalyzer(Options{ExactCap: 1})
	a.Analyze("SELECT * FROM t WHERE name = 'seed'")
	buf := []byte("SELECT * FROM t WHERE name = 'abcd'")
	info := a.Analyze(string(buf))
	copy(buf, strings.Repeat("x", len(buf)))
	if got := info.Point.Rows[0][0].Lit; got != "abcd" {
		t.Errorf("Lit = %q after the buffer changed, want %q", got, "abcd")
	}
}

// FuzzTemplate analyses a seed text of a pattern, then another text of it,
// and checks the second against a full parse. Each %v of the pattern takes
// the next literal of the list, separated by NUL bytes.
func FuzzTemplate(f *testing.F) {
	f.Add("SELECT * FROM t WHERE id = %v", "1", "2")
	f.Add("SELECT * FROM t WHERE a = %v AND b IN (%v, %v)", "1\x002\x003", "'x'\x00-5\x00'y'")
	f.Add("INSERT INTO t (a, b) VALUES (%v, %v), (%v, %v)", "1\x00'a'\x002\x00'b'", "1e5\x00\"q\\\"\"\x00.5\x00'\\Z'")
	f.Add("UPDATE t SET v = %v WHERE id = %v", "'a'\x001", "X'41'\x0018446744073709551616")
	f.Fuzz(func(t *testing.T, pattern, first, second string) {
		fill := func(lits string) string {
			vs := strings.Split(lits, "\x00")
			var b strings.Builder
			k := 0
			for {
				i := strings.Index(pattern, "%v")
				if i < 0 {
					b.WriteString(pattern)
					break
				}
				b.WriteString(pattern[:i])
				if k < len(vs) {
					b.WriteString(vs[k])
				}
				k++
				pattern = pattern[i+2:]
			}
			return b.String()
		}
		p := pattern
		x := fill(first)
		pattern = p
		y := fill(second)
		a := NewAnalyzer(Options{ExactCap: 1})
		a.Analyze(x)
		checkShapeIn(t, a, y, fullParse(y))
		if got, want := a.Analyze(y), fullParse(y); !sameAnalysis(got, want) {
			t.Fatalf("%q after %q: got %+v point %s, want %+v point %s", y, x, *got, fmtPoint(got.Point), *want, fmtPoint(want.Point))
		}
	})
}

// TestSkeletonDigest checks texts whose skeletons match but whose digests,
// or analyses, may not: each second text must get the full parse's Info,
// digest included, after the first.
func TestSkeletonDigest(t *testing.T) {
	pairs := []struct {
		x, y string
		fast bool // y must be answered by the skeleton memo
	}{
		{"SELECT c FROM sbtest1 WHERE id=5012", "SELECT c FROM sbtest1 WHERE id=77", true},
		{"SELECT c FROM t WHERE id BETWEEN 5 AND 9", "SELECT c FROM t WHERE id BETWEEN 6 AND 10", true},
		{"SELECT * FROM t WHERE id = 1 ORDER BY 1", "SELECT * FROM t WHERE id = 2 ORDER BY 1", true},
		{"SELECT * FROM t WHERE id = 1 ORDER BY 1", "SELECT * FROM t WHERE id = 1 ORDER BY 2", false},
		{"SELECT * FROM t WHERE id = 1 GROUP BY (1, 2)", "SELECT * FROM t WHERE id = 1 GROUP BY (1, 3)", false},
		{"SELECT * FROM t WHERE id = 1 ORDER BY k, 1", "SELECT * FROM t WHERE id = 1 ORDER BY k, 3", false},
		{"SELECT * FROM t WHERE id = 1 ORDER BY `by`, 1", "SELECT * FROM t WHERE id = 1 ORDER BY `by`, 3", false},
		{"SELECT * FROM t WHERE name = 'a'", "SELECT * FROM t WHERE name = '*'", false},
		{"SELECT * FROM t WHERE name = 'a'", `SELECT * FROM t WHERE name = '\*'`, false},
		{"SELECT * FROM t FORCE INDEX (k) WHERE id = 'a'", "SELECT * FROM t FORCE INDEX (k) WHERE id = ')'", false},
		{"SELECT * FROM t WHERE id = X'41' AND k = 1", "SELECT * FROM t WHERE id = X'4G' AND k = 1", false},
		{"SELECT /*+ MAX_EXECUTION_TIME(1) */ * FROM t WHERE id = 1", "SELECT /*+ MAX_EXECUTION_TIME(2) */ * FROM t WHERE id = 2", false},
		{"SELECT /*+ MAX_EXECUTION_TIME(1) */ * FROM t WHERE id = 1", "SELECT * /*+ MAX_EXECUTION_TIME(1) */ FROM t WHERE id = 2", false},
		{"SELECT /*+ no_cache */ * FROM t WHERE id = 1", "SELECT /*+ no_cache */ * FROM t WHERE id = 2", true},
		{"SELECT * FROM t WHERE id = 1", "SELECT /*+ no_cache */ * FROM t WHERE id = 2", false},
		{"SELECT * FROM t WHERE id = 1 AND v = 'a'", "SELECT * FROM t WHERE id = 1 AND v = '/*+ no_cache */'", false},
		{"SELECT * FROM t WHERE id = 1 /*!50000 AND k = 2 */", "SELECT * FROM t WHERE id = 1 /*!99999 AND k = 3 */", false},
		{"SELECT * FROM t WHERE id = 1 /*M! AND k = 2 */", "SELECT * FROM t WHERE id = 2 /*M! AND k = 3 */", false},
		{"SELECT * FROM t WHERE id = 1 --\x01 x", "SELECT * FROM t WHERE id = 2 --\x01 x", false},
		{"SELECT * FROM t WHERE id = 1 -- x\n", "SELECT * FROM t WHERE id = 2 # y", true},
		{"SELECT * FROM t WHERE id = -1", "SELECT * FROM t WHERE id = -2", true},
		{"SELECT * FROM t WHERE id = -1", "SELECT * FROM t WHERE id = - 2", false},
		{"SELECT * FROM t WHERE id IN (1, 2, 3)", "SELECT * FROM t WHERE id IN (4, 5, 6)", true},
		{"SELECT * FROM t WHERE id IN (1, 2, 3)", "SELECT * FROM t WHERE id IN (4, 4, 6)", false},
		{"SELECT * FROM t WHERE id = 1 LIMIT 18446744073709551616", "SELECT * FROM t WHERE id = 2 LIMIT 5", false},
		{"SELECT * FROM t WHERE id = 1 LIMIT 5", "SELECT * FROM t WHERE id = 2 LIMIT 18446744073709551616", false},
		{"SELECT * FROM t WHERE id = 1 LIMIT 5", "SELECT * FROM t WHERE id = 2 LIMIT 18446744073709551615", true},
	}
	for _, p := range pairs {
		a := NewAnalyzer(Options{ExactCap: 1})
		a.Analyze(p.x)
		hit, _ := viaSkeleton(a, p.y)
		if p.fast && !hit {
			t.Errorf("%q after %q: not answered from the skeleton memo", p.y, p.x)
		}
		if !p.fast && hit {
			t.Errorf("%q answered from the skeleton memo of %q", p.y, p.x)
		}
		want := fullParse(p.y)
		checkShapeIn(t, a, p.y, want)
		got := a.Analyze(p.y)
		if got.Digest != want.Digest {
			t.Errorf("%q after %q: digest %q, want %q", p.y, p.x, got.Digest, want.Digest)
		}
		if !sameAnalysis(got, want) {
			t.Errorf("%q after %q: got %+v point %s, want %+v point %s", p.y, p.x, *got, fmtPoint(got.Point), *want, fmtPoint(want.Point))
		}
	}
}
