package mysqlproxy

import (
	"bufio"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// RespKind says what shape a response had.
type RespKind uint8

// The response kinds.
const (
	RespNone      RespKind = iota // the command has no response
	RespOK                        // an OK packet (or EOF for commands answered by one)
	RespErr                       // an ERR packet
	RespResultSet                 // one or more result sets, possibly ending in OK
)

// Response is the parsed view of a relayed response that is kept on the
// side: the relay copies raw packets, and notes only these fields. For
// multi-result responses the status, counts and error are those of the
// last result, and Results counts them.
type Response struct {
	Kind        RespKind
	Status      uint16 // server status flags of the final OK/EOF
	Affected    uint64 // affected rows (sum over results)
	InsertID    uint64 // last insert id of the last OK that set one
	Warnings    uint16 // warnings, summed over results
	ErrCode     uint16
	ErrMsg      string
	Results     int
	Columns     int
	Rows        int64
	Bytes       int64 // wire bytes relayed
	LocalInfile bool
	Cursor      bool // a cursor was opened: rows come by COM_STMT_FETCH
}

// Failed reports whether any result of the response was an error.
func (r *Response) Failed() bool { return r.ErrCode != 0 || r.Kind == RespErr }

// respMode says where in the result set grammar a response starts.
type respMode uint8

const (
	modeResult    respMode = iota // OK, ERR, EOF, LOCAL INFILE or result sets
	modeFieldList                 // column definitions until EOF (COM_FIELD_LIST)
	modeRows                      // rows until EOF (COM_STMT_FETCH)
)

// relayer copies one response from the backend to the client, packet by
// packet, into the client's buffered writer, teeing the raw bytes when
// asked. It looks at no more of each packet than its header and first
// bytes, except for the small OK, EOF and ERR packets.
type relayer struct {
	s       *session
	dst     *bufio.Writer // where packets go; nil means the client
	noFlush bool          // leave the response buffered (a write's OK waits for its invalidation)
	tee     []byte        // raw response bytes, headers included; nil when not teeing or over teeMax
	teeMax  int
	lastSeq byte
	head    [512]byte // the first bytes of the last packet
	resp    Response

	pktStart   int   // offset in tee of the packet being relayed
	statusOffs []int // offsets in tee of the status flags of EOF and OK packets
}

func (r *relayer) out() *bufio.Writer {
	if r.dst != nil {
		return r.dst
	}
	return r.s.client.w
}

// packet relays one logical packet and returns its first bytes and total
// payload length.
func (r *relayer) packet() ([]byte, int, error) {
	b := r.s.backend
	w := r.out()
	total := 0
	r.pktStart = len(r.tee)
	var head []byte
	for {
		n, seq, err := b.readHeader()
		if err != nil {
			return nil, 0, backendErr{err}
		}
		r.lastSeq = seq
		var h [4]byte
		h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), seq
		if _, err := w.Write(h[:]); err != nil {
			return nil, 0, clientErr{err}
		}
		r.teeBytes(h[:])
		if head == nil {
			k := min(n, len(r.head))
			p, err := b.r.Peek(k)
			if err != nil {
				return nil, 0, backendErr{err}
			}
			head = r.head[:copy(r.head[:], p)]
		}
		if r.tee != nil {
			r.tee, err = copyPayload(w, b.r, n, r.tee, r.teeMax)
		} else {
			_, err = copyPayload(w, b.r, n, nil, 0)
		}
		if err != nil {
			if _, ok := err.(clientErr); ok {
				return nil, 0, err
			}
			return nil, 0, backendErr{err}
		}
		total += n
		r.resp.Bytes += int64(n) + 4
		if n < maxPayload {
			return head, total, nil
		}
	}
}

func (r *relayer) teeBytes(b []byte) {
	if r.tee == nil {
		return
	}
	if len(r.tee)+len(b) > r.teeMax {
		r.tee = nil
		return
	}
	r.tee = append(r.tee, b...)
}

