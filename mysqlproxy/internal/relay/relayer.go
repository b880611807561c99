package relay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
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
	// Tracked is what the response's OK packets said of the session's
	// state, when the backend tracks it.
	Tracked Tracked
}

// Failed reports whether any result of the response was an error.
func (r *Response) Failed() bool { return r.ErrCode != 0 || r.Kind == RespErr }

// RespMode says where in the result set grammar a response starts.
type RespMode uint8

const (
	ModeResult    RespMode = iota // OK, ERR, EOF, LOCAL INFILE or result sets
	ModeFieldList                 // column definitions until EOF (COM_FIELD_LIST)
	ModeRows                      // rows until EOF (COM_STMT_FETCH)
)

// Relayer copies one response from the backend to the client, packet by
// packet, into the client's buffered writer, teeing the raw bytes when
// asked. It looks at no more of each packet than its header and first
// bytes, except for the small OK, EOF and ERR packets.
type Relayer struct {
	S       *Session
	Dst     *bufio.Writer // where packets go; nil means the client
	NoFlush bool          // leave the response buffered (a write's OK waits for its invalidation)
	Tee     *wire.Tee     // keeps the raw response bytes, headers included; nil when not teeing
	LastSeq byte
	head    [512]byte // the first bytes of the last packet
	Resp    Response

	// shift turns the backend's sequence ids into the client's (see
	// clientSeq); shifted says it is set for this part of the response.
	shift   byte
	shifted bool

	pktStart int
	okBuf    []byte // an OK packet being rewritten
	outBuf   []byte // its client version
	teeBuf   []byte // its tee version
	// StatusOffs are the offsets in Tee of the status flags of EOF and OK
	// packets, so that a replay can put a session's own there.
	StatusOffs []int
}

// clientSeq is the sequence id the client gets for a packet the backend
// numbered seq. They differ only under the compressed protocol, where
// the packets of an answer are numbered after the frames of what was
// read, and mycached's frames toward the backend need not be the
// client's toward it (a command over 16 MiB, a LOCAL INFILE's file):
// the first packet of the answer, and of the part after a file, is
// numbered as the server numbers it for the client's frames, and the
// rest follow it.
func (r *Relayer) clientSeq(seq byte) byte {
	if !r.shifted {
		r.shifted = true
		r.shift = 0
		if next, ok := r.S.Client.AnswerSeq(); ok {
			r.shift = next - seq
		}
	}
	return seq + r.shift
}

func (r *Relayer) out() *bufio.Writer {
	if r.Dst != nil {
		return r.Dst
	}
	return r.S.Client.W
}

// packet relays one logical packet and returns its first bytes and total
// payload length.
func (r *Relayer) packet() ([]byte, int, error) {
	b := r.S.Backend
	w := r.out()
	total := 0
	r.pktStart = r.Tee.Len()
	var head []byte
	for {
		n, seq, err := b.ReadHeader()
		if err != nil {
			return nil, 0, BackendError{err}
		}
		r.LastSeq = seq
		var h [4]byte
		h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), r.clientSeq(seq)
		if _, err := w.Write(h[:]); err != nil {
			return nil, 0, ClientError{err}
		}
		h[3] = seq
		r.teeBytes(h[:])
		if head == nil {
			k := min(n, len(r.head))
			p, err := b.R.Peek(k)
			if err != nil {
				return nil, 0, BackendError{err}
			}
			head = r.head[:copy(r.head[:], p)]
		}
		err = wire.CopyPayload(w, b.R, n, r.Tee)
		if err != nil {
			if _, ok := err.(wire.DstError); ok {
				return nil, 0, clientErr(err)
			}
			return nil, 0, BackendError{err}
		}
		total += n
		r.Resp.Bytes += int64(n) + 4
		if n < wire.MaxPayload {
			return head, total, nil
		}
	}
}

// okAt says what may stand where a packet is read: an OK packet (00),
// a result set's closing OK (FE, with CLIENT_DEPRECATE_EOF), or neither.
type okAt uint8

const (
	noOK okAt = iota
	okOrTerminator
	terminatorOnly
)

