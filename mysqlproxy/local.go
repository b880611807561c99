package mysqlproxy

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// This file writes responses of mycached's own making: OK, ERR and small
// text result sets, for pseudo-queries answered without the backend.

// replySeq is the sequence id that mycached's own answer to the current
// command starts at: the one after the command's last wire packet (1,
// unless the command took more than one).
func (s *session) replySeq() byte { return s.client.lastSeq + 1 }

// writeOK answers the current command with an OK packet.
func (s *session) writeOK(affected uint64) error {
	b := appendOK(make([]byte, 0, 16), affected, 0, s.status, 0)
	if _, err := s.client.writePacket(b, s.replySeq()); err != nil {
		return clientErr{err}
	}
	s.last = Response{Kind: RespOK, Status: s.status, Affected: affected}
	return s.flush()
}

// writeErr answers the current command with an error and keeps the
// connection.
func (s *session) writeErr(code uint16, state, msg string) error {
	s.sendError(s.replySeq(), code, state, msg, true)
	s.last = Response{Kind: RespErr, ErrCode: code, ErrMsg: msg}
	return nil
}

// writeResult answers the current command with a text result set whose
// columns are all strings; a nil value is NULL.
func (s *session) writeResult(cols []string, rows [][]*string) error {
	return s.writeRows(cols, len(rows), func(r, c int) ([]byte, bool) {
		if c < len(rows[r]) && rows[r][c] != nil {
			return []byte(*rows[r][c]), true
		}
		return nil, false // a short row is padded with NULLs
	}, false)
}

// writeRows answers with a result set of nrows rows of string columns
// cols, in the text protocol, or in the binary protocol of
// COM_STMT_EXECUTE. cell returns a row's column value, or false for NULL.
func (s *session) writeRows(cols []string, nrows int, cell func(row, col int) ([]byte, bool), binaryRows bool) error {
	seq := s.replySeq()
	var err error
	b := mysql.AppendLengthEncodedInteger(nil, uint64(len(cols)))
	if seq, err = s.client.writePacket(b, seq); err != nil {
		return clientErr{err}
	}
	for _, c := range cols {
		b = appendColumnDef(b[:0], c)
		if seq, err = s.client.writePacket(b, seq); err != nil {
			return clientErr{err}
		}
	}
	if !s.deprecateEOF() {
		if seq, err = s.client.writePacket(appendEOF(b[:0], s.status), seq); err != nil {
			return clientErr{err}
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
		if seq, err = s.client.writePacket(b, seq); err != nil {
			return clientErr{err}
		}
	}
	if s.deprecateEOF() {
		b = appendOK(b[:0], 0, 0, s.status, 0)
		b[0] = mysql.EOF_HEADER
	} else {
		b = appendEOF(b[:0], s.status)
	}
	if _, err = s.client.writePacket(b, seq); err != nil {
		return clientErr{err}
	}
	s.last = Response{Kind: RespResultSet, Status: s.status, Results: 1, Columns: len(cols), Rows: int64(nrows)}
	return s.flush()
}

func (s *session) flush() error {
	if err := s.client.w.Flush(); err != nil {
		return clientErr{err}
	}
	return nil
}

func appendEOF(b []byte, status uint16) []byte {
	b = append(b, mysql.EOF_HEADER, 0, 0)
	return binary.LittleEndian.AppendUint16(b, status)
}

// appendColumnDef appends a protocol 4.1 column definition for a utf8mb4
// string column.
func appendColumnDef(b []byte, name string) []byte {
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
	b = append(b, 0x0c)
	b = binary.LittleEndian.AppendUint16(b, 45) // utf8mb4_general_ci
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, mysql.MYSQL_TYPE_VAR_STRING)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = append(b, 0, 0, 0) // decimals, filler
	return b
}
