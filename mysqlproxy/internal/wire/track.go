package wire

import (
	"encoding/binary"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Session state tracking (CLIENT_SESSION_TRACK). An OK packet's info is a
// length-encoded string, present when not empty; with tracking, and the
// status's SERVER_SESSION_STATE_CHANGED, it is present even when empty,
// and followed by the session state changes the statement made: a
// sequence of (type, length-encoded data) entries. (Servers send the info
// length-encoded with or without tracking, whatever older documents say,
// and clients read it so.)

// The session state entry types.
const (
	TrackSystemVariables   = 0
	TrackSchema            = 1
	TrackStateChange       = 2
	TrackGTIDs             = 3
	TrackTxCharacteristics = 4
	TrackTxState           = 5
)

// ErrBadOK means an OK packet is malformed.
var ErrBadOK = errors.New("wire: malformed OK packet")

// OKPacket is an OK packet in full: what ParseOK reads, and the rest.
type OKPacket struct {
	Header             byte // OK_HEADER, or EOF_HEADER for a result set's closing OK
	Affected, InsertID uint64
	Status, Warnings   uint16
	Info               []byte
	State              []byte // the raw session state changes; nil when none
}

// ParseOKPacket reads an OK packet's payload. track says whether the
// connection negotiated CLIENT_SESSION_TRACK, which changes how the info
// is encoded. The slices point into p.
func ParseOKPacket(p []byte, track bool) (OKPacket, error) {
	var o OKPacket
	if len(p) < 1 {
		return o, ErrBadOK
	}
	o.Header = p[0]
	i := 1
	v, n := Lenenc(p[i:])
	if n == 0 {
		return o, ErrBadOK
	}
	o.Affected, i = v, i+n
	if v, n = Lenenc(p[i:]); n == 0 {
		return o, ErrBadOK
	}
	o.InsertID, i = v, i+n
	if len(p) < i+4 {
		// Old servers may end here; nothing follows.
		return o, nil
	}
	o.Status = binary.LittleEndian.Uint16(p[i:])
	o.Warnings = binary.LittleEndian.Uint16(p[i+2:])
	i += 4
	if i == len(p) {
		return o, nil
	}
	l, n := Lenenc(p[i:])
	if n == 0 || uint64(len(p)-i-n) < l {
		return o, ErrBadOK
	}
	o.Info = p[i+n : i+n+int(l)]
	i += n + int(l)
	if track && o.Status&mysql.SERVER_SESSION_STATE_CHANGED != 0 && i < len(p) {
		l, n = Lenenc(p[i:])
		if n == 0 || uint64(len(p)-i-n) < l {
			return o, ErrBadOK
		}
		o.State = p[i+n : i+n+int(l)]
	}
	return o, nil
}

// AppendOKPacket appends o as an OK packet payload for a connection that
// did (track) or did not negotiate CLIENT_SESSION_TRACK. Without it the
// state changes are dropped and SERVER_SESSION_STATE_CHANGED cleared.
func AppendOKPacket(b []byte, o OKPacket, track bool) []byte {
	status := o.Status
	if !track || o.State == nil {
		status &^= mysql.SERVER_SESSION_STATE_CHANGED
	}
	b = append(b, o.Header)
	b = mysql.AppendLengthEncodedInteger(b, o.Affected)
	b = mysql.AppendLengthEncodedInteger(b, o.InsertID)
	b = binary.LittleEndian.AppendUint16(b, status)
	b = binary.LittleEndian.AppendUint16(b, o.Warnings)
	if len(o.Info) == 0 && status&mysql.SERVER_SESSION_STATE_CHANGED == 0 {
		return b
	}
	b = mysql.AppendLengthEncodedInteger(b, uint64(len(o.Info)))
	b = append(b, o.Info...)
	if status&mysql.SERVER_SESSION_STATE_CHANGED != 0 {
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(o.State)))
		b = append(b, o.State...)
	}
	return b
}

// StateEntry is one session state change.
type StateEntry struct {
	Type byte
	Data []byte // the entry's data, as sent
}

// ParseState splits the session state changes of an OK packet into their
// entries. The entries point into b.
func ParseState(b []byte) ([]StateEntry, error) {
	var out []StateEntry
	for len(b) > 0 {
		t := b[0]
		l, n := Lenenc(b[1:])
		if n == 0 || uint64(len(b)-1-n) < l {
			return out, ErrBadOK
		}
		out = append(out, StateEntry{Type: t, Data: b[1+n : 1+n+int(l)]})
		b = b[1+n+int(l):]
	}
	return out, nil
}

// AppendState appends entries as session state changes.
func AppendState(b []byte, entries []StateEntry) []byte {
	for _, e := range entries {
		b = append(b, e.Type)
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(e.Data)))
		b = append(b, e.Data...)
	}
	return b
}

// LenencString reads a length-encoded string at the start of b and
// returns it and the rest.
func LenencString(b []byte) (s, rest []byte, ok bool) {
	l, n := Lenenc(b)
	if n == 0 || uint64(len(b)-n) < l {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}
