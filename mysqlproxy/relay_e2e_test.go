package mysqlproxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	mysqlc "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// typesSchema is a table holding one of most column types a client
// decodes differently, with rows that include NULLs, utf8mb4 text and
// bytes that look like protocol markers (0x00, 0xfb NULL, 0xfe EOF, 0xff
// ERR).
const typesSchema = `
CREATE TABLE types (
  id INT PRIMARY KEY,
  ti TINYINT, si SMALLINT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED,
  de DECIMAL(30,10), fl FLOAT, db DOUBLE,
  d DATE, dt DATETIME(6), ts TIMESTAMP NULL, tm TIME(3), y YEAR,
  vc VARCHAR(100), tx MEDIUMTEXT, bl MEDIUMBLOB, vb VARBINARY(16),
  en ENUM('a','b','c'), bt BIT(9), js JSON
) DEFAULT CHARSET=utf8mb4;
INSERT INTO types VALUES
  (1, -128, 65535, -9223372036854775808, 18446744073709551615,
   12345678901234567890.0123456789, 1.5, 2.718281828459045,
   '2024-02-29', '2024-02-29 23:59:59.123456', '2001-09-09 01:46:40', '-838:59:59.000', 2155,
   'héllo wörld', 'emoji 🐬🚀 and CJK 漢字', X'00FBFEFF0102', X'FE',
   'b', b'101010101', '{"k": [1, 2, {"x": null}]}'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, 0, 0, 0, 0, 0, 0, 0, '0000-00-00', '1000-01-01 00:00:00', NULL, '00:00:00', 1901,
   '', '', '', '', 'a', b'0', '[]'),
  (4, 127, 1, 9223372036854775807, 1, -0.0000000001, -3.4e38, 1e-300,
   '9999-12-31', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', '838:59:59.999', 2000,
   REPEAT('x', 100), REPEAT('long text ', 5000), REPEAT(X'FB', 70000), X'FFFFFFFF',
   'c', b'111111111', '"str"');
`

// TestE2EGoDriverModes checks that go-sql-driver/mysql sees the same
// results through the proxy as directly, in each of the ways it sends
// statements: plain text, client-side interpolation, and server-side
// prepared statements with arguments (the binary protocol).
func TestE2EGoDriverModes(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	name := m.NewDatabase(t)
	m.Exec(t, "USE `"+name+"`; "+typesSchema)

	modes := []struct{ name, params string }{
		{"text", ""},
		{"interpolate", "interpolateParams=true"},
		{"prepared", "interpolateParams=false"},
		{"prepared-parseTime", "parseTime=true&loc=UTC"},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			db := openPair(t, m, p, name, mode.params)
			if mode.name == "text" {
				// No args: the driver sends COM_QUERY and reads text rows.
				db.sameResults(t, "SELECT * FROM types ORDER BY id")
				db.sameResults(t, "SELECT id, tx IS NULL, LENGTH(bl), HEX(vb) FROM types ORDER BY id DESC")
				db.sameResults(t, "SELECT * FROM types WHERE id < 0")
				db.sameResults(t, "SHOW CREATE TABLE types")
				return
			}
			db.sameResults(t, "SELECT * FROM types WHERE id >= ? ORDER BY id", 0)
			db.sameResults(t, "SELECT * FROM types WHERE id = ? OR vc = ? OR bl = ?", 2, "héllo wörld", []byte{0, 0xfb, 0xfe, 0xff, 1, 2})
			db.sameResults(t, "SELECT ? AS a, ? AS b, ? AS c, ? AS d, ? AS e, ? AS f", nil, int64(-1), uint64(1<<63), 3.25, "🐬", []byte{0xfe, 0})
			db.sameResults(t, "SELECT de * ?, dt + INTERVAL ? SECOND FROM types WHERE id IN (?, ?)", 2, 1, 1, 4)
			db.sameResults(t, "SELECT * FROM types WHERE id = ?", 99)
			if mode.name == "prepared-parseTime" {
				db.sameResults(t, "SELECT ?", time.Date(2024, 2, 29, 12, 30, 45, 123456000, time.UTC))
			}

			// Writes with args through the proxy land as they would directly.
			ctx := context.Background()
			id := 100 + len(mode.name)
			if _, err := db.proxied.ExecContext(ctx, "INSERT INTO types (id, de, vc, bl, d) VALUES (?, ?, ?, ?, ?)",
				id, "3.1400000000", "ünïcödé 🎉", []byte{0, 0xff, 0xfe}, "2020-01-02"); err != nil {
				t.Fatalf("insert through proxy: %v", err)
			}
			got := m.QueryString(t, "SELECT CONCAT_WS(',', de, vc, HEX(bl), d) FROM `"+name+"`.types WHERE id = ?", id)
			if want := "3.1400000000,ünïcödé 🎉,00FFFE,2020-01-02"; got != want {
				t.Errorf("row inserted through proxy: got %q, want %q", got, want)
			}
		})
	}
}