// packetAt relays one logical packet where an OK packet may stand. When
// the backend tracks session state, an OK is read whole and rewritten for
// the client (and for the tee) by rewriteOK, and so is a classic EOF for a
// client that does not track (classicEOF); anything else goes through
// packet. A backend connection that negotiated tracking but whose
// trackers are the server's own (strip) has them stripped the same way
// for a client that did not ask for them.
func (r *Relayer) packetAt(at okAt) ([]byte, int, error) {
	strip := !r.S.Track && r.S.backendTrack && !r.S.ClientTrack
	if !r.S.Track && !strip || (at == noOK && r.S.ClientTrack) {
		// Nothing to rewrite: a column definition is read as it is.
		return r.packet()
	}
	b := r.S.Backend
	h, err := b.R.Peek(4)
	if err != nil {
		return nil, 0, BackendError{err}
	}
	n := wire.PayloadLen(h)
	if n == 0 || n >= wire.MaxPayload {
		return r.packet()
	}
	h, err = b.R.Peek(5)
	if err != nil {
		return nil, 0, BackendError{err}
	}
	switch {
	case h[4] == mysql.EOF_HEADER && n == 5 && !r.S.ClientTrack:
		return r.classicEOF(h[3])
	case at == noOK:
		return r.packet()
	case h[4] == mysql.OK_HEADER && at == okOrTerminator:
	case h[4] == mysql.EOF_HEADER && n >= 7:
	default:
		return r.packet()
	}
	return r.rewriteOK(n, h[3])
}

// classicEOF relays a classic EOF packet, whose header the reader still
// holds, with SERVER_SESSION_STATE_CHANGED cleared: the server sets it
// for the trackers mycached turned on, and never for a client that did
// not ask to track. The first bytes returned are the server's, flag and
// all, for the session to note.
func (r *Relayer) classicEOF(seq byte) ([]byte, int, error) {
	b := r.S.Backend
	p, err := b.R.Peek(9)
	if err != nil {
		return nil, 0, BackendError{err}
	}
	var pkt [9]byte
	copy(pkt[:], p)
	_, _ = b.R.Discard(9)
	head := r.head[:copy(r.head[:], pkt[4:])]
	st, _ := wire.ParseEOF(head)
	st &^= mysql.SERVER_SESSION_STATE_CHANGED
	pkt[7], pkt[8] = byte(st), byte(st>>8)
	r.LastSeq = seq
	r.pktStart = r.Tee.Len()
	pkt[3] = r.clientSeq(seq)
	if _, err := r.out().Write(pkt[:]); err != nil {
		return nil, 0, ClientError{err}
	}
	pkt[3] = seq
	r.teeBytes(pkt[:])
	r.Resp.Bytes += int64(len(pkt))
	return head, 5, nil
}

// rewriteOK relays an OK packet of n bytes whose header the reader still
// holds: the session notes the state changes it carries, the client gets
// the ones it asked to track in its own encoding, and the tee gets the OK
// without any, as every client can read it.
func (r *Relayer) rewriteOK(n int, seq byte) ([]byte, int, error) {
	b := r.S.Backend
	_, _ = b.R.Discard(4)
	r.okBuf = grow(r.okBuf[:0], n)
	if _, err := io.ReadFull(b.R, r.okBuf); err != nil {
		return nil, 0, BackendError{err}
	}
	p := r.okBuf
	r.LastSeq = seq
	r.pktStart = r.Tee.Len()
	o, err := wire.ParseOKPacket(p, true)
	out := p
	tee := p
	if err == nil {
		var state []byte
		if o.State != nil && r.S.Track {
			state = r.S.noteState(o.State, &r.Resp.Tracked)
		}
		co := o
		co.State = state
		r.outBuf = wire.AppendOKPacket(r.outBuf[:0], co, r.S.ClientTrack)
		out = r.outBuf
		to := o
		to.State = nil
		r.teeBuf = wire.AppendOKPacket(r.teeBuf[:0], to, false)
		tee = r.teeBuf
	}
	w := r.out()
	var h [4]byte
	h[0], h[1], h[2], h[3] = byte(len(out)), byte(len(out)>>8), byte(len(out)>>16), r.clientSeq(seq)
	if _, err := w.Write(h[:]); err != nil {
		return nil, 0, ClientError{err}
	}
	if _, err := w.Write(out); err != nil {
		return nil, 0, ClientError{err}
	}
	th := [4]byte{byte(len(tee)), byte(len(tee) >> 8), byte(len(tee) >> 16), seq}
	r.teeBytes(th[:])
	r.teeBytes(tee)
	r.Resp.Bytes += int64(len(out)) + 4
	head := r.head[:copy(r.head[:], out)]
	return head, len(out), nil
}

func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}

// cursor reports whether the status of the packet just relayed says a
// cursor was opened for the command: only an execute that asked for one
// (COM_STMT_FETCH), and only then; the same flag in a procedure's results
// is the procedure's own cursor.
func (r *Relayer) cursor() bool {
	return r.S.cursorCmd && r.Resp.Status&mysql.SERVER_STATUS_CURSOR_EXISTS != 0
}

