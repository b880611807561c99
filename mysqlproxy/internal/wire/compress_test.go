package wire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// pair returns two ends of a loopback TCP connection.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// frame builds one compressed-protocol frame by hand.
func frame(seq byte, data []byte, compress bool) []byte {
	payload, ulen := data, 0
	if compress {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write(data)
		w.Close()
		payload, ulen = b.Bytes(), len(data)
	}
	h := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq, byte(ulen), byte(ulen >> 8), byte(ulen >> 16)}
	return append(h, payload...)
}

// packet builds one wire packet by hand.
func packet(seq byte, payload []byte) []byte {
	return append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}, payload...)
}

// TestCompressRoundTrip: packets written on one compressed side are read
// whole on the other, however the frames cut them; a command restarts
// the frame sequence on the side that sends commands, and the answering
// side goes on from the sequence it read.
func TestCompressRoundTrip(t *testing.T) {
	a, b := pair(t)
	client, server := NewConn(a), NewConn(b)
	client.Compress(true)
	server.Compress(false)

	// Two wire packets, in two frames: compressible, but not uniform.
	big := bytes.Repeat([]byte("select id from t where id = 1;"), MaxPayload/30+100)
	big[rand.IntN(len(big))] = 0
	small := []byte{3, 'S', 'E', 'L'} // below minCompress: sent raw
	for round := range 2 {
		go func() {
			if _, err := client.WritePacket(big, 0); err != nil {
				t.Error(err)
			}
			client.W.Flush()
		}()
		got, seq, err := server.ReadPacket(nil, 1<<30)
		if err != nil || seq != 0 || !bytes.Equal(got, big) {
			t.Fatalf("round %d: big packet: %d bytes, seq %d, %v", round, len(got), seq, err)
		}
		if s := server.comp.seq; s == 0 {
			t.Fatalf("round %d: the server's next frame would be 0", round)
		}
		next := server.comp.seq
		go func() {
			server.WritePacket(small, 1)
			server.W.Flush()
		}()
		got, seq, err = client.ReadPacket(nil, 1<<20)
		if err != nil || seq != 1 || !bytes.Equal(got, small) {
			t.Fatalf("round %d: small packet: %q, seq %d, %v", round, got, seq, err)
		}
		if client.comp.seq != next+1 {
			t.Fatalf("round %d: the client read frame %d, want %d", round, client.comp.seq-1, next)
		}
	}
}

// TestCompressReadResumes: a read that a deadline cuts off in the middle
// of a frame goes on where it stopped, as the relay's watchers need.
func TestCompressReadResumes(t *testing.T) {
	a, b := pair(t)
	r := NewConn(b)
	r.Compress(false)
	data := bytes.Repeat([]byte("mycached "), 1000)
	pkt := append([]byte{byte(len(data)), byte(len(data) >> 8), 0, 0}, data...)
	f := frame(0, pkt, true)
	a.Write(f[:5]) // part of the header
	r.NetConn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := r.R.Peek(1); err == nil {
		t.Fatal("a partial frame was read whole")
	}
	a.Write(f[5 : len(f)/2])
	r.NetConn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := r.R.Peek(1); err == nil {
		t.Fatal("a partial frame was read whole")
	}
	r.NetConn.SetReadDeadline(time.Time{})
	a.Write(f[len(f)/2:])
	got, _, err := r.ReadPacket(nil, 1<<20)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after the interruptions: %d bytes, %v", len(got), err)
	}
}

// TestCompressBadFrames: a frame that does not inflate to the length it
// claims is an error, and a small one that claims 16 MiB is refused
// without holding 16 MiB.
func TestCompressBadFrames(t *testing.T) {
	good := frame(0, bytes.Repeat([]byte{'x'}, 100), true)
	garbage := append(good[:7:7], bytes.Repeat([]byte{0xAB}, len(good)-7)...)
	long := append([]byte(nil), good...)
	long[4], long[5], long[6] = 5, 0, 0 // inflates to more than it claims
	cut := append([]byte(nil), good[:7+4]...)
	cut[0], cut[1], cut[2] = 4, 0, 0 // its zlib stream cut inside its data
	for name, f := range map[string][]byte{"garbage": garbage, "long": long, "cut": cut} {
		a, b := pair(t)
		r := NewConn(b)
		r.Compress(false)
		a.Write(f)
		_, _, err := r.ReadPacket(nil, 1<<20)
		if !errors.Is(err, errBadFrame) {
			t.Errorf("%s: %v, want errBadFrame", name, err)
		}
	}
	// A peer that hangs up mid-frame.
	a, b := pair(t)
	r := NewConn(b)
	r.Compress(false)
	a.Write(good[:len(good)-3])
	a.Close()
	if _, _, err := r.ReadPacket(nil, 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut frame: %v, want ErrUnexpectedEOF", err)
	}
}