// TestE2EBigBlob round-trips blobs of 32 MiB, and of the size whose row
// packet is exactly 2^24-1 bytes (so the protocol needs an empty packet
// after it), through the proxy with prepared-statement arguments.
func TestE2EBigBlob(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	name := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE `"+name+"`.blobs (id INT PRIMARY KEY, b LONGBLOB)")
	// With maxAllowedPacket=0 the driver reads the server's 256 MiB and
	// sends every argument inline in COM_STMT_EXECUTE; with its default of
	// 64 MiB it sends a 32 MiB argument by COM_STMT_SEND_LONG_DATA.
	db := openPair(t, m, p, name, "maxAllowedPacket=0")
	longData := openDB(t, rootDSN(p.addr, name, ""))
	ctx := context.Background()

	cases := []struct {
		n    int
		pool *sql.DB
	}{
		{32 << 20, db.proxied},
		{32 << 20, longData},
		{1<<24 - 1 - 4, db.proxied}, // one-column row: 0xfd + 3 length bytes + value fills a whole packet
		{1<<24 - 1, db.proxied},     // the value alone needs two wire packets
	}
	for i, c := range cases {
		n := c.n
		blob := make([]byte, n)
		for j := range blob {
			blob[j] = byte(j*7 + j>>13 + i)
		}
		if _, err := c.pool.ExecContext(ctx, "INSERT INTO blobs VALUES (?, ?)", i, blob); err != nil {
			t.Fatalf("insert %d-byte blob through proxy: %v", n, err)
		}
		wantSum := sha256.Sum256(blob)
		if got := m.QueryString(t, "SELECT SHA2(b, 256) FROM `"+name+"`.blobs WHERE id = ?", i); got != hexString(wantSum[:]) {
			t.Fatalf("%d-byte blob as stored: sha256 %s, want %x", n, got, wantSum)
		}
		for _, q := range []struct {
			query string
			args  []any
		}{
			{fmt.Sprintf("SELECT b FROM blobs WHERE id = %d", i), nil}, // text protocol
			{"SELECT b FROM blobs WHERE id = ?", []any{i}},             // binary protocol
		} {
			var got []byte
			if err := c.pool.QueryRowContext(ctx, q.query, q.args...).Scan(&got); err != nil {
				t.Fatalf("%s through proxy (%d bytes): %v", q.query, n, err)
			}
			if !bytes.Equal(got, blob) {
				t.Errorf("%s through proxy: got %d bytes (sha256 %x), want %d bytes (sha256 %x)", q.query, len(got), sha256.Sum256(got), n, wantSum)
			}
		}
	}
	// The connection is still in sync after the big packets.
	db.sameResults(t, "SELECT id, LENGTH(b) FROM blobs ORDER BY id")
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestE2EMultiStatements checks multi-statement queries and a procedure
// returning two result sets, read with NextResultSet.
func TestE2EMultiStatements(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	name := m.NewDatabase(t)
	m.Exec(t, "USE `"+name+"`; CREATE TABLE k (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)); INSERT INTO k (v) VALUES ('a'), ('b'), (NULL)")
	m.Exec(t, "USE `"+name+"`; CREATE PROCEDURE two(IN lim INT) BEGIN SELECT id, v FROM k WHERE id <= lim ORDER BY id; SELECT COUNT(*) AS n, 'done' AS s FROM k; END")
	m.Exec(t, "USE `"+name+"`; CREATE PROCEDURE none() BEGIN DO 1; END")
	db := openPair(t, m, p, name, "multiStatements=true")

	db.sameResults(t, "SELECT 1 AS one; SELECT 'x' AS a, NULL AS b; SELECT * FROM k ORDER BY id")
	db.sameResults(t, "CALL two(2)")
	db.sameResults(t, "CALL two(0)")
	db.sameResults(t, "SELECT 1; CALL two(3); SELECT 2")
	// A write in the middle, run on a scratch table each way so both sides
	// see the same counts.
	db.sameResults(t, "CREATE TEMPORARY TABLE s (x INT); INSERT INTO s VALUES (1),(2); SELECT * FROM s; DROP TEMPORARY TABLE s")
	// An error part way through ends the batch with that error, both ways.
	ctx := context.Background()
	_, errD := queryDump(ctx, db.direct, "SELECT 1; SELECT * FROM nope; SELECT 3")
	_, errP := queryDump(ctx, db.proxied, "SELECT 1; SELECT * FROM nope; SELECT 3")
	if errD == nil || errP == nil || errD.Error() != errP.Error() {
		t.Errorf("batch with a failing statement: through proxy got %v, want %v", errP, errD)
	}
	if _, err := db.proxied.ExecContext(ctx, "CALL none(); CALL none()"); err != nil {
		t.Errorf("CALL without results through proxy: %v", err)
	}
	db.sameResults(t, "SELECT COUNT(*) FROM k")
}

// rawConn is a go-mysql client connection used to send commands as raw
// packets and record the raw responses.
type rawConn struct {
	*client.Conn
	deprecateEOF bool
}

// dialSmallBuffers dials with a small receive buffer (a client.Dialer): a
// client that does not read then takes little of a reply, and the rest
// waits on mycached.
func dialSmallBuffers(ctx context.Context, network, address string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		_ = rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		return err
	}}
	return d.DialContext(ctx, network, address)
}