func (r *Relayer) teeBytes(b []byte) { r.Tee.Write(b) }

// Relay copies a whole response in the given mode and flushes the client
// once at its end.
func (r *Relayer) Relay(mode RespMode) error {
	var err error
	switch mode {
	case ModeFieldList:
		err = r.columns(-1)
	case ModeRows:
		r.Resp.Kind = RespResultSet
		err = r.rows()
	default:
		err = r.results()
	}
	if err != nil || r.NoFlush {
		return err
	}
	if err := r.out().Flush(); err != nil {
		return ClientError{err}
	}
	return nil
}

// results relays OK, ERR, EOF or result sets, following MORE_RESULTS.
func (r *Relayer) results() error {
	for {
		head, n, err := r.packetAt(okOrTerminator)
		if err != nil {
			return err
		}
		if n == 0 {
			return BackendError{errors.New("relay: empty response packet")}
		}
		r.Resp.Results++
		more := false
		switch {
		case head[0] == mysql.OK_HEADER:
			r.ok(head)
			more = r.Resp.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0
		case head[0] == mysql.ERR_HEADER:
			r.err(head)
			return nil
		case head[0] == mysql.EOF_HEADER && n < 9:
			if r.Resp.Kind == RespNone {
				r.Resp.Kind = RespOK
			}
			r.terminator(head, n)
			return nil
		case head[0] == mysql.LocalInFile_HEADER:
			r.Resp.LocalInfile = true
			r.Resp.Results--
			if err := r.S.sendLocalFile(r.LastSeq + 1); err != nil {
				return err
			}
			r.shifted = false // the answer follows the file's frames
			continue
		default:
			cols, k := wire.Lenenc(head)
			if k == 0 {
				return BackendError{errors.New("relay: bad column count")}
			}
			r.Resp.Kind = RespResultSet
			if err := r.columns(int(cols)); err != nil {
				return err
			}
			if r.Resp.Cursor || r.Resp.ErrCode != 0 {
				return nil
			}
			if err := r.rows(); err != nil {
				return err
			}
			more = r.Resp.ErrCode == 0 && r.Resp.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0
		}
		if !more {
			return nil
		}
	}
}

// columns relays n column definitions and the EOF that follows them unless
// the client deprecated it; n < 0 means until the EOF (COM_FIELD_LIST).
func (r *Relayer) columns(n int) error {
	r.Resp.Columns = max(n, 0)
	for i := 0; n < 0 || i < n; i++ {
		at := noOK
		if n < 0 {
			at = terminatorOnly
		}
		head, size, err := r.packetAt(at)
		if err != nil {
			return err
		}
		if n < 0 {
			switch {
			case size > 0 && head[0] == mysql.ERR_HEADER:
				r.err(head)
				return nil
			case size > 0 && wire.IsTerminator(head[0], size):
				r.Resp.Kind = RespResultSet
				r.terminator(head, size)
				return nil
			}
			r.Resp.Columns++
		}
	}
	if r.S.DeprecateEOF() {
		return nil
	}
	head, size, err := r.packetAt(noOK)
	if err != nil {
		return err
	}
	if size > 0 && head[0] == mysql.ERR_HEADER {
		r.err(head)
		return nil
	}
	r.terminator(head, size)
	// A cursor's metadata ends the response; rows come by COM_STMT_FETCH.
	r.Resp.Cursor = r.cursor()
	return nil
}

// rows relays rows up to and including the terminating EOF, OK or ERR.
func (r *Relayer) rows() error {
	for {
		head, n, err := r.packetAt(terminatorOnly)
		if err != nil {
			return err
		}
		switch {
		case n > 0 && head[0] == mysql.ERR_HEADER:
			r.err(head)
			return nil
		case n > 0 && wire.IsTerminator(head[0], n):
			r.terminator(head, n)
			r.Resp.Cursor = r.cursor()
			return nil
		}
		r.Resp.Rows++
	}
}

func (r *Relayer) terminator(head []byte, n int) {
	if n < 9 && !r.S.DeprecateEOF() {
		r.noteStatus(3)
		r.eof(head)
		return
	}
	_, k1 := wire.Lenenc(head[1:])
	_, k2 := wire.Lenenc(head[1+k1:])
	r.noteStatus(1 + k1 + k2)
	r.ok(head)
}

