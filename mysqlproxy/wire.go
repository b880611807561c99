package mysqlproxy

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Error codes mycached uses for errors of its own making. 2003 and 2013 are
// the client library's codes for "can't connect" and "lost connection",
// which is what a client would have seen without mycached in the way.
const (
	codeBackendUnreachable = 2003
	codeBackendLost        = 2013
)

// lenenc decodes a length-encoded integer at b, returning the value and the
// number of bytes it used; n is 0 when b is too short.
func lenenc(b []byte) (v uint64, n int) {
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

// okInfo is what an OK packet (or an OK-shaped EOF under
// CLIENT_DEPRECATE_EOF) says.
type okInfo struct {
	affected, insertID uint64
	status, warnings   uint16
}

// parseOK parses an OK packet's payload, header byte included.
func parseOK(p []byte) (okInfo, bool) {
	var o okInfo
	if len(p) < 1 {
		return o, false
	}
	i := 1
	v, n := lenenc(p[i:])
	if n == 0 {
		return o, false
	}
	o.affected, i = v, i+n
	v, n = lenenc(p[i:])
	if n == 0 {
		return o, false
	}
	o.insertID, i = v, i+n
	if len(p) >= i+4 {
		o.status = binary.LittleEndian.Uint16(p[i:])
		o.warnings = binary.LittleEndian.Uint16(p[i+2:])
	}
	return o, true
}

// parseEOF parses a classic 5-byte EOF packet's payload.
func parseEOF(p []byte) (status, warnings uint16) {
	if len(p) >= 5 {
		warnings = binary.LittleEndian.Uint16(p[1:])
		status = binary.LittleEndian.Uint16(p[3:])
	}
	return status, warnings
}

// isTerminator reports whether a packet that begins a row slot ends the
// rows instead: an EOF, or an OK with the EOF header. A row can begin with
// 0xfe only when its first value is at least 2^24 bytes long, so its packet
// is a full one.
func isTerminator(first byte, n int) bool {
	return first == mysql.EOF_HEADER && n < maxPayload
}

// parseErr parses an ERR packet's payload.
func parseErr(p []byte) (code uint16, state, msg string) {
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

// appendErr appends an ERR packet's payload. The SQL state marker is only
// meaningful once the client has said it speaks protocol 4.1; before the
// handshake (withState false) it is left out, as the server does.
func appendErr(b []byte, code uint16, state, msg string, withState bool) []byte {
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

// appendOK appends an OK packet's payload.
func appendOK(b []byte, affected, insertID uint64, status, warnings uint16) []byte {
	b = append(b, mysql.OK_HEADER)
	b = mysql.AppendLengthEncodedInteger(b, affected)
	b = mysql.AppendLengthEncodedInteger(b, insertID)
	return binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(b, status), warnings)
}

// cstring returns the NUL-terminated string at b and the bytes after it.
func cstring(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return string(b), nil, false
}
