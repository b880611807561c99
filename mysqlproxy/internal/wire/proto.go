package wire

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Lenenc decodes a length-encoded integer at b, returning the value and the
// number of bytes it used; n is 0 when b is too short.
func Lenenc(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, 0
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3
	case 0xfd:
		if len(b) < 4 {
			return 0, 0
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4
	case 0xfe:
		if len(b) < 9 {
			return 0, 0
		}
		return binary.LittleEndian.Uint64(b[1:]), 9
	case 0xfb: // NULL in a row; never a length here
		return 0, 1
	}
	return uint64(b[0]), 1
}

// OK is what an OK packet (or an OK-shaped EOF under
// CLIENT_DEPRECATE_EOF) says.
type OK struct {
	Affected, InsertID uint64
	Status, Warnings   uint16
}

// ParseOK parses an OK packet's payload, header byte included.
func ParseOK(p []byte) (OK, bool) {
	var o OK
	if len(p) < 1 {
		return o, false
	}
	i := 1
	v, n := Lenenc(p[i:])
	if n == 0 {
		return o, false
	}
	o.Affected, i = v, i+n
	v, n = Lenenc(p[i:])
	if n == 0 {
		return o, false
	}
	o.InsertID, i = v, i+n
	if len(p) >= i+4 {
		o.Status = binary.LittleEndian.Uint16(p[i:])
		o.Warnings = binary.LittleEndian.Uint16(p[i+2:])
	}
	return o, true
}

// ParseEOF parses a classic 5-byte EOF packet's payload.
func ParseEOF(p []byte) (status, warnings uint16) {
	if len(p) >= 5 {
		warnings = binary.LittleEndian.Uint16(p[1:])
		status = binary.LittleEndian.Uint16(p[3:])
	}
	return status, warnings
}

// IsTerminator reports whether a packet that begins a row slot ends the
// rows instead: an EOF, or an OK with the EOF header. A row can begin with
// 0xfe only when its first value is at least 2^24 bytes long, so its packet
// is a full one.
func IsTerminator(first byte, n int) bool {
	return first == mysql.EOF_HEADER && n < MaxPayload
}

// ParseErr parses an ERR packet's payload.
func ParseErr(p []byte) (code uint16, state, msg string) {
	if len(p) < 3 {
		return 0, "", ""
	}
	code = binary.LittleEndian.Uint16(p[1:])
	rest := p[3:]
	if len(rest) >= 6 && rest[0] == '#' {
		state, rest = string(rest[1:6]), rest[6:]
	}
	return code, state, string(rest)
}

// AppendErr appends an ERR packet's payload. The SQL state marker is only
// meaningful once the client has said it speaks protocol 4.1; before the
// handshake (withState false) it is left out, as the server does.
func AppendErr(b []byte, code uint16, state, msg string, withState bool) []byte {
	b = append(b, mysql.ERR_HEADER, byte(code), byte(code>>8))
	if withState {
		if len(state) != 5 {
			state = "HY000"
		}
		b = append(b, '#')
		b = append(b, state...)
	}
	return append(b, msg...)
}

// AppendOK appends an OK packet's payload.
func AppendOK(b []byte, affected, insertID uint64, status, warnings uint16) []byte {
	b = append(b, mysql.OK_HEADER)
	b = mysql.AppendLengthEncodedInteger(b, affected)
	b = mysql.AppendLengthEncodedInteger(b, insertID)
	return binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(b, status), warnings)
}

// CString returns the NUL-terminated string at b and the bytes after it.
func CString(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return string(b), nil, false
}

// AppendEOF appends a classic EOF packet's payload.
func AppendEOF(b []byte, status uint16) []byte {
	b = append(b, mysql.EOF_HEADER, 0, 0)
	return binary.LittleEndian.AppendUint16(b, status)
}

// AppendColumnDef appends a protocol 4.1 column definition for a utf8mb4
// string column; extMeta adds MariaDB's extended metadata field (empty).
func AppendColumnDef(b []byte, name string, extMeta bool) []byte {
	return AppendColumnDefIn(b, name, extMeta, CollationUTF8MB4)
}

// Collations a column of mycached's own is labelled with.
const (
	CollationUTF8MB4 = 45 // utf8mb4_general_ci
	CollationBinary  = 63 // binary: bytes, as MariaDB labels X'...'
)

// AppendColumnDefIn is AppendColumnDef for a column of collation coll; a
// binary one is flagged so.
func AppendColumnDefIn(b []byte, name string, extMeta bool, coll uint16) []byte {
	lenstr := func(b []byte, s string) []byte {
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(s)))
		return append(b, s...)
	}
	b = lenstr(b, "def")
	b = lenstr(b, "") // schema
	b = lenstr(b, "") // table
	b = lenstr(b, "") // org_table
	b = lenstr(b, name)
	b = lenstr(b, name)
	if extMeta {
		b = lenstr(b, "")
	}
	b = append(b, 0x0c)
	b = binary.LittleEndian.AppendUint16(b, coll)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, mysql.MYSQL_TYPE_VAR_STRING)
	var flags uint16
	if coll == CollationBinary {
		flags = mysql.BINARY_FLAG
	}
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = append(b, 0, 0, 0) // decimals, filler
	return b
}

// Le32 decodes a little-endian uint32 at the start of b.
func Le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
