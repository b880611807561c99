package wire

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestDecodeParamsReadsAsTheServerDoes: values are known only where the
// server's reading of their type is certain; after a parameter whose
// bytes the server may read otherwise, no value is known, since every
// later offset may be wrong.
func TestDecodeParamsReadsAsTheServerDoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		types []byte
		vals  []byte
		want  []string // nil: unknown
	}{
		{"longlong", []byte{0x08, 0, 0x08, 0}, []byte{7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}, []string{"7", "9"}},
		{"string", []byte{0xfd, 0, 0x03, 0}, []byte{1, '5', 3, 0, 0, 0}, []string{"5", "3"}},
		// MariaDB 10.11 reads no bytes for a YEAR, INT24, BIT or GEOMETRY.
		{"year first", []byte{0x0d, 0, 0x08, 0}, []byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil},
		{"int24 first", []byte{0x09, 0, 0x08, 0}, []byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil},
		{"bit first", []byte{0x10, 0, 0x08, 0}, []byte{1, 1, 7, 0, 0, 0, 0, 0, 0, 0}, nil},
		{"geometry first", []byte{0xff, 0, 0x08, 0}, []byte{0, 7, 0, 0, 0, 0, 0, 0, 0}, nil},
		// A temporal length is length-encoded: 0xfc and two bytes.
		{"date lenenc", []byte{0x0a, 0, 0x08, 0}, []byte{0xfc, 4, 0, 0xe8, 7, 1, 1, 7, 0, 0, 0, 0, 0, 0, 0}, []string{"", "7"}},
		{"date short", []byte{0x0a, 0, 0x08, 0}, []byte{4, 0xe8, 7, 1, 1, 7, 0, 0, 0, 0, 0, 0, 0}, []string{"", "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The command header, the null bitmap of two, new-params-bound.
			p := append(make([]byte, 10), 0, 1)
			p = append(p, tc.types...)
			p = append(p, tc.vals...)
			got := DecodeParams(p, 2, nil)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("got %+v, want unknown", got)
				}
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Text != w {
					t.Errorf("param %d: got %q, want %q", i, got[i].Text, w)
				}
			}
		})
	}
}

// TestHasTimeParam: an execute that binds a TIME value is told, whether
// it sends its types or relies on those bound before.
func TestHasTimeParam(t *testing.T) {
	head := []byte{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0}
	exec := func(bound byte, types ...byte) []byte {
		p := append(append([]byte(nil), head...), 0, bound) // null bitmap for 2 params, new-params-bound
		return append(p, types...)
	}
	timeTypes := []byte{mysql.MYSQL_TYPE_LONG, 0, mysql.MYSQL_TYPE_TIME, 0}
	intTypes := []byte{mysql.MYSQL_TYPE_LONG, 0, mysql.MYSQL_TYPE_DATETIME, 0}
	for _, c := range []struct {
		name  string
		p     []byte
		bound []byte
		want  bool
	}{
		{"types sent", exec(1, timeTypes...), nil, true},
		{"other types sent", exec(1, intTypes...), timeTypes, false},
		{"types bound before", exec(0), timeTypes, true},
		{"other types bound before", exec(0), intTypes, false},
		{"truncated", exec(1, mysql.MYSQL_TYPE_TIME), nil, false},
	} {
		if got := HasTimeParam(c.p, 2, c.bound); got != c.want {
			t.Errorf("%s: HasTimeParam = %v, want %v", c.name, got, c.want)
		}
	}
}