// TestCompressFrameShorterThanClaimed: a frame whose stream inflates to
// fewer bytes than its header claims is read at the length it has, as the
// server reads it.
func TestCompressFrameShorterThanClaimed(t *testing.T) {
	cmd := packet(0, []byte("\x03SELECT 1 -- a comment long enough to be worth compressing"))
	for _, claim := range []int{len(cmd) + 1, 1<<24 - 1} {
		f := frame(0, cmd, true)
		f[4], f[5], f[6] = byte(claim), byte(claim>>8), byte(claim>>16)
		a, b := pair(t)
		r := NewConn(b)
		r.Compress(false)
		a.Write(f)
		if got, _, err := r.ReadCommand(nil, 1<<20); err != nil || !bytes.Equal(got, cmd[4:]) {
			t.Errorf("claiming %d bytes: %q, %v", claim, got, err)
		}
	}
}

// TestCompressCommandSequence: on the side that answers, a command that
// begins a frame of a sequence id other than 0 is returned with that id,
// whether the frame was read ahead or not, and the answer's frame goes
// on from the last one written; the frames that continue a command, or that carry
// what a command asked the client for, are not held to 0.
func TestCompressCommandSequence(t *testing.T) {
	a, b := pair(t)
	server := NewConn(b)
	server.Compress(false)
	answerSeq := func() byte {
		t.Helper()
		server.WritePacket([]byte{0, 0, 0, 2, 0}, 1)
		server.W.Flush()
		var h [7]byte
		if _, err := io.ReadFull(a, h[:]); err != nil {
			t.Fatal(err)
		}
		io.ReadFull(a, make([]byte, PayloadLen(h[:])))
		return h[3]
	}
	read := func(want string, wantSeq byte, command bool) {
		t.Helper()
		r := server.ReadPacket
		if command {
			r = server.ReadCommand
		}
		got, seq, err := r(nil, 1<<20)
		if err != nil || string(got) != want || seq != wantSeq {
			t.Fatalf("read %q, seq %d, %v; want %q, seq %d", got, seq, err, want, wantSeq)
		}
	}
	// A command in two frames, 0 and 1.
	cmdA := packet(0, append([]byte{3}, bytes.Repeat([]byte("a"), 3000)...))
	a.Write(frame(0, cmdA[:1000], true))
	a.Write(frame(1, cmdA[1000:], true))
	read(string(cmdA[4:]), 0, true)
	if s := answerSeq(); s != 2 {
		t.Fatalf("answer in frame %d, want 2", s)
	}
	// What the answer asked for (a file's contents) goes on from it.
	a.Write(frame(3, packet(2, []byte("file")), false))
	read("file", 0, false)
	answerSeq()
	// A command in frame 5.
	a.Write(frame(5, packet(0, []byte("\x03SELECT 5")), false))
	read("\x03SELECT 5", 5, true)
	if s := answerSeq(); s != 5 {
		t.Fatalf("refusal in frame %d, want 5, after the answer to the file in frame 4", s)
	}
	// Read ahead by a watcher: a command in frame 0, then one in frame 7.
	a.Write(frame(0, packet(0, []byte("\x03SELECT 0")), false))
	a.Write(frame(7, packet(0, []byte("\x03SELECT 7")), false))
	time.Sleep(50 * time.Millisecond)
	if _, err := server.R.Peek(1); err != nil {
		t.Fatal(err)
	}
	read("\x03SELECT 0", 0, true)
	answerSeq()
	read("\x03SELECT 7", 7, true)
}