// noteStatus records where in the tee the status flags of the current
// packet are, so that a replay can put the session's own there.
func (r *Relayer) noteStatus(payloadOff int) {
	if r.Tee.On() {
		r.StatusOffs = append(r.StatusOffs, r.pktStart+4+payloadOff)
	}
}

func (r *Relayer) ok(head []byte) {
	if r.Resp.Kind == RespNone {
		r.Resp.Kind = RespOK
	}
	if o, ok := wire.ParseOK(head); ok {
		r.Resp.Status = o.Status
		r.Resp.Affected += o.Affected
		if o.InsertID != 0 {
			r.Resp.InsertID = o.InsertID
		}
		r.Resp.Warnings += o.Warnings
	}
	r.S.Status = r.Resp.Status
}

func (r *Relayer) eof(head []byte) {
	st, w := wire.ParseEOF(head)
	r.Resp.Status = st
	r.Resp.Warnings += w
	r.S.Status = st
	if st&mysql.SERVER_SESSION_STATE_CHANGED != 0 && r.S.Track {
		// A classic EOF carries no state changes, only the flag that
		// there were some (a function the statement called set a
		// variable, a role, a temporary table): what they were is
		// unknown.
		r.Resp.Tracked.Unseen = true
	}
}

func (r *Relayer) err(head []byte) {
	if r.Resp.Kind == RespNone {
		r.Resp.Kind = RespErr
	}
	code, _, msg := wire.ParseErr(head)
	r.Resp.ErrCode = code
	r.Resp.ErrMsg = msg
	// An error ends a multi-result response; the server's transaction
	// state is whatever it was, and the next OK will say.
}

// sendLocalFile answers the server's LOCAL INFILE request by relaying the
// client's file packets to the backend, up to the empty packet that ends
// them. An empty packet after one of MaxPayload bytes continues that one
// and does not end the file. The request itself has been buffered for the
// client already.
//
// Under the compressed protocol the server checks only the frames'
// sequence ids, not those of the packets inside them (Connector/J
// numbers the file's packets from 0 inside frames that go on from the
// request's): there the packets go to the backend renumbered, as it
// expects them.
func (s *Session) sendLocalFile(expect byte) error {
	s.clientWatch.stop()
	if err := s.Client.W.Flush(); err != nil {
		return ClientError{err}
	}
	for cont := false; ; {
		n, seq, err := s.Client.ReadHeader()
		if err != nil {
			return ClientError{err}
		}
		if s.Client.Compressed() {
			seq = expect
		}
		if seq != expect {
			// A new command instead of the file's next packet: the
			// server answers so, at the sequence id it expected, then
			// again at 0 (whatever the packet's own), and ends the
			// session.
			for _, at := range []byte{expect, 0} {
				s.SendError(at, mysql.ER_NET_PACKETS_OUT_OF_ORDER, "08S01", "Got packets out of order", true)
			}
			return ClientError{errOutOfOrder}
		}
		expect++
		if err := s.Backend.WriteHeader(n, seq); err != nil {
			return BackendError{err}
		}
		if err := wire.CopyPayload(s.Backend.W, s.Client.R, n, nil); err != nil {
			// The destination here is the backend and the source the client.
			if de, ok := err.(wire.DstError); ok {
				return BackendError{de.Err}
			}
			return ClientError{err}
		}
		if n == 0 && !cont {
			break
		}
		cont = n == wire.MaxPayload
	}
	s.Client.SyncSeq() // the server's answer follows the file's last frame
	if err := s.Backend.W.Flush(); err != nil {
		return BackendError{err}
	}
	return nil
}

// errOutOfOrder is a client packet whose sequence id is not the next.
var errOutOfOrder = errors.New("relay: client packets out of order")

// stmtPrepared is what a COM_STMT_PREPARE response says.
type stmtPrepared struct {
	id      uint32
	columns uint16
	params  uint16
}

// relayPrepare relays a COM_STMT_PREPARE response.
func (r *Relayer) relayPrepare() (stmtPrepared, error) {
	var sp stmtPrepared
	head, n, err := r.packet()
	if err != nil {
		return sp, err
	}
	switch {
	case n > 0 && head[0] == mysql.ERR_HEADER:
		r.err(head)
	case n >= 9 && head[0] == mysql.OK_HEADER:
		r.Resp.Kind = RespOK
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
			if !r.S.DeprecateEOF() {
				if _, _, err := r.packet(); err != nil {
					return sp, err
				}
			}
		}
	default:
		return sp, BackendError{errors.New("relay: bad prepare response")}
	}
	if err := r.S.Client.W.Flush(); err != nil {
		return sp, ClientError{err}
	}
	return sp, nil
}
