package wire

import "testing"

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