// backendErr marks an error reading from the backend.
type backendErr struct{ err error }

func (e backendErr) Error() string { return "backend: " + e.err.Error() }
func (e backendErr) Unwrap() error { return e.err }

// relay copies a whole response in the given mode and flushes the client
// once at its end.
func (r *relayer) relay(mode respMode) error {
	var err error
	switch mode {
	case modeFieldList:
		err = r.columns(-1)
	case modeRows:
		r.resp.Kind = RespResultSet
		err = r.rows()
	default:
		err = r.results()
	}
	if err != nil || r.noFlush {
		return err
	}
	if err := r.out().Flush(); err != nil {
		return clientErr{err}
	}
	return nil
}

// results relays OK, ERR, EOF or result sets, following MORE_RESULTS.
func (r *relayer) results() error {
	for {
		head, n, err := r.packet()
		if err != nil {
			return err
		}
		if n == 0 {
			return backendErr{errf("empty response packet")}
		}
		r.resp.Results++
		more := false
		switch {
		case head[0] == mysql.OK_HEADER:
			r.ok(head)
			more = r.resp.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0
		case head[0] == mysql.ERR_HEADER:
			r.err(head)
			return nil
		case head[0] == mysql.EOF_HEADER && n < 9:
			if r.resp.Kind == RespNone {
				r.resp.Kind = RespOK
			}
			r.terminator(head, n)
			return nil
		case head[0] == mysql.LocalInFile_HEADER:
			r.resp.LocalInfile = true
			r.resp.Results--
			if err := r.s.sendLocalFile(); err != nil {
				return err
			}
			continue
		default:
			cols, k := lenenc(head)
			if k == 0 {
				return backendErr{errf("bad column count")}
			}
			r.resp.Kind = RespResultSet
			if err := r.columns(int(cols)); err != nil {
				return err
			}
			if r.resp.Cursor || r.resp.ErrCode != 0 {
				return nil
			}
			if err := r.rows(); err != nil {
				return err
			}
			more = r.resp.ErrCode == 0 && r.resp.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0
		}
		if !more {
			return nil
		}
	}
}

// columns relays n column definitions and the EOF that follows them unless
// the client deprecated it; n < 0 means until the EOF (COM_FIELD_LIST).
func (r *relayer) columns(n int) error {
	r.resp.Columns = max(n, 0)
	for i := 0; n < 0 || i < n; i++ {
		head, size, err := r.packet()
		if err != nil {
			return err
		}
		if n < 0 {
			switch {
			case size > 0 && head[0] == mysql.ERR_HEADER:
				r.err(head)
				return nil
			case size > 0 && isTerminator(head[0], size):
				r.resp.Kind = RespResultSet
				r.terminator(head, size)
				return nil
			}
			r.resp.Columns++
		}
	}
	if r.s.deprecateEOF() {
		return nil
	}
	head, size, err := r.packet()
	if err != nil {
		return err
	}
	if size > 0 && head[0] == mysql.ERR_HEADER {
		r.err(head)
		return nil
	}
	r.terminator(head, size)
	// A cursor's metadata ends the response; rows come by COM_STMT_FETCH.
	r.resp.Cursor = r.resp.Status&mysql.SERVER_STATUS_CURSOR_EXISTS != 0
	return nil
}

// rows relays rows up to and including the terminating EOF, OK or ERR.
func (r *relayer) rows() error {
	for {
		head, n, err := r.packet()
		if err != nil {
			return err
		}
		switch {
		case n > 0 && head[0] == mysql.ERR_HEADER:
			r.err(head)
			return nil
		case n > 0 && isTerminator(head[0], n):
			r.terminator(head, n)
			r.resp.Cursor = r.resp.Status&mysql.SERVER_STATUS_CURSOR_EXISTS != 0
			return nil
		}
		r.resp.Rows++
	}
}

