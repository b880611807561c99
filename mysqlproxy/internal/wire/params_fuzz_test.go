package wire

import (
	"encoding/binary"
	"reflect"
	"strconv"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// FuzzDecodeParams decodes arbitrary COM_STMT_EXECUTE packets: never a
// panic, and either nil or one Param for each of the n parameters, each
// with a consistent meaning.
func FuzzDecodeParams(f *testing.F) {
	f.Fuzz(func(t *testing.T, n uint8, types, p []byte) {
		got := DecodeParams(p, int(n), types)
		if got != nil && len(got) != int(n) {
			t.Fatalf("got %d params, want %d", len(got), n)
		}
		for i, pv := range got {
			if pv.Null && pv.OK || pv.Int && !pv.OK || !pv.OK && pv.Text != "" {
				t.Fatalf("param %d: inconsistent %+v", i, pv)
			}
		}
	})
}

// bytesFrom hands out the fuzzer's bytes, then zeros.
type bytesFrom []byte

func (b *bytesFrom) next(n int) []byte {
	out := make([]byte, n)
	k := copy(out, *b)
	*b = (*b)[k:]
	return out
}

// execute is a COM_STMT_EXECUTE built the way a client builds one, and
// the values a reader must find in it.
type execute struct {
	nulls, types, values []byte
	want                 []Param
}

// genExecute builds an execute with one parameter for each byte of spec,
// its type and sign chosen by the byte, its value taken from data.
func genExecute(spec []byte, data bytesFrom) execute {
	n := len(spec)
	e := execute{nulls: make([]byte, (n+7)/8), want: make([]Param, n)}
	for i, s := range spec {
		unsigned := s&0x80 != 0
		flag := byte(0)
		if unsigned {
			flag = 0x80
		}
		integer := func(typ byte, size int, signed func(v []byte) int64) {
			v := data.next(size)
			e.types = append(e.types, typ, flag)
			e.values = append(e.values, v...)
			var x uint64
			for j := size - 1; j >= 0; j-- {
				x = x<<8 | uint64(v[j])
			}
			if unsigned {
				e.want[i] = Param{Text: strconv.FormatUint(x, 10), OK: true, Int: true}
			} else {
				e.want[i] = Param{Text: strconv.FormatInt(signed(v), 10), OK: true, Int: true}
			}
		}
		switch s & 0x7f % 9 {
		case 0: // NULL by the bitmap, whatever the type says
			e.nulls[i/8] |= 1 << (i % 8)
			e.types = append(e.types, mysql.MYSQL_TYPE_LONGLONG, flag)
			e.want[i] = Param{Null: true}
		case 1:
			e.types = append(e.types, mysql.MYSQL_TYPE_NULL, 0)
			e.want[i] = Param{Null: true}
		case 2:
			integer(mysql.MYSQL_TYPE_TINY, 1, func(v []byte) int64 { return int64(int8(v[0])) })
		case 3:
			integer(mysql.MYSQL_TYPE_SHORT, 2, func(v []byte) int64 { return int64(int16(binary.LittleEndian.Uint16(v))) })
		case 4:
			integer(mysql.MYSQL_TYPE_LONG, 4, func(v []byte) int64 { return int64(int32(binary.LittleEndian.Uint32(v))) })
		case 5:
			integer(mysql.MYSQL_TYPE_LONGLONG, 8, func(v []byte) int64 { return int64(binary.LittleEndian.Uint64(v)) })
		case 6, 7: // a string, long enough at times for a 3-byte length
			l := int(data.next(1)[0])
			if s&0x40 != 0 {
				l += 256
			}
			v := data.next(l)
			e.types = append(e.types, mysql.MYSQL_TYPE_VAR_STRING, 0)
			e.values = append(mysql.AppendLengthEncodedInteger(e.values, uint64(l)), v...)
			e.want[i] = Param{Text: string(v), OK: true}
		case 8: // a temporal value: its length, then that many bytes
			l := []int{0, 4, 7, 11}[s&3]
			e.types = append(e.types, mysql.MYSQL_TYPE_DATETIME, 0)
			e.values = append(append(e.values, byte(l)), data.next(l)...)
		}
	}
	return e
}

// packet lays the execute out, with its types or without.
func (e execute) packet(withTypes bool) []byte {
	p := []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0}
	p = append(p, e.nulls...)
	if withTypes {
		p = append(append(p, 1), e.types...)
	} else {
		p = append(p, 0)
	}
	return append(p, e.values...)
}

// FuzzExecuteParams builds well-formed executes of every parameter type
// DecodeParams reads, and checks it finds each value as bound: with the
// types in the packet, and without them from an earlier execute's. A
// truncated execute is never misread: it decodes to nil.
func FuzzExecuteParams(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec, data []byte) {
		spec = spec[:min(len(spec), 40)]
		e := genExecute(spec, data)
		n := len(spec)
		want := e.want
		if n == 0 {
			want = nil
		}
		p := e.packet(true)
		if got := DecodeParams(p, n, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("with types: got %+v, want %+v", got, want)
		}
		q := e.packet(false)
		if got := DecodeParams(q, n, e.types); !reflect.DeepEqual(got, want) {
			t.Fatalf("with earlier types: got %+v, want %+v", got, want)
		}
		if n == 0 {
			return
		}
		for k := range len(p) {
			if got := DecodeParams(p[:k], n, nil); got != nil {
				t.Fatalf("cut at %d of %d: got %+v, want nil", k, len(p), got)
			}
		}
	})
}
