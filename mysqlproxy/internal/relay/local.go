package relay

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// This file writes responses of mycached's own making: OK, ERR and small
// text result sets, for pseudo-queries answered without the backend.

// ReplySeq is the sequence id that mycached's own answer to the current
// command starts at: the one after the command's last wire packet (1,
// unless the command took more than one).
func (s *Session) ReplySeq() byte { return s.Client.LastSeq + 1 }

// WriteOK answers the current command with an OK packet.
func (s *Session) WriteOK(affected uint64) error {
	b := wire.AppendOK(make([]byte, 0, 16), affected, 0, s.ownStatus(), 0)
	if _, err := s.Client.WritePacket(b, s.ReplySeq()); err != nil {
		return ClientError{err}
	}
	s.Last = Response{Kind: RespOK, Status: s.Status, Affected: affected}
	return s.Flush()
}

// WriteErr answers the current command with an error and keeps the
// connection.
func (s *Session) WriteErr(code uint16, state, msg string) error {
	s.SendError(s.ReplySeq(), code, state, msg, true)
	s.Last = Response{Kind: RespErr, ErrCode: code, ErrMsg: msg}
	return nil
}

// WriteResult answers the current command with a text result set whose
// columns are all strings; a nil value is NULL.
func (s *Session) WriteResult(cols []string, rows [][]*string) error {
	return s.WriteRows(cols, nil, len(rows), func(r, c int) ([]byte, bool) {
		if c < len(rows[r]) && rows[r][c] != nil {
			return []byte(*rows[r][c]), true
		}
		return nil, false // a short row is padded with NULLs
	}, false)
}

// WriteRows answers with a result set of nrows rows of string columns
// cols, in the text protocol, or in the binary protocol of
// COM_STMT_EXECUTE. colls are the columns' collations (wire.Collation*;
// nil: all utf8mb4). cell returns a row's column value, or false for NULL.
func (s *Session) WriteRows(cols []string, colls []uint16, nrows int, cell func(row, col int) ([]byte, bool), binaryRows bool) error {
	seq := s.ReplySeq()
	var err error
	b := mysql.AppendLengthEncodedInteger(nil, uint64(len(cols)))
	if seq, err = s.Client.WritePacket(b, seq); err != nil {
		return ClientError{err}
	}
	for i, c := range cols {
		coll := uint16(wire.CollationUTF8MB4)
		if i < len(colls) {
			coll = colls[i]
		}
		b = wire.AppendColumnDefIn(b[:0], c, s.ExtMeta, coll)
		if seq, err = s.Client.WritePacket(b, seq); err != nil {
			return ClientError{err}
		}
	}
	if !s.DeprecateEOF() {
		if seq, err = s.Client.WritePacket(wire.AppendEOF(b[:0], s.ownStatus()), seq); err != nil {
			return ClientError{err}
		}
	}
	for r := range nrows {
		b = b[:0]
		var nulls []byte
		if binaryRows {
			// The binary row's NULL bitmap is offset by two bits.
			b = append(b, mysql.OK_HEADER)
			nb := (len(cols) + 7 + 2) / 8
			b = append(b, make([]byte, nb)...)
			nulls = b[1 : 1+nb]
		}
		for i := range cols {
			v, ok := cell(r, i)
			if !ok {
				if binaryRows {
					nulls[(i+2)/8] |= 1 << ((i + 2) % 8)
				} else {
					b = append(b, 0xfb)
				}
				continue
			}
			b = mysql.AppendLengthEncodedInteger(b, uint64(len(v)))
			b = append(b, v...)
		}
		if seq, err = s.Client.WritePacket(b, seq); err != nil {
			return ClientError{err}
		}
	}
	if s.DeprecateEOF() {
		b = wire.AppendOK(b[:0], 0, 0, s.ownStatus(), 0)
		b[0] = mysql.EOF_HEADER
	} else {
		b = wire.AppendEOF(b[:0], s.ownStatus())
	}
	if _, err = s.Client.WritePacket(b, seq); err != nil {
		return ClientError{err}
	}
	s.Last = Response{Kind: RespResultSet, Status: s.Status, Results: 1, Columns: len(cols), Rows: int64(nrows)}
	return s.Flush()
}

// ownStatus is the status of an answer of mycached's own: the session's,
// less what only the server's answer that set it meant.
func (s *Session) ownStatus() uint16 { return s.Status & sessionStatus }

// sessionStatus are the status flags that describe the session rather
// than the statement that last set them (an index not used, a slow
// query, a cursor, a state change): an answer of mycached's own carries
// these alone, as the server's to a statement that set none of the
// others would.
const sessionStatus = mysql.SERVER_STATUS_IN_TRANS | mysql.SERVER_STATUS_AUTOCOMMIT |
	mysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED | mysql.SERVER_STATUS_IN_TRANS_READONLY

// Flush sends what the client's buffer holds.
func (s *Session) Flush() error {
	if err := s.Client.W.Flush(); err != nil {
		return ClientError{err}
	}
	return nil
}
