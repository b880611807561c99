package wire

import (
	"encoding/binary"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Param is one bound parameter of a COM_STMT_EXECUTE, as text when
// it is an integer or a string, which is all row-level keys use.
type Param struct {
	Text string
	Null bool
	OK   bool // Text holds the value
	Int  bool // the value was bound as an integer
}

// HasTimeParam reports whether a COM_STMT_EXECUTE packet binds one of its
// n parameters as a TIME value, which takes the current date when read as
// a date. types are the types bound by an earlier execute, for packets
// that do not send them again.
func HasTimeParam(p []byte, n int, types []byte) bool {
	if n == 0 {
		return false
	}
	at := 10 + (n+7)/8
	if len(p) > at && p[at] != 0 && len(p) >= at+1+2*n {
		types = p[at+1 : at+1+2*n]
	}
	for i := 0; i+1 < len(types); i += 2 {
		if types[i] == mysql.MYSQL_TYPE_TIME {
			return true
		}
	}
	return false
}

// DecodeParams reads the n parameter values of a COM_STMT_EXECUTE packet.
// types are the types bound by an earlier execute, for packets that do not
// send them again. It returns nil when the packet cannot be read.
//
// Any non-zero new-params-bound flag means the types follow, as MySQL and
// MariaDB read it; the documented value is 1.
func DecodeParams(p []byte, n int, types []byte) []Param {
	if n == 0 {
		return nil
	}
	nb := (n + 7) / 8
	at := 10
	if len(p) < at+nb+1 {
		return nil
	}
	nulls := p[at : at+nb]
	at += nb
	if p[at] != 0 {
		at++
		if len(p) < at+2*n {
			return nil
		}
		types = p[at : at+2*n]
		at += 2 * n
	} else {
		at++
	}
	if len(types) < 2*n {
		return nil
	}
	out := make([]Param, n)
	for i := 0; i < n; i++ {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			out[i].Null = true
			continue
		}
		typ, unsigned := types[2*i], types[2*i+1]&0x80 != 0
		size := 0
		switch typ {
		case mysql.MYSQL_TYPE_NULL:
			out[i].Null = true
			continue
		case mysql.MYSQL_TYPE_TINY:
			size = 1
		case mysql.MYSQL_TYPE_SHORT:
			size = 2
		case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT:
			size = 4
		case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE:
			size = 8
		case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIME:
			// The server reads a length-encoded length.
			l, k := Lenenc(p[at:])
			if k == 0 || l > 12 {
				return nil
			}
			size = k + int(l)
		case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING,
			mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB,
			mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_NEWDECIMAL:
			l, k := Lenenc(p[at:])
			if k == 0 || uint64(len(p)-at-k) < l {
				return nil
			}
			out[i] = Param{Text: string(p[at+k : at+k+int(l)]), OK: true}
			at += k + int(l)
			continue
		default:
			// YEAR, INT24, BIT, GEOMETRY and the rest: the server's
			// reading of them differs by version (MariaDB 10.11 reads no
			// bytes for some), so none of the values is known.
			return nil
		}
		if len(p) < at+size {
			return nil
		}
		v := p[at : at+size]
		at += size
		var x uint64
		switch typ {
		case mysql.MYSQL_TYPE_TINY:
			x = uint64(v[0])
			if !unsigned {
				x = uint64(int64(int8(v[0])))
			}
		case mysql.MYSQL_TYPE_SHORT:
			x = uint64(binary.LittleEndian.Uint16(v))
			if !unsigned {
				x = uint64(int64(int16(x)))
			}
		case mysql.MYSQL_TYPE_LONG:
			x = uint64(binary.LittleEndian.Uint32(v))
			if !unsigned {
				x = uint64(int64(int32(x)))
			}
		case mysql.MYSQL_TYPE_LONGLONG:
			x = binary.LittleEndian.Uint64(v)
		default:
			continue // floating point and temporal values are not keys here
		}
		if unsigned {
			out[i] = Param{Text: strconv.FormatUint(x, 10), OK: true, Int: true}
		} else {
			out[i] = Param{Text: strconv.FormatInt(int64(x), 10), OK: true, Int: true}
		}
	}
	return out
}