func dialRaw(t testing.TB, addr, user, pass, db string, deprecateEOF bool) *rawConn {
	t.Helper()
	c, err := client.Connect(addr, user, pass, db, func(c *client.Conn) error {
		c.ReadTimeout = 20 * time.Second
		c.WriteTimeout = 20 * time.Second
		if !deprecateEOF {
			c.UnsetCapability(mysqlc.CLIENT_DEPRECATE_EOF)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("go-mysql connect to %s as %s: %v", addr, user, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, deprecateEOF: deprecateEOF}
}

// command sends one command packet with sequence id 0.
func (c *rawConn) command(payload ...byte) error {
	c.ResetSequence()
	return c.WritePacket(append(make([]byte, 4, 4+len(payload)), payload...))
}

// exchange sends one command and reads its whole response (see
// readResponse), failing the test on a connection error. It returns the
// packets as hex and the last one decoded.
func (c *rawConn) exchange(t testing.TB, payload ...byte) ([]string, []byte) {
	t.Helper()
	if err := c.command(payload...); err != nil {
		t.Fatal(err)
	}
	pkts, err := c.readResponse(false)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := hex.DecodeString(pkts[len(pkts)-1])
	return pkts, last
}

// isEnd reports whether p ends rows or metadata: an EOF, or an OK with the
// EOF header under CLIENT_DEPRECATE_EOF.
func isEnd(p []byte) bool { return len(p) > 0 && p[0] == 0xfe && len(p) < 0xffffff }

// endStatus returns the server status flags of an EOF or OK packet.
func (c *rawConn) endStatus(p []byte) uint16 {
	if p[0] == 0xfe && !c.deprecateEOF && len(p) >= 5 {
		return uint16(p[3]) | uint16(p[4])<<8
	}
	i := 1
	for k := 0; k < 2; k++ { // affected rows, last insert id
		switch p[i] {
		case 0xfc:
			i += 3
		case 0xfd:
			i += 4
		case 0xfe:
			i += 9
		default:
			i++
		}
	}
	return uint16(p[i]) | uint16(p[i+1])<<8
}

// readResponse reads one whole response to COM_QUERY, COM_STMT_EXECUTE or
// COM_STMT_FETCH (rows true) as hex packets.
func (c *rawConn) readResponse(rows bool) ([]string, error) {
	var out []string
	read := func() ([]byte, error) {
		p, err := c.ReadPacket()
		if err == nil {
			out = append(out, hex.EncodeToString(p))
		}
		return p, err
	}
	for {
		if !rows {
			p, err := read()
			if err != nil {
				return out, err
			}
			switch {
			case p[0] == 0xff:
				return out, nil
			case p[0] == 0x00 || isEnd(p):
				if c.endStatus(p)&mysqlc.SERVER_MORE_RESULTS_EXISTS == 0 {
					return out, nil
				}
				continue
			}
			n, _, _ := mysqlc.LengthEncodedInt(p)
			for i := uint64(0); i < n; i++ {
				if _, err := read(); err != nil {
					return out, err
				}
			}
			if !c.deprecateEOF {
				p, err := read()
				if err != nil {
					return out, err
				}
				if c.endStatus(p)&mysqlc.SERVER_STATUS_CURSOR_EXISTS != 0 {
					return out, nil
				}
			}
		}
		rows = false
		for {
			p, err := read()
			if err != nil {
				return out, err
			}
			if p[0] == 0xff {
				return out, nil
			}
			if isEnd(p) {
				st := c.endStatus(p)
				if st&mysqlc.SERVER_STATUS_CURSOR_EXISTS != 0 || st&mysqlc.SERVER_MORE_RESULTS_EXISTS == 0 {
					return out, nil
				}
				break
			}
		}
	}
}

// comScenario runs every command a client can send, through go-mysql's
// API where it has one and as raw packets where it does not, and returns a
// transcript of what the client saw, raw where the bytes are not specific
// to the connection.
func comScenario(t *testing.T, addr, db string, deprecateEOF bool) []string {
	var tr []string
	add := func(format string, args ...any) { tr = append(tr, fmt.Sprintf(format, args...)) }
	errCode := func(err error) string {
		if err == nil {
			return "ok"
		}
		if me, ok := errors.AsType[*mysqlc.MyError](err); ok {
			return fmt.Sprintf("error %d %s %s", me.Code, me.State, me.Message)
		}
		return "error " + err.Error()
	}
	result := func(r *mysqlc.Result, err error) string {
		if err != nil {
			return errCode(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "status=%#x affected=%d insert=%d warnings=%d", r.Status, r.AffectedRows, r.InsertId, r.Warnings)
		if r.Resultset != nil {
			for _, f := range r.Fields {
				fmt.Fprintf(&b, " %s:%d:%d", f.Name, f.Type, f.Flag)
			}
			for i := range r.RowDatas {
				fmt.Fprintf(&b, " row=%x", r.RowDatas[i])
			}
		}
		return b.String()
	}
	c := dialRaw(t, addr, "root", rootPass, "", deprecateEOF)

	add("ping %s", errCode(c.Ping()))
	add("use nope %s", errCode(c.UseDB("nope_db")))
	add("use %s", errCode(c.UseDB(db)))
	add("query %s", result(c.Execute("SELECT DATABASE() = ?", db)))

	for _, fl := range [][2]string{{"f", ""}, {"f", "n%"}, {"nope", ""}} {
		fields, err := c.FieldList(fl[0], fl[1])
		add("field list %v %s", fl, errCode(err))
		for _, f := range fields {
			add("  field %s.%s type=%d len=%d flag=%#x charset=%d default=%q", f.Table, f.Name, f.Type, f.ColumnLength, f.Flag, f.Charset, f.DefaultValue)
		}
	}

	st, err := c.Prepare("SELECT id, name, amount FROM f WHERE id > ? ORDER BY id")
	add("prepare %s", errCode(err))
	if err == nil {
		add("  params=%d columns=%d", st.ParamNum(), st.ColumnNum())
		add("  execute %s", result(st.Execute(1)))
		add("  execute %s", result(st.Execute("3")))
		add("  close %s", errCode(st.Close()))
	}
	_, err = c.Prepare("SELEKT nonsense")
	add("prepare bad %s", errCode(err))
	ins, err := c.Prepare("INSERT INTO f (id, name, amount) VALUES (?, ?, ?)")
	add("prepare insert %s", errCode(err))
	if err == nil {
		add("  execute %s", result(ins.Execute(100, "hundred", 1.5)))
		add("  execute dup %s", result(ins.Execute(100, "again", nil)))
		add("  close %s", errCode(ins.Close()))
	}

	add("autocommit %s %v", errCode(c.SetAutoCommit()), c.IsAutoCommit())
	add("begin %s %v", errCode(c.Begin()), c.IsInTransaction())
	add("insert %s", result(c.Execute("INSERT INTO f VALUES (200, 'tx', 2)")))
	add("rollback %s %v", errCode(c.Rollback()), c.IsInTransaction())
	add("count %s", result(c.Execute("SELECT COUNT(*) FROM f")))

	// COM_STATISTICS: a single text packet of counters that differ by the
	// moment, so only its shape is compared.
	if err := c.command(mysqlc.COM_STATISTICS); err != nil {
		t.Fatalf("COM_STATISTICS: %v", err)
	}
	p, err := c.ReadPacket()
	add("statistics %v %v", err, strings.HasPrefix(string(p), "Uptime: ") && strings.Contains(string(p), "Queries per second avg"))

	// COM_SET_OPTION turns multi-statements on and off for this session.
	add("multi before %s", result(c.Execute("SELECT 1; SELECT 2")))
	for _, opt := range []byte{mysqlc.MYSQL_OPTION_MULTI_STATEMENTS_ON, mysqlc.MYSQL_OPTION_MULTI_STATEMENTS_OFF, mysqlc.MYSQL_OPTION_MULTI_STATEMENTS_ON} {
		if err := c.command(mysqlc.COM_SET_OPTION, opt, 0); err != nil {
			t.Fatalf("COM_SET_OPTION: %v", err)
		}
		p, err := c.ReadPacket()
		add("set option %d: %x %v", opt, p, err)
	}
	if err := c.command(append([]byte{mysqlc.COM_QUERY}, "SELECT 1 AS a; SELECT 'b' AS b, NULL AS c; DO 1"...)...); err != nil {
		t.Fatalf("COM_QUERY: %v", err)
	}
	raw, err := c.readResponse(false)
	add("multi after %v %v", raw, err)

	// A read-only cursor, fetched two rows at a time.
	cur, err := c.Prepare("SELECT id, name, amount FROM f ORDER BY id")
	if err != nil {
		t.Fatalf("prepare for cursor: %v", err)
	}
	id := binary.LittleEndian.AppendUint32(nil, cur.ID)
	exec := append(append([]byte{mysqlc.COM_STMT_EXECUTE}, id...), 1 /* CURSOR_TYPE_READ_ONLY */, 1, 0, 0, 0)
	if err := c.command(exec...); err != nil {
		t.Fatalf("COM_STMT_EXECUTE: %v", err)
	}
	raw, err = c.readResponse(false)
	add("cursor execute %v %v", raw, err)
	for i := 0; i < 5; i++ {
		if err := c.command(append(append([]byte{mysqlc.COM_STMT_FETCH}, id...), 2, 0, 0, 0)...); err != nil {
			t.Fatalf("COM_STMT_FETCH: %v", err)
		}
		raw, err = c.readResponse(true)
		add("fetch %v %v", raw, err)
		if err != nil || len(raw) == 0 || !strings.HasPrefix(raw[len(raw)-1], "fe") {
			break
		}
		// Stop at SERVER_STATUS_LAST_ROW_SENT: the error for fetching past
		// it names the statement id, which MariaDB numbers server-wide.
		if last, _ := hex.DecodeString(raw[len(raw)-1]); c.endStatus(last)&mysqlc.SERVER_STATUS_LAST_ROW_SEND != 0 {
			break
		}
	}
	if err := c.command(append([]byte{mysqlc.COM_STMT_RESET}, id...)...); err != nil {
		t.Fatalf("COM_STMT_RESET: %v", err)
	}
	p, err = c.ReadPacket()
	add("stmt reset %x %v", p, err)
	add("close cursor stmt %s", errCode(cur.Close()))

	// COM_STMT_SEND_LONG_DATA, in two chunks, then an execute whose first
	// parameter takes the long data.
	ld, err := c.Prepare("SELECT LENGTH(?), MD5(?)")
	if err != nil {
		t.Fatalf("prepare for long data: %v", err)
	}
	lid := binary.LittleEndian.AppendUint32(nil, ld.ID)
	for _, chunk := range []string{strings.Repeat("a", 100000), strings.Repeat("b", 5)} {
		for param := byte(0); param < 2; param++ {
			if err := c.command(append(append(append([]byte{mysqlc.COM_STMT_SEND_LONG_DATA}, lid...), param, 0), chunk...)...); err != nil {
				t.Fatalf("COM_STMT_SEND_LONG_DATA: %v", err)
			}
		}
	}
	exec = append(append([]byte{mysqlc.COM_STMT_EXECUTE}, lid...), 0, 1, 0, 0, 0, 0 /* null bitmap */, 1, mysqlc.MYSQL_TYPE_BLOB, 0, mysqlc.MYSQL_TYPE_BLOB, 0)
	if err := c.command(exec...); err != nil {
		t.Fatalf("COM_STMT_EXECUTE: %v", err)
	}
	raw, err = c.readResponse(false)
	add("long data execute %v %v", raw, err)
	add("close long data stmt %s", errCode(ld.Close()))
	add("ping %s", errCode(c.Ping()))

	// COM_RESET_CONNECTION drops user variables.
	add("set var %s", result(c.Execute("SET @x = 5")))
	if err := c.command(mysqlc.COM_RESET_CONNECTION); err != nil {
		t.Fatalf("COM_RESET_CONNECTION: %v", err)
	}
	p, err = c.ReadPacket()
	add("reset connection %x %v", p, err)
	add("var after reset %s", result(c.Execute("SELECT @x")))

	// COM_CHANGE_USER with the wrong plugin on purpose, so that the server
	// answers with an auth switch carrying a fresh scramble.
	for _, pass := range []string{"wrong", "cu-pass"} {
		cu := append([]byte{mysqlc.COM_CHANGE_USER}, "mc_cu\x00"...)
		cu = append(cu, 0)            // empty auth response
		cu = append(cu, db+"\x00"...) // schema
		cu = append(cu, 45, 0)        // utf8mb4_general_ci
		cu = append(cu, "client_ed25519\x00"...)
		cu = append(cu, 0) // no connection attributes
		if err := c.command(cu...); err != nil {
			t.Fatalf("COM_CHANGE_USER: %v", err)
		}
		p, err := c.ReadPacket()
		if err != nil {
			add("change user: %v", err)
			break
		}
		if p[0] == 0xfe {
			plugin, rest, _ := bytes.Cut(p[1:], []byte{0})
			scramble := bytes.TrimSuffix(rest, []byte{0})
			add("change user auth switch to %s", plugin)
			if err := c.WritePacket(append(make([]byte, 4), mysqlc.CalcNativePassword(scramble, []byte(pass))...)); err != nil {
				t.Fatalf("auth switch response: %v", err)
			}
			if p, err = c.ReadPacket(); err != nil {
				add("change user: %v", err)
				break
			}
		}
		if p[0] == 0xff {
			add("change user %s: error %d", pass, binary.LittleEndian.Uint16(p[1:]))
			// A failed COM_CHANGE_USER leaves the connection unusable on
			// MariaDB; start again as root.
			c = dialRaw(t, addr, "root", rootPass, db, deprecateEOF)
			continue
		}
		add("change user %s: %x", pass, p)
		add("whoami %s", result(c.Execute("SELECT CURRENT_USER(), DATABASE()")))
	}
	add("ping %s", errCode(c.Ping()))
	add("quit %s", errCode(c.Quit()))
	return tr
}

// TestE2ECommands runs every command directly and through the proxy, with
// CLIENT_DEPRECATE_EOF on and off, and compares what the client saw.
func TestE2ECommands(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	user := "mc_cu"
	m.Exec(t, "CREATE USER "+user+"@'%' IDENTIFIED BY 'cu-pass'")
	t.Cleanup(func() { _, _ = m.AdminDB().Exec("DROP USER IF EXISTS " + user + "@'%'") })
	for _, deprecateEOF := range []bool{true, false} {
		t.Run(fmt.Sprintf("deprecateEOF=%v", deprecateEOF), func(t *testing.T) {
			// One database for both runs, so that schema names in column
			// definitions match; the table is made afresh for each run.
			db := m.NewDatabase(t)
			m.Exec(t, "GRANT ALL ON `"+db+"`.* TO "+user+"@'%'")
			var tr [2][]string
			for i, addr := range []string{m.Addr, p.addr} {
				m.Exec(t, "USE `"+db+"`; DROP TABLE IF EXISTS f; CREATE TABLE f (id INT PRIMARY KEY, name VARCHAR(20) DEFAULT 'x', amount DECIMAL(8,2)); "+
					"INSERT INTO f VALUES (1, 'one', 1.10), (2, NULL, NULL), (3, 'three', -3), (4, 'fünf 🐬', 4), (5, '', 0)")
				tr[i] = comScenario(t, addr, db, deprecateEOF)
			}
			want, got := tr[0], tr[1]
			if !slices.Contains(want, "ping ok") || len(want) < 30 {
				t.Fatalf("direct transcript is too short; the scenario is broken:\n%s", strings.Join(want, "\n"))
			}
			for i := range max(len(got), len(want)) {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Errorf("step %d through the proxy:\ngot  %s\nwant %s", i, g, w)
				}
			}
			if testing.Verbose() {
				t.Logf("transcript:\n%s", strings.Join(want, "\n"))
			}
		})
	}
}

// TestE2EKill interrupts a long query from a second connection with KILL
// QUERY, and kills a connection with COM_PROCESS_KILL, directly and
// through the proxy: the victim gets the same error quickly both ways.
func TestE2EKill(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	ctx := context.Background()
	for _, target := range []struct{ name, addr string }{{"direct", m.Addr}, {"proxied", p.addr}} {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			pool := openDB(t, rootDSN(target.addr, "", ""))
			victim, err := pool.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer victim.Close()
			id := connID(t, victim)

			// KILL QUERY: the statement ends with 1317, the connection lives.
			done := make(chan error, 1)
			go func() {
				var v int
				done <- victim.QueryRowContext(ctx, "SELECT SLEEP(30)").Scan(&v)
			}()
			waitFor(t, 10*time.Second, "SLEEP(30) to start", func() bool {
				return m.QueryString(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT SLEEP(30)%'", id) != "0"
			})
			if _, err := pool.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id)); err != nil {
				t.Fatalf("KILL QUERY %d: %v", id, err)
			}
			select {
			case err := <-done:
				if me := mysqlErr(t, err); me.Number != 1317 {
					t.Errorf("SELECT SLEEP(30) after KILL QUERY: got error %d %q, want 1317", me.Number, me.Message)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("SELECT SLEEP(30) still running 10s after KILL QUERY")
			}
			var one int
			if err := victim.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("connection after KILL QUERY: %v", err)
			}

			// COM_PROCESS_KILL: the whole connection goes.
			go func() {
				var v int
				done <- victim.QueryRowContext(ctx, "SELECT SLEEP(30)").Scan(&v)
			}()
			waitFor(t, 10*time.Second, "SLEEP(30) to start", func() bool {
				return m.QueryString(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT SLEEP(30)%'", id) != "0"
			})
			killer := dialRaw(t, target.addr, "root", rootPass, "", true)
			if err := killer.command(append([]byte{mysqlc.COM_PROCESS_KILL}, binary.LittleEndian.AppendUint32(nil, uint32(id))...)...); err != nil {
				t.Fatal(err)
			}
			resp, err := killer.ReadPacket()
			if err != nil || len(resp) == 0 || resp[0] != 0 {
				t.Errorf("COM_PROCESS_KILL response: got %x, %v; want OK", resp, err)
			}
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("SELECT SLEEP(30) on a killed connection: got a row, want an error")
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("SELECT SLEEP(30) still running 10s after COM_PROCESS_KILL")
			}
			waitFor(t, 10*time.Second, "the killed thread to go", func() bool { return !processExists(t, m, id) })
		})
	}
}

