package relay

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// FuzzHandshakeParsers feeds arbitrary bytes to everything that reads the
// connection phase: the client's handshake response and COM_CHANGE_USER,
// and the backend's greeting. None may panic, and the rewrites of
// capabilities keep the packet's length.
func FuzzHandshakeParsers(f *testing.F) {
	f.Fuzz(func(t *testing.T, p []byte) {
		_, _ = ParseHandshakeResponse(p)
		clientExt(p)
		if len(p) >= 4 {
			_, _ = parseChangeUser(p, binary.LittleEndian.Uint32(p))
			q := append([]byte(nil), p...)
			setCaps(q, true, true)
			if len(q) != len(p) {
				t.Fatalf("setCaps changed the length: %d, want %d", len(q), len(p))
			}
		}
		_, _ = parseChangeUser(p, mysql.CLIENT_SECURE_CONNECTION|mysql.CLIENT_PLUGIN_AUTH)
		if g, err := parseGreeting(append([]byte(nil), p...)); err == nil {
			n := len(g.payload)
			g.mask(len(p)%2 == 0)
			if len(g.payload) != n {
				t.Fatalf("mask changed the greeting's length: %d, want %d", len(g.payload), n)
			}
		}
	})
}

// handshakeResponse builds a protocol 4.1 handshake response as a client
// does: the auth data as caps say (length-encoded, a length byte, or
// NUL-terminated), then the schema, the plugin and the connection
// attributes when caps ask for them.
func handshakeResponse(caps uint32, user, auth, db, plugin, attrs []byte) []byte {
	p := binary.LittleEndian.AppendUint32(nil, caps)
	p = binary.LittleEndian.AppendUint32(p, 1<<24) // max packet
	p = append(p, 45)                              // charset
	p = append(p, make([]byte, 23)...)
	p = append(append(p, user...), 0)
	switch {
	case caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		p = append(mysql.AppendLengthEncodedInteger(p, uint64(len(auth))), auth...)
	case caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		p = append(append(p, byte(len(auth))), auth...)
	default:
		p = append(append(p, auth...), 0)
	}
	if caps&mysql.CLIENT_CONNECT_WITH_DB != 0 {
		p = append(append(p, db...), 0)
	}
	if caps&mysql.CLIENT_PLUGIN_AUTH != 0 {
		p = append(append(p, plugin...), 0)
	}
	if caps&mysql.CLIENT_CONNECT_ATTRS != 0 {
		p = append(mysql.AppendLengthEncodedInteger(p, uint64(len(attrs))), attrs...)
	}
	return p
}

// noNUL drops the NUL bytes of b: names on the wire are NUL-terminated.
func noNUL(b []byte) []byte { return bytes.ReplaceAll(b, []byte{0}, nil) }

// FuzzParseHandshakeResponse builds well-formed handshake responses from
// the fuzzer's fields, with any capabilities, auth data of any length and
// any connection attributes, and checks that the user, schema and plugin
// come back as sent. Every truncation of the packet either fails or still
// names the same user: a cut packet must never make mycached read another
// account than the server does.
func FuzzParseHandshakeResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, caps uint32, user, auth, db, plugin, attrs []byte) {
		caps |= mysql.CLIENT_PROTOCOL_41
		user, db, plugin = noNUL(user), noNUL(db), noNUL(plugin)
		switch {
		case caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		case caps&mysql.CLIENT_SECURE_CONNECTION != 0:
			auth = auth[:min(len(auth), 255)]
		default:
			auth = noNUL(auth)
		}
		p := handshakeResponse(caps, user, auth, db, plugin, attrs)
		h, err := ParseHandshakeResponse(p)
		if err != nil {
			t.Fatalf("parse of a well-formed response: %v", err)
		}
		if h.Caps != caps || h.User != string(user) {
			t.Fatalf("got caps %#x user %q, want %#x %q", h.Caps, h.User, caps, user)
		}
		if caps&mysql.CLIENT_CONNECT_WITH_DB != 0 && h.DB != string(db) {
			t.Fatalf("got schema %q, want %q", h.DB, db)
		}
		if caps&mysql.CLIENT_CONNECT_WITH_DB == 0 && h.DB != "" {
			t.Fatalf("got schema %q without CLIENT_CONNECT_WITH_DB", h.DB)
		}
		if caps&mysql.CLIENT_PLUGIN_AUTH != 0 && h.Plugin != string(plugin) {
			t.Fatalf("got plugin %q, want %q", h.Plugin, plugin)
		}
		for n := range len(p) {
			if h, err := ParseHandshakeResponse(p[:n]); err == nil && h.User != string(user) {
				t.Fatalf("cut at %d: got user %q, want %q", n, h.User, user)
			}
		}
	})
}
