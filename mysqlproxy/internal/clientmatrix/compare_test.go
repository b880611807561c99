package clientmatrix

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// longString is the length beyond which a transcript shows a string's
// size and digest instead of its text, so that a diff of a blob stays
// readable. Equal digests mean equal strings.
const longString = 512

// connIDInMessage matches the connection id that Connector/J puts at the
// head of every error message; ids differ from run to run.
var connIDInMessage = regexp.MustCompile(`\(conn=\d+\)`)

// normalize rewrites, in place, what legitimately differs between two
// runs of the same client: the run's database and lock names, connection
// ids, and (for readability) long strings.
func (r *run) normalize(v any) any {
	switch x := v.(type) {
	case string:
		s := r.norm.Replace(x)
		s = connIDInMessage.ReplaceAllString(s, "(conn=N)")
		if len(s) > longString {
			sum := sha256.Sum256([]byte(s))
			s = fmt.Sprintf("<%d bytes, sha256 %x>", len(s), sum[:8])
		}
		return s
	case []any:
		for i := range x {
			x[i] = r.normalize(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = r.normalize(e)
		}
	}
	return v
}

// maxDiffs bounds the differences shown per case.
const maxDiffs = 12

// diffLines describes how got (through mycached) differs from want
// (directly), one difference per string, each naming the transcript line
// and the JSON path within it; nil means the transcripts are equal.
func diffLines(want, got []any) []string {
	var out []string
	for i := 0; i < max(len(want), len(got)) && len(out) < maxDiffs; i++ {
		path := fmt.Sprintf("line %d", i)
		switch {
		case i >= len(got):
			out = append(out, fmt.Sprintf("%s: directly %s; through mycached nothing", path, render(want[i])))
		case i >= len(want):
			out = append(out, fmt.Sprintf("%s: directly nothing; through mycached %s", path, render(got[i])))
		default:
			if m, ok := want[i].(map[string]any); ok && m["step"] != nil {
				path = fmt.Sprintf("line %d (step %v)", i, m["step"])
			}
			diffValues(path, want[i], got[i], &out)
		}
	}
	return out
}

func diffValues(path string, want, got any, out *[]string) {
	if len(*out) >= maxDiffs || reflect.DeepEqual(want, got) {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			keys := make([]string, 0, len(w)+len(g))
			for k := range w {
				keys = append(keys, k)
			}
			for k := range g {
				if _, ok := w[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				wv, wok := w[k]
				gv, gok := g[k]
				switch {
				case !gok:
					*out = append(*out, fmt.Sprintf("%s.%s: directly %s; through mycached absent", path, k, render(wv)))
				case !wok:
					*out = append(*out, fmt.Sprintf("%s.%s: directly absent; through mycached %s", path, k, render(gv)))
				default:
					diffValues(path+"."+k, wv, gv, out)
				}
			}
			return
		}
	case []any:
		g, ok := got.([]any)
		if ok && len(g) == len(w) {
			for i := range w {
				diffValues(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
			}
			return
		}
		if ok {
			// Show only the stretch that differs: the mariadb client's
			// output is one long array of lines.
			pre := 0
			for pre < len(w) && pre < len(g) && reflect.DeepEqual(w[pre], g[pre]) {
				pre++
			}
			suf := 0
			for suf < len(w)-pre && suf < len(g)-pre && reflect.DeepEqual(w[len(w)-1-suf], g[len(g)-1-suf]) {
				suf++
			}
			*out = append(*out, fmt.Sprintf("%s[%d:]: directly %s; through mycached %s", path, pre,
				render(w[pre:len(w)-suf]), render(g[pre:len(g)-suf])))
			return
		}
	}
	*out = append(*out, fmt.Sprintf("%s: directly %s; through mycached %s", path, render(want), render(got)))
}

// render shows a transcript value as compact JSON, cut to a line.
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// isBroken reports whether a transcript line is one of the test's own,
// for a client that hung or died.
func isBroken(line any) bool {
	m, ok := line.(map[string]any)
	if !ok {
		return false
	}
	_, hang := m["hang"]
	_, died := m["driver_exited"]
	return hang || died
}

// describe formats a case's differences for a failure message.
func describe(c testCase, via string, diffs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %s (%s), directly vs through mycached (%s):", c.ID, c.About, via)
	for _, d := range diffs {
		b.WriteString("\n    " + d)
	}
	return b.String()
}

func TestDiffLines(t *testing.T) {
	parse := func(s string) []any {
		var v []any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name      string
		want, got string
		diffs     []string
	}{
		{"equal", `[{"step":0,"rows":[["a"]]}]`, `[{"step":0,"rows":[["a"]]}]`, nil},
		{"value", `[{"step":0,"rows":[["a"]]}]`, `[{"step":0,"rows":[["b"]]}]`,
			[]string{`line 0 (step 0).rows[0][0]: directly "a"; through mycached "b"`}},
		{"key", `[{"step":1,"rows":[]}]`, `[{"step":1,"hang":"x"}]`, []string{
			`line 0 (step 1).hang: directly absent; through mycached "x"`,
			`line 0 (step 1).rows: directly []; through mycached absent`,
		}},
		{"missing line", `[{"step":0},{"step":1}]`, `[{"step":0}]`,
			[]string{`line 1: directly {"step":1}; through mycached nothing`}},
		{"stretch", `[{"step":0,"out":["a","b","c","d"]}]`, `[{"step":0,"out":["a","x","y","d"]}]`,
			[]string{`line 0 (step 0).out[1]: directly "b"; through mycached "x"`, `line 0 (step 0).out[2]: directly "c"; through mycached "y"`}},
		{"stretch of another length", `[{"step":0,"out":["a","b","d"]}]`, `[{"step":0,"out":["a","x","y","d"]}]`,
			[]string{`line 0 (step 0).out[1:]: directly ["b"]; through mycached ["x","y"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := diffLines(parse(tt.want), parse(tt.got)); !slices.Equal(got, tt.diffs) {
				t.Errorf("diffLines:\ngot  %q\nwant %q", got, tt.diffs)
			}
		})
	}
}