// TestE2ESessionTrackers checks that a client with CLIENT_SESSION_TRACK
// gets, in each OK packet, the state changes its own trackers ask for and
// no others, through the proxy as directly: the proxy tracks every
// variable and the state-change flag on the backend session for itself,
// and turns them back on when the client changes them, by any statement,
// including one the server reports nothing of. The order of the entries
// is not compared: the server's own order depends on the tracker list.
func TestE2ESessionTrackers(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	db := m.NewDatabase(t)
	steps := []string{
		"SET NAMES utf8mb4",
		"SET time_zone = '+01:00'",
		"SET @@session.session_track_system_variables = 'optimizer_switch'",
		"SET optimizer_switch = 'index_merge=off'",
		"SET time_zone = '+02:00'",
		"SET @a = 1",
		"SET session_track_state_change = ON",
		"SET @b = 2",
		"SET time_zone = '+03:00'",
		"SET session_track_state_change = OFF",
		"SET @c = 3",
		"USE `" + db + "`",
		"SET session_track_schema = OFF",
		"USE mysql",
		"SET session_track_system_variables = 'time_zone,sql_mode'",
		"SET sql_mode = 'ANSI_QUOTES', time_zone = '+04:00', div_precision_increment = 7",
		"SET session_track_system_variables = '', time_zone = '+05:00'",
		"SET time_zone = '+05:30'",
		"SET session_track_system_variables = '*'",
		"SET time_zone = '+06:00'",
		"PREPARE s FROM 'SET session_track_system_variables = ?'",
		"SET @v = 'time_zone'",
		"EXECUTE s USING @v",
		"SET sql_mode = '', time_zone = '+07:00'",
		"EXECUTE IMMEDIATE 'SET session_track_system_variables = ?, session_track_state_change = ?' USING 'sql_mode', 'ON'",
		"SET sql_mode = 'ANSI', time_zone = '+08:00'",
		"SET @w = 4",
		"DEALLOCATE PREPARE s",
	}
	// A procedure that turns them all off, on a session of its own: the
	// server sets the flag with no changes in the CALL's OK.
	offSteps := []string{
		"SET session_track_system_variables = '*'",
		"SET session_track_state_change = ON",
		"SET session_track_schema = ON",
		"CALL poff()",
		"SET @x = 5",
		"SET time_zone = '+09:00'",
	}
	// The same with the server's default trackers (state changes not
	// tracked): no flag.
	offDefaultSteps := []string{"CALL poff()", "SET @x = 5", "SET time_zone = '+09:00'"}
	// Procedures that turn trackers on, or change the list and another
	// variable, from the server's defaults.
	onSteps := []string{
		"SELECT id FROM tt WHERE id = 1", "CALL pon()", "SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1",
		"SET @x = 5", "USE mysql", "SET time_zone = '+09:00'", "USE `" + db + "`",
		"CALL plist()", "SELECT id FROM tt WHERE id = 1", "SET time_zone = '+11:00'", "SET sql_mode = ''", "SET @y = 6",
	}
	// Transaction state, in reads the cache could answer, on a session
	// of their own (the EXECUTEs above stop caching for theirs).
	txSteps := []string{
		"SET session_track_transaction_info = 'STATE'",
		"SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1",
		"BEGIN", "SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1", "COMMIT",
		"SET session_track_transaction_info = 'CHARACTERISTICS'",
		"START TRANSACTION READ ONLY", "SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1", "COMMIT",
		"SET autocommit = 0", "SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1", "COMMIT", "SET autocommit = 1",
		"SET session_track_transaction_info = OFF",
		"BEGIN", "SELECT id FROM tt WHERE id = 1", "SELECT id FROM tt WHERE id = 1", "COMMIT",
	}
	m.Exec(t, "CREATE TABLE `"+db+"`.tt (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO `"+db+"`.tt VALUES (1)")
	m.Exec(t, "CREATE PROCEDURE `"+db+"`.poff() BEGIN SET session_track_state_change = OFF; SET session_track_system_variables = ''; END")
	m.Exec(t, "CREATE PROCEDURE `"+db+"`.pon() BEGIN SET session_track_state_change = ON; SET session_track_schema = ON; END")
	m.Exec(t, "CREATE PROCEDURE `"+db+"`.plist() BEGIN SET session_track_system_variables = 'time_zone'; SET time_zone = '+10:00'; END")
	for _, steps := range [][]string{steps, txSteps, offSteps, offDefaultSteps, onSteps} {
		var tr [2][]string
		for i, addr := range []string{m.Addr, p.addr} {
			c, err := client.Connect(addr, "root", rootPass, db, func(c *client.Conn) error {
				c.ReadTimeout = 20 * time.Second
				c.WriteTimeout = 20 * time.Second
				return c.SetCapability(mysqlc.CLIENT_SESSION_TRACK)
			})
			if err != nil {
				t.Fatalf("connect to %s: %v", addr, err)
			}
			rc := &rawConn{Conn: c, deprecateEOF: true}
			for _, q := range steps {
				if err := rc.command(append([]byte{mysqlc.COM_QUERY}, q...)...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				r, err := rc.readResponse(false)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				for k := range r {
					r[k] = canonicalOK(t, r[k])
				}
				tr[i] = append(tr[i], q+" -> "+strings.Join(r, " "))
			}
			c.Close()
		}
		for i := range tr[0] {
			if tr[0][i] != tr[1][i] {
				t.Errorf("through the proxy:\ngot  %s\nwant %s", tr[1][i], tr[0][i])
			}
		}
	}
	if st := mycachedStatus(t, openDB(t, rootDSN(p.addr, db, ""))); st["Hits_l1"] == 0 {
		t.Errorf("no read was answered from the cache; the transaction steps prove nothing")
	}
}

// canonicalOK returns an OK packet, in hex, with its session state
// entries sorted.
func canonicalOK(t *testing.T, h string) string {
	p, err := hex.DecodeString(h)
	if err != nil || len(p) == 0 || p[0] != mysqlc.OK_HEADER {
		return h
	}
	o, err := wire.ParseOKPacket(p, true)
	if err != nil {
		t.Fatalf("OK packet %s: %v", h, err)
	}
	if len(o.State) == 0 {
		return h
	}
	entries, err := wire.ParseState(o.State)
	if err != nil {
		t.Fatalf("session state of %s: %v", h, err)
	}
	slices.SortStableFunc(entries, func(a, b wire.StateEntry) int {
		if a.Type != b.Type {
			return int(a.Type) - int(b.Type)
		}
		return bytes.Compare(a.Data, b.Data)
	})
	o.State = wire.AppendState(nil, entries)
	return hex.EncodeToString(wire.AppendOKPacket(nil, o, true))
}

// TestE2EClientHalfClose: a client that sends a statement and then shuts
// its socket down for writing, as request-then-shutdown clients do, gets
// the statement's answer through the proxy as it does directly, and the
// statement commits either way, whether the proxy speaks TLS to the
// server or not.
func TestE2EClientHalfClose(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	tm := tlsMariaDB(t)
	tp := startProxy(t, mysqlproxy.Config{Backend: tm.Addr})
	targets := []struct {
		name string
		m    *testenv.MariaDB
		addr string
	}{{"direct", m, m.Addr}, {"mycached", m, p.addr}, {"mycached over TLS", tm, tp.addr}}
	got := make([]string, len(targets))
	for i, tg := range targets {
		db := tg.m.NewDatabase(t)
		tg.m.Exec(t, "CREATE TABLE `"+db+"`.w (v VARCHAR(40))")
		rc := dialRaw(t, tg.addr, "root", rootPass, db, true)
		tag := fmt.Sprintf("half-close-%d", i)
		q := "INSERT INTO w SELECT CONCAT('" + tag + "-', SLEEP(1))"
		if err := rc.command(append([]byte{mysqlc.COM_QUERY}, q...)...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		tc, ok := rc.Conn.Conn.Conn.(*net.TCPConn)
		if !ok {
			t.Fatalf("connection to %s is a %T, not TCP", tg.name, rc.Conn.Conn.Conn)
		}
		if err := tc.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		r, err := rc.readResponse(false)
		if err != nil {
			t.Errorf("%s: the answer after the client's shutdown for writing: %v (got %v)", tg.name, err, r)
		}
		got[i] = strings.Join(r, " ")
		if n := readInt(t, tg.m.AdminDB(), "SELECT COUNT(*) FROM `"+db+"`.w WHERE v LIKE '"+tag+"-%'"); n != 1 {
			t.Errorf("%s: %d rows of the statement, want 1", tg.name, n)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[0] {
			t.Errorf("answer %s:\ngot  %s\nwant %s", targets[i].name, got[i], got[0])
		}
	}
}

// TestE2EClassicEOFStateFlag: a statement that changes a variable for its
// own run (SET STATEMENT, NOWAIT, WAIT n) makes the server flag its EOF
// packets with SERVER_SESSION_STATE_CHANGED when the session tracks that
// variable, as mycached's backend sessions do. A client that did not ask
// to track gets the EOF packets it gets directly, without the flag.
func TestE2EClassicEOFStateFlag(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	pass := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Passthrough: true})
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE `"+db+"`.t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO `"+db+"`.t VALUES (1, 1)")
	for _, q := range []string{
		"SET STATEMENT max_statement_time = 10 FOR SELECT v FROM t",
		"SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT",
		"SELECT v FROM t LOCK IN SHARE MODE WAIT 1",
		"SELECT v FROM t",
	} {
		var want []string
		for i, addr := range []string{m.Addr, p.addr, pass.addr} {
			c := dialRaw(t, addr, "root", rootPass, db, false)
			if c.HasCapability(mysqlc.CLIENT_SESSION_TRACK) {
				t.Fatal("the raw client asked to track session state")
			}
			var got []string
			for range 2 {
				pkts, _ := c.exchange(t, append([]byte{mysqlc.COM_QUERY}, q...)...)
				got = append(got, pkts...)
			}
			if i == 0 {
				want = got
			} else if !slices.Equal(got, want) {
				t.Errorf("%s through %s:\ngot  %v\nwant %v", q, []string{"", "mycached", "passthrough"}[i], got, want)
			}
		}
	}
}

// TestE2EClassicEOFFunctionSideEffects: a client without
// CLIENT_DEPRECATE_EOF (Connector/C's) ends a result set with an EOF
// packet, which carries no session state, only its flag. A SELECT whose
// function creates a temporary table over a real one, or sets a variable
// (unscoped, which the server does not report), changes what the next
// read returns, through mycached as directly.
func TestE2EClassicEOFFunctionSideEffects(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	name := m.NewDatabase(t)
	m.Exec(t, "USE `"+name+"`; CREATE TABLE r (v VARCHAR(10)); INSERT INTO r VALUES ('real')")
	m.Exec(t, "USE `"+name+"`; CREATE FUNCTION mktemp() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN "+
		"CREATE TEMPORARY TABLE r (v VARCHAR(10)); INSERT INTO r VALUES ('temp'); RETURN 1; END")
	m.Exec(t, "USE `"+name+"`; CREATE FUNCTION setdpi(n INT) RETURNS INT DETERMINISTIC NO SQL BEGIN "+
		"SET @@div_precision_increment = n; RETURN n; END")
	for _, tc := range []struct{ read, call string }{
		{"SELECT v FROM r", "SELECT mktemp()"},
		{"SELECT LENGTH(v) / 7 FROM r", "SELECT setdpi(9)"},
	} {
		var got [2]string
		for i, addr := range []string{m.Addr, p.addr} {
			c := dialRaw(t, addr, "root", rootPass, name, false)
			for range 3 {
				if _, err := c.Execute(tc.read); err != nil {
					t.Fatalf("%s: %v", tc.read, err)
				}
			}
			if _, err := c.Execute(tc.call); err != nil {
				t.Fatalf("%s: %v", tc.call, err)
			}
			res, err := c.Execute(tc.read)
			if err != nil {
				t.Fatalf("%s: %v", tc.read, err)
			}
			got[i], _ = res.GetString(0, 0)
		}
		if got[0] != got[1] {
			t.Errorf("after %s, %s: mycached gave %q, MariaDB %q", tc.call, tc.read, got[1], got[0])
		}
	}
}

// TestE2ENamesCollateInKey: SET NAMES x COLLATE y describes result
// columns in y, which no variable shows (collation_connection may equal
// y with other result columns): a session that set it is not served the
// column definitions of one that did not.
func TestE2ENamesCollateInKey(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	name := m.NewDatabase(t)
	m.Exec(t, "USE `"+name+"`; CREATE TABLE cs (id INT PRIMARY KEY, u VARCHAR(10) CHARACTER SET utf8mb4); INSERT INTO cs VALUES (1, 'x')")
	q := "SELECT u FROM cs WHERE id = 1"
	charsets := func(addr string) [2]uint16 {
		var out [2]uint16
		for i, set := range []string{"SET collation_connection = utf8mb4_bin", "SET NAMES utf8mb4 COLLATE utf8mb4_bin"} {
			c := dialRaw(t, addr, "root", rootPass, name, true)
			if _, err := c.Execute(set); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				res, err := c.Execute(q)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = res.Fields[0].Charset
			}
		}
		return out
	}
	if got, want := charsets(p.addr), charsets(m.Addr); got != want {
		t.Errorf("result column collations: mycached %v, MariaDB %v", got, want)
	}
}