// TestCompressAnswerFollowsWhatWasRead: on the side that answers, a
// read ahead (a watcher peeking at the client's next command) does not
// move the answer's frames: they follow the last frame of the command
// the session read, as a server's do.
func TestCompressAnswerFollowsWhatWasRead(t *testing.T) {
	a, b := pair(t)
	server := NewConn(b)
	server.Compress(false)
	// Command A in two frames (0 and 1), command B in one (0).
	cmdA := packet(0, append([]byte{3}, bytes.Repeat([]byte("a"), 5000)...))
	a.Write(frame(0, cmdA[:2000], true))
	a.Write(frame(1, cmdA[2000:], true))
	a.Write(frame(0, packet(0, []byte{3, 'B'}), false))

	got, _, err := server.ReadPacket(nil, 1<<20)
	if err != nil || len(got) != 5001 {
		t.Fatalf("command A: %d bytes, %v", len(got), err)
	}
	// A watcher reads B's frame while A's answer is written.
	if _, err := server.R.Peek(1); err != nil {
		t.Fatal(err)
	}
	answerSeq := func() byte {
		t.Helper()
		server.WritePacket([]byte{0, 0, 0, 2, 0}, 1) // an OK
		server.W.Flush()
		var h [7]byte
		if _, err := io.ReadFull(a, h[:]); err != nil {
			t.Fatal(err)
		}
		rest := make([]byte, PayloadLen(h[:]))
		io.ReadFull(a, rest)
		return h[3]
	}
	if s := answerSeq(); s != 2 {
		t.Fatalf("answer to A in frame %d, want 2 (after A's frames 0 and 1)", s)
	}
	if got, _, err := server.ReadPacket(nil, 1<<20); err != nil || string(got) != "\x03B" {
		t.Fatalf("command B: %q, %v", got, err)
	}
	if s := answerSeq(); s != 1 {
		t.Fatalf("answer to B in frame %d, want 1", s)
	}
}

// TestCompressInnerSequence: on the side that answers, the packets inside
// frames are not held to their own sequence ids, as the server does not
// hold them: a command sent as packet 1 in frame 0 (Connector/J), and a
// command over 16 MiB whose second packet is numbered apart from the
// frames (the C client), are read; the first sequence id is 0, and the
// last the last frame's.
func TestCompressInnerSequence(t *testing.T) {
	a, b := pair(t)
	server := NewConn(b)
	server.Compress(false)
	a.Write(frame(0, packet(1, []byte("\x03SELECT 1")), false))
	got, seq, err := server.ReadPacket(nil, 1<<20)
	if err != nil || string(got) != "\x03SELECT 1" || seq != 0 || server.LastSeq != 0 {
		t.Fatalf("a command as packet 1 in frame 0: %q, seq %d, last %d, %v", got, seq, server.LastSeq, err)
	}
	long := bytes.Repeat([]byte("a"), MaxPayload+10)
	long[0] = 3
	stream := append(packet(0, long[:MaxPayload]), packet(0, long[MaxPayload:])...)
	go func() {
		for i := 0; len(stream) > 0; i++ {
			n := min(len(stream), MaxPayload)
			a.Write(frame(byte(i), stream[:n], false))
			stream = stream[n:]
		}
	}()
	got, seq, err = server.ReadPacket(nil, 1<<25)
	if err != nil || !bytes.Equal(got, long) || seq != 0 || server.LastSeq != 1 {
		t.Fatalf("a command over 16 MiB whose packets are both numbered 0: %d bytes, seq %d, last %d, %v", len(got), seq, server.LastSeq, err)
	}
}

// FuzzCompressedRead reads an arbitrary compressed stream as the command
// loop does: ReadPacket returns packets or an error, never panics, and
// the session's sequence bookkeeping stays within the frames read.
func FuzzCompressedRead(f *testing.F) {
	pkt := append([]byte{6, 0, 0, 0, 3}, "SELECT"...)
	f.Add(frame(0, pkt, false))
	f.Add(frame(0, append(pkt, bytes.Repeat([]byte(" 1"), 100)...), true))
	f.Add(append(frame(0, pkt[:3], false), frame(1, pkt[3:], true)...))
	f.Add([]byte{5, 0, 0, 0, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := &compConn{br: bufio.NewReaderSize(bytes.NewReader(stream), 16)}
		p := &Conn{R: bufio.NewReaderSize(c, 16), comp: c}
		for i := 0; i < 100; i++ {
			b, _, err := p.ReadPacket(nil, 1<<20)
			if err != nil {
				return
			}
			if len(b) > 1<<20 {
				t.Fatalf("a packet of %d bytes over the limit", len(b))
			}
			if len(c.ends) > 1024+1 {
				t.Fatalf("%d frame ends kept", len(c.ends))
			}
		}
	})
}