func (r *relayer) terminator(head []byte, n int) {
	if n < 9 && !r.s.deprecateEOF() {
		r.noteStatus(3)
		r.eof(head)
		return
	}
	_, k1 := lenenc(head[1:])
	_, k2 := lenenc(head[1+k1:])
	r.noteStatus(1 + k1 + k2)
	r.ok(head)
}

// noteStatus records where in the tee the status flags of the current
// packet are, so that a replay can put the session's own there.
func (r *relayer) noteStatus(payloadOff int) {
	if r.tee != nil {
		r.statusOffs = append(r.statusOffs, r.pktStart+4+payloadOff)
	}
}

func (r *relayer) ok(head []byte) {
	if r.resp.Kind == RespNone {
		r.resp.Kind = RespOK
	}
	if o, ok := parseOK(head); ok {
		r.resp.Status = o.status
		r.resp.Affected += o.affected
		if o.insertID != 0 {
			r.resp.InsertID = o.insertID
		}
		r.resp.Warnings += o.warnings
	}
	r.s.status = r.resp.Status
}

func (r *relayer) eof(head []byte) {
	st, w := parseEOF(head)
	r.resp.Status = st
	r.resp.Warnings += w
	r.s.status = st
}

func (r *relayer) err(head []byte) {
	if r.resp.Kind == RespNone {
		r.resp.Kind = RespErr
	}
	code, _, msg := parseErr(head)
	r.resp.ErrCode = code
	r.resp.ErrMsg = msg
	// An error ends a multi-result response; the server's transaction
	// state is whatever it was, and the next OK will say.
}

// sendLocalFile answers the server's LOCAL INFILE request by relaying the
// client's file packets to the backend, up to the empty packet that ends
// them. The request itself has been buffered for the client already.
func (s *session) sendLocalFile() error {
	if err := s.client.w.Flush(); err != nil {
		return clientErr{err}
	}
	for {
		n, seq, err := s.client.readHeader()
		if err != nil {
			return clientErr{err}
		}
		if err := s.backend.writeHeader(n, seq); err != nil {
			return backendErr{err}
		}
		if _, err := copyPayload(s.backend.w, s.client.r, n, nil, 0); err != nil {
			// copyPayload calls its destination the client; here the
			// destination is the backend and the source the client.
			if ce, ok := err.(clientErr); ok {
				return backendErr{ce.err}
			}
			return clientErr{err}
		}
		if n == 0 {
			break
		}
	}
	if err := s.backend.w.Flush(); err != nil {
		return backendErr{err}
	}
	return nil
}

// stmtPrepared is what a COM_STMT_PREPARE response says.
type stmtPrepared struct {
	id      uint32
	columns uint16
	params  uint16
}

// relayPrepare relays a COM_STMT_PREPARE response.
func (r *relayer) relayPrepare() (stmtPrepared, error) {
	var sp stmtPrepared
	head, n, err := r.packet()
	if err != nil {
		return sp, err
	}
	switch {
	case n > 0 && head[0] == mysql.ERR_HEADER:
		r.err(head)
	case n >= 9 && head[0] == mysql.OK_HEADER:
		r.resp.Kind = RespOK
		sp.id = binary.LittleEndian.Uint32(head[1:])
		sp.columns = binary.LittleEndian.Uint16(head[5:])
		sp.params = binary.LittleEndian.Uint16(head[7:])
		for _, k := range []uint16{sp.params, sp.columns} {
			if k == 0 {
				continue
			}
			for i := 0; i < int(k); i++ {
				if _, _, err := r.packet(); err != nil {
					return sp, err
				}
			}
			if !r.s.deprecateEOF() {
				if _, _, err := r.packet(); err != nil {
					return sp, err
				}
			}
		}
	default:
		return sp, backendErr{errf("bad prepare response")}
	}
	if err := r.s.client.w.Flush(); err != nil {
		return sp, clientErr{err}
	}
	return sp, nil
}