// TestE2ECompression: a client that asks for the compressed protocol
// gets it on both hops, as directly: the server reports Compression ON,
// and every answer (small and large, text and prepared, a cache hit, one
// after a write) reads the same as directly; an argument sent as long
// data arrives whole.
func TestE2ECompression(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	name := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE `"+name+"`.t (id INT PRIMARY KEY, v LONGTEXT)")
	m.Exec(t, "INSERT INTO `"+name+"`.t SELECT seq, REPEAT(MD5(seq), seq % 50) FROM `"+name+"`.seq_1_to_2000")
	m.Exec(t, "INSERT INTO `"+name+"`.t VALUES (5000, REPEAT('compressible ', 1500000))") // 19.5 MB: two wire packets
	db := openPair(t, m, p, name, "compress=true&maxAllowedPacket=0")
	ctx := context.Background()
	for _, pool := range []*sql.DB{db.direct, db.proxied} {
		if got, err := queryDump(ctx, pool, "SHOW SESSION STATUS LIKE 'Compression'"); err != nil || !strings.Contains(got, "ON") {
			t.Fatalf("Compression: %q, %v", got, err)
		}
	}
	h0 := hits(t, db.proxied)
	for round := range 2 {
		for _, q := range []struct {
			query string
			args  []any
		}{
			{"SELECT * FROM t ORDER BY id LIMIT 2000", nil},
			{"SELECT id, v FROM t WHERE id = 17", nil},
			{"SELECT id, v FROM t WHERE id = ?", []any{18}},
			{"SELECT LENGTH(v), v FROM t WHERE id = 5000", nil},
			{"SELECT 1", nil},
		} {
			want, err := queryDump(ctx, db.direct, q.query, q.args...)
			if err != nil {
				t.Fatalf("%s directly: %v", q.query, err)
			}
			got, err := queryDump(ctx, db.proxied, q.query, q.args...)
			if err != nil {
				t.Fatalf("round %d: %s through mycached: %v", round, q.query, err)
			}
			if got != want {
				t.Fatalf("round %d: %s: through mycached %d bytes, directly %d", round, q.query, len(got), len(want))
			}
		}
	}
	if hits(t, db.proxied) == h0 {
		t.Fatal("the second round had no cache hit")
	}
	// A write on a compressed session, and the read after it.
	conn, err := db.proxied.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "UPDATE t SET v = 'new' WHERE id = 17"); err != nil {
		t.Fatal(err)
	}
	if got, err := queryDump(ctx, conn, "SELECT v FROM t WHERE id = 17"); err != nil || !strings.Contains(got, "new") {
		t.Fatalf("after the write: %q, %v", got, err)
	}
	// A 24 MiB argument goes by COM_STMT_SEND_LONG_DATA (past half of
	// maxAllowedPacket): commands that get no answer, each restarting
	// the frame sequence on both hops.
	longData := openDB(t, rootDSN(p.addr, name, "compress=true&maxAllowedPacket=16777216"))
	blob := bytes.Repeat([]byte("0123456789abcdef"), 24<<20/16)
	blob[12345] = 'x'
	sent := m.GlobalStatus(t, "Com_stmt_send_long_data")
	if _, err := longData.ExecContext(ctx, "INSERT INTO t VALUES (6000, ?)", blob); err != nil {
		t.Fatalf("long data through a compressed session: %v", err)
	}
	if m.GlobalStatus(t, "Com_stmt_send_long_data") == sent {
		t.Fatal("the argument did not go by COM_STMT_SEND_LONG_DATA")
	}
	sum := sha256.Sum256(blob)
	if got := m.QueryString(t, "SELECT SHA2(v, 256) FROM `"+name+"`.t WHERE id = 6000"); got != hexString(sum[:]) {
		t.Fatalf("the stored blob's sha256 is %s, want %x", got, sum)
	}
}
