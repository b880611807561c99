package mysqlproxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// The read-side suite: each case warms a cached read, changes what the
// read's answer depends on by some path (session state, identity and
// privileges, transactions, a write elsewhere, text the analysis may read
// differently from the server), and then compares what a client gets
// through mycached with what a twin session, set up alike, gets from
// MariaDB directly. Every expectation is a direct read in the same test.
//
// Each case runs with one sidecar (L1) and with two sharing memcached
// (warm and write through A, read through B), each following the binlog,
// and in the text protocol and with server-side prepared statements.

// rsHost2 is the second client host: a session reaches MariaDB from it
// through a sidecar (rsForwarder picks the source address) or directly.
const rsHost2 = "127.0.0.2"

// rsForwarder stands between the sidecars and MariaDB on loopback. It
// connects to MariaDB from the source address the test names for the next
// connection, so that one sidecar's sessions reach the server from two
// hosts, as sessions of one application host do through sidecars on two.
// It can also hold back what the server streams to binlog followers, so a
// test sees what the sidecars do on their own before their followers hear
// of a write, as when a follower lags.
type rsForwarder struct {
	ln      net.Listener
	backend string

	dial sync.Mutex // serializes tests that choose the next source

	mu     sync.Mutex // protects next, held, closed and conns; cond waits on it
	cond   *sync.Cond
	next   string // source address of the next connection; "" is the default
	held   bool
	closed bool
	conns  map[net.Conn]struct{}
}

func startForwarder(t testing.TB, backend string) *rsForwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	f := &rsForwarder{ln: ln, backend: backend, conns: map[net.Conn]struct{}{}}
	f.cond = sync.NewCond(&f.mu)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *rsForwarder) addr() string { return f.ln.Addr().String() }

func (f *rsForwarder) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		src := f.next
		f.next = ""
		f.mu.Unlock()
		go f.serve(c, src)
	}
}

// track remembers c until close, or forgets it; it reports false once the
// forwarder is closed.
func (f *rsForwarder) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !add {
		delete(f.conns, c)
		return true
	}
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *rsForwarder) serve(c net.Conn, src string) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	s, err := d.Dial("tcp", f.backend)
	if err != nil {
		c.Close()
		return
	}
	if !f.track(c, true) || !f.track(s, true) {
		c.Close()
		s.Close()
		return
	}
	defer func() {
		c.Close()
		s.Close()
		f.track(c, false)
		f.track(s, false)
	}()
	var dump atomic.Bool
	go func() {
		commandsUp(s, c, &dump)
		s.Close()
		c.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if dump.Load() {
				f.gate()
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// commandsUp copies client packets to the server, noting a binlog dump
// (COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID) among the commands.
func commandsUp(dst io.Writer, src io.Reader, dump *atomic.Bool) {
	var hdr [4]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(src, buf); err != nil {
			return
		}
		if hdr[3] == 0 && n > 0 && (buf[0] == 0x12 || buf[0] == 0x1e) {
			dump.Store(true)
		}
		if _, err := dst.Write(append(hdr[:], buf...)); err != nil {
			return
		}
	}
}

// gate waits while binlog streams are held.
func (f *rsForwarder) gate() {
	f.mu.Lock()
	for f.held && !f.closed {
		f.cond.Wait()
	}
	f.mu.Unlock()
}

// hold stops the binlog streams until release. Keep it short: a follower
// that hears nothing for three heartbeats reconnects.
func (f *rsForwarder) hold() {
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
}

func (f *rsForwarder) release() {
	f.mu.Lock()
	f.held = false
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *rsForwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	f.held = false
	f.cond.Broadcast()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
}

// from makes the next connection come from src.
func (f *rsForwarder) from(src string) {
	f.mu.Lock()
	f.next = src
	f.mu.Unlock()
}

// rsEnv is one case's sidecars in front of the suite's MariaDB: a fleet
// whose b is a when there is one sidecar.
type rsEnv struct {
	*fleet
	fwd *rsForwarder
	two bool
	tag string // makes the names of the case's accounts unique
}

var rsTags atomic.Int64

func newRSEnv(t *testing.T, m *testenv.MariaDB, two bool, tune func(*mysqlproxy.Config)) *rsEnv {
	t.Helper()
	fwd := startForwarder(t, m.Addr)
	// The hop to MariaDB stays in the clear so the forwarder can tell a
	// binlog stream from a session.
	cfg := mysqlproxy.Config{Backend: fwd.addr(), BackendTLS: mysqlproxy.BackendTLSOff, MemcachedTimeout: 5 * time.Second}
	// The forwarder holds the followers' streams through a case, which
	// on a loaded machine lasts past the 5 s after which strict reads
	// stop trusting a follower that is behind and go to the server: a
	// case's hits would then be misses. Strict hits check the
	// generations every write through a sidecar bumps, which is what
	// the cases test; cases that test the bound set their own.
	cfg.MaxStaleness = time.Minute
	// The built-in policy, with every shape admitted: a case's reads are
	// few, and adaptive admission may hold a shape rejected for seconds
	// after a probe that did not pay, which the warming would take for a
	// read that is never cached. Cases that test a policy set their own.
	cfg.Policy = []string{writePolicy(t, t.TempDir(), "admit.lua",
		"function cache(q, next)\n  local d = next(q)\n  if d then d.admit = \"always\" end\n  return d\nend\n")}
	f := &fleet{m: m}
	if two {
		f.mc = privateMemcached(t)
		cfg.Memcached = []string{f.mc.Addr}
	}
	if tune != nil {
		tune(&cfg)
	}
	f.a = startProxy(t, withBinlog(cfg))
	f.b = f.a
	if two {
		f.b = startProxy(t, withBinlog(cfg))
	}
	return &rsEnv{fleet: f, fwd: fwd, two: two, tag: strconv.FormatInt(rsTags.Add(1), 36)}
}

// rsRun is one protocol's run of a case, in a database of its own.
type rsRun struct {
	t     *testing.T
	env   *rsEnv
	proto string // "text" or "prepared": how sessions send reads and SETs
	db    string
	root  *sql.DB // root on MariaDB, in db
}

// A and B are the sidecars: writes and warming go through A, the reads
// that must see them through B; with one sidecar they are the same.
func (x *rsRun) A() *proxy { return x.env.a }
func (x *rsRun) B() *proxy { return x.env.b }

// sidecars lists the distinct sidecars.
func (x *rsRun) sidecars() []*proxy {
	if x.env.two {
		return []*proxy{x.env.a, x.env.b}
	}
	return []*proxy{x.env.a}
}

func (x *rsRun) side(p *proxy) string {
	if p == x.env.a {
		return "A"
	}
	return "B"
}

// name returns base made unique to this run, for accounts and roles,
// which are server-wide.
func (x *rsRun) name(base string) string { return base + x.env.tag + x.proto[:1] }

// exec runs statements as root directly on MariaDB, in the run's database.
func (x *rsRun) exec(stmts ...string) {
	x.t.Helper()
	for _, s := range stmts {
		mustExec(x.t, x.root, s)
	}
}

// newDB creates another database for the run.
func (x *rsRun) newDB() string {
	x.t.Helper()
	return x.env.m.NewDatabase(x.t)
}

// A run holds the followers (see rsForwarder.hold) from the end of its
// setup to its end, except while it waits for them (sync): so only what
// passes through the sidecars changes what they serve meanwhile. That is
// the point of many cases (under strict consistency a write through a
// sidecar is seen by every read after its OK, whatever the followers
// know), and it keeps what other cases write from invalidating a case's
// warm entries at random, which would let a stale read go unseen.
func (x *rsRun) hold() { x.env.fwd.hold() }

func (x *rsRun) release() { x.env.fwd.release() }

// sync lets the followers apply every write committed so far, with their
// second bumps, and holds them again.
func (x *rsRun) sync() {
	x.t.Helper()
	x.release()
	x.env.sync(x.t)
	x.hold()
	// What other cases committed while the hold began may still reach
	// the followers, and each bumps again a settle delay (100 ms) later,
	// on its poll tick (100 ms): let those bumps land now rather than in
	// the middle of a case, where they would hide a stale read.
	time.Sleep(300 * time.Millisecond)
}

// step runs f as a subtest of the run, so a failure names the variant.
func (x *rsRun) step(name string, f func(x *rsRun)) {
	x.t.Helper()
	x.t.Run(name, func(t *testing.T) {
		y := *x
		y.t = t
		f(&y)
	})
}

// rsAccount is who a session logs in as.
type rsAccount struct {
	user, pass string
	host       string // the client host MariaDB sees; "" is 127.0.0.1
	db         string // the default database; "" is the run's, "-" none
	params     string // more DSN parameters
}

func (x *rsRun) rootAcct() rsAccount { return rsAccount{user: "root", pass: rootPass} }

// twin is a session through a sidecar and its twin on MariaDB directly,
// logged in alike: a case runs each statement on both and compares what
// the two clients get.
type twin struct {
	x           *rsRun
	label       string
	via, direct *sql.Conn
}

// sess opens a session through p and its direct twin.
func (x *rsRun) sess(p *proxy, who rsAccount) *twin {
	x.t.Helper()
	db := who.db
	switch db {
	case "":
		db = x.db
	case "-":
		db = ""
	}
	params := "multiStatements=true"
	if who.params != "" {
		// The driver refuses to interpolate in some handshake charsets;
		// such sessions send no arguments.
		params += "&" + who.params
	} else if x.proto == "text" {
		// Arguments go as text too; a prepared run sends them bound.
		params += "&interpolateParams=true"
	}
	label := fmt.Sprintf("%s via %s", who.user, x.side(p))
	if who.host != "" {
		label += " from " + who.host
	}
	tw := &twin{x: x, label: label}
	tw.direct = x.directConn(testenv.DSNFor(x.env.m.Addr, who.user, who.pass, db, params), who.host)
	dsn := testenv.DSNFor(p.addr, who.user, who.pass, db, params)
	if who.host == "" {
		tw.via = conn(x.t, openDB(x.t, dsn))
		return tw
	}
	// A connection of the sidecar's own (its follower reconnecting) may
	// take the source address meant for this one: check who MariaDB sees.
	want := query(tw.direct, "text", "SELECT CURRENT_USER()")
	for try := 0; ; try++ {
		c, err := x.viaFrom(dsn, who.host)
		if err == nil {
			if query(c, "text", "SELECT CURRENT_USER()") == want {
				tw.via = c
				return tw
			}
			c.Close()
		}
		if try == 5 {
			x.t.Fatalf("%s: no session as %s through the sidecar: %v", label, want, err)
		}
	}
}

// viaFrom opens a connection through a sidecar whose backend connection
// comes from host.
func (x *rsRun) viaFrom(dsn, host string) (*sql.Conn, error) {
	f := x.env.fwd
	f.dial.Lock()
	defer f.dial.Unlock()
	f.from(host)
	defer f.from("")
	db := openDB(x.t, dsn)
	return db.Conn(context.Background())
}

// rootVia is root's session through p.
func (x *rsRun) rootVia(p *proxy) *twin {
	x.t.Helper()
	return x.sess(p, x.rootAcct())
}

// directConn opens a connection to MariaDB from host ("" is the default).
func (x *rsRun) directConn(dsn, host string) *sql.Conn {
	x.t.Helper()
	if host == "" {
		return conn(x.t, openDB(x.t, dsn))
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		x.t.Fatalf("%s: %v", dsn, err)
	}
	cfg.DialFunc = func(ctx context.Context, _, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(host)}}
		return d.DialContext(ctx, "tcp", addr)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		x.t.Fatalf("%s: %v", dsn, err)
	}
	db := sql.OpenDB(c)
	x.t.Cleanup(func() { db.Close() })
	return conn(x.t, db)
}

// outcome renders what a client got: the rows, or the error.
func outcome(rows *sql.Rows, err error) string {
	if err != nil {
		if me, ok := errors.AsType[*mysql.MySQLError](err); ok {
			return fmt.Sprintf("error %d: %s", me.Number, me.Message)
		}
		return "error: " + err.Error()
	}
	defer rows.Close()
	s, err := dumpRows(rows)
	if err != nil {
		return outcome(nil, err)
	}
	return s
}

// query runs q on c by protocol proto: a COM_QUERY (arguments
// interpolated), or prepared and executed.
func query(c *sql.Conn, proto, q string, args ...any) string {
	ctx := context.Background()
	if proto == "text" {
		rows, err := c.QueryContext(ctx, q, args...)
		return outcome(rows, err)
	}
	st, err := c.PrepareContext(ctx, q)
	if err != nil {
		return outcome(nil, err)
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx, args...)
	return outcome(rows, err)
}

// run executes s on c by protocol proto and renders the error, or "ok".
func run(c *sql.Conn, proto, s string, args ...any) string {
	ctx := context.Background()
	var err error
	if proto == "text" {
		_, err = c.ExecContext(ctx, s, args...)
	} else {
		var st *sql.Stmt
		if st, err = c.PrepareContext(ctx, s); err == nil {
			_, err = st.ExecContext(ctx, args...)
			st.Close()
		}
	}
	if err != nil {
		return outcome(nil, err)
	}
	return "ok"
}

func showArgs(q string, args []any) string {
	if len(args) == 0 {
		return q
	}
	return fmt.Sprintf("%s %v", q, args)
}

// readIn runs q on both sides by protocol proto.
func (tw *twin) readIn(proto, q string, args ...any) (got, want string) {
	return query(tw.via, proto, q, args...), query(tw.direct, proto, q, args...)
}

// read runs q on both sides by the run's protocol.
func (tw *twin) read(q string, args ...any) (got, want string) {
	return tw.readIn(tw.x.proto, q, args...)
}

// sameWith reads by get on both sides and fails the test unless both
// clients got the same; it returns what MariaDB answered.
func (tw *twin) sameWith(what string, get func(*sql.Conn) string) string {
	tw.x.t.Helper()
	got, want := get(tw.via), get(tw.direct)
	if got != want {
		tw.x.t.Errorf("%s, %s:\ngot  %swant %s", tw.label, what, got, want)
	}
	return want
}

// warmWith reads by get until the sidecar answers from its cache,
// checking each answer against MariaDB's. A read that is never a hit
// proves nothing.
func (tw *twin) warmWith(what string, get func(*sql.Conn) string) string {
	tw.x.t.Helper()
	// A fill is stored after its client has the answer; and strict reads
	// go to the server while a follower catches up after its stream was
	// cut, which on a loaded machine takes seconds.
	for start, pause := time.Now(), 10*time.Millisecond; time.Since(start) < 15*time.Second; pause = min(2*pause, 500*time.Millisecond) {
		before := tw.executed()
		got, want := get(tw.via), get(tw.direct)
		hit := tw.executed() == before
		if got != want {
			tw.x.t.Fatalf("%s, %s while warming:\ngot  %swant %s", tw.label, what, got, want)
		}
		if hit {
			return want
		}
		time.Sleep(pause)
	}
	tw.x.t.Fatalf("%s, %s was never served from the cache; the case proves nothing", tw.label, what)
	return ""
}

// fill reads q until the sidecar answers it from its cache, as warm does,
// for a read the sidecar may rightly refuse to cache: it reports whether
// the read became a hit.
func (tw *twin) fill(q string, args ...any) bool {
	tw.x.t.Helper()
	for i := 0; i < 4; i++ {
		before := tw.executed()
		got, want := tw.read(q, args...)
		hit := tw.executed() == before
		if got != want {
			tw.x.t.Fatalf("%s, %s (%s) while warming:\ngot  %swant %s", tw.label, showArgs(q, args), tw.x.proto, got, want)
		}
		if hit {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	tw.x.t.Logf("%s, %s (%s) is not cached", tw.label, showArgs(q, args), tw.x.proto)
	return false
}

// sameIn reads q by protocol proto and compares the two clients' answers.
func (tw *twin) sameIn(proto, q string, args ...any) string {
	tw.x.t.Helper()
	return tw.sameWith(showArgs(q, args)+" ("+proto+")", func(c *sql.Conn) string { return query(c, proto, q, args...) })
}

// same is sameIn by the run's protocol.
func (tw *twin) same(q string, args ...any) string {
	tw.x.t.Helper()
	return tw.sameIn(tw.x.proto, q, args...)
}

// warm reads q by the run's protocol until it is a hit.
func (tw *twin) warm(q string, args ...any) string {
	tw.x.t.Helper()
	return tw.warmWith(showArgs(q, args)+" ("+tw.x.proto+")", func(c *sql.Conn) string { return query(c, tw.x.proto, q, args...) })
}

// executed returns how many SELECTs the sidecar's backend session has run
// (Com_select and Com_stmt_execute of the session). The twin runs the same
// statement so that the two sessions stay alike.
func (tw *twin) executed() int64 {
	tw.x.t.Helper()
	q := "SHOW SESSION STATUS WHERE Variable_name IN ('Com_select', 'Com_stmt_execute')"
	var n int64
	for i, c := range []*sql.Conn{tw.via, tw.direct} {
		rows, err := c.QueryContext(context.Background(), q)
		if err != nil {
			tw.x.t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var name string
			var v int64
			if err := rows.Scan(&name, &v); err != nil {
				tw.x.t.Fatalf("%s: %v", q, err)
			}
			if i == 0 {
				n += v
			}
		}
		rows.Close()
	}
	return n
}

// twinStmt is a statement prepared on both sides of a twin, kept open.
type twinStmt struct {
	tw          *twin
	q           string
	via, direct *sql.Stmt
}

// prepare prepares q on both sides (COM_STMT_PREPARE); both must succeed.
func (tw *twin) prepare(q string) *twinStmt {
	tw.x.t.Helper()
	ctx := context.Background()
	ps := &twinStmt{tw: tw, q: q}
	var err error
	if ps.via, err = tw.via.PrepareContext(ctx, q); err != nil {
		tw.x.t.Fatalf("%s, prepare %s: %v", tw.label, q, err)
	}
	if ps.direct, err = tw.direct.PrepareContext(ctx, q); err != nil {
		tw.x.t.Fatalf("direct, prepare %s: %v", q, err)
	}
	tw.x.t.Cleanup(func() { ps.via.Close(); ps.direct.Close() })
	return ps
}

func (ps *twinStmt) get(args []any) func(*sql.Conn) string {
	return func(c *sql.Conn) string {
		st := ps.direct
		if c == ps.tw.via {
			st = ps.via
		}
		rows, err := st.QueryContext(context.Background(), args...)
		return outcome(rows, err)
	}
}

func (ps *twinStmt) same(args ...any) string {
	ps.tw.x.t.Helper()
	return ps.tw.sameWith("prepared statement "+showArgs(ps.q, args), ps.get(args))
}

func (ps *twinStmt) warm(args ...any) string {
	ps.tw.x.t.Helper()
	return ps.tw.warmWith("prepared statement "+showArgs(ps.q, args), ps.get(args))
}

// write executes the statement through the sidecar only; it must succeed.
func (ps *twinStmt) write(args ...any) {
	ps.tw.x.t.Helper()
	if _, err := ps.via.ExecContext(context.Background(), args...); err != nil {
		ps.tw.x.t.Fatalf("%s, prepared statement %s: %v", ps.tw.label, showArgs(ps.q, args), err)
	}
}

// unpreparable reports an outcome that says the server cannot prepare
// the statement (1295), or not as one statement (1064 for several).
func unpreparable(out string) bool {
	return strings.HasPrefix(out, "error 1295:") || strings.HasPrefix(out, "error 1064:")
}

// exec runs statements on both sides as COM_QUERY; each must succeed on
// both or fail on both alike. It returns the last outcome.
func (tw *twin) exec(stmts ...string) string {
	tw.x.t.Helper()
	out := ""
	for _, s := range stmts {
		out = tw.execIn("text", s)
	}
	return out
}

// set runs s with args on both sides by the run's protocol: a prepared
// run prepares it, as drivers do for SET x = ?, unless the server cannot.
func (tw *twin) set(s string, args ...any) string {
	tw.x.t.Helper()
	return tw.execIn(tw.x.proto, s, args...)
}

func (tw *twin) execIn(proto, s string, args ...any) string {
	tw.x.t.Helper()
	got, want := run(tw.via, proto, s, args...), run(tw.direct, proto, s, args...)
	if proto != "text" && unpreparable(got) && unpreparable(want) {
		return tw.execIn("text", s, args...)
	}
	if got != want {
		tw.x.t.Fatalf("%s, %s (%s):\ngot  %s\nwant %s", tw.label, showArgs(s, args), proto, got, want)
	}
	return want
}

// write runs statements that change shared data through the sidecar only,
// by the run's protocol (as text when the server cannot prepare them);
// each must succeed.
func (tw *twin) write(stmts ...string) {
	tw.x.t.Helper()
	for _, s := range stmts {
		out := run(tw.via, tw.x.proto, s)
		if tw.x.proto != "text" && unpreparable(out) {
			out = run(tw.via, "text", s)
		}
		if out != "ok" {
			tw.x.t.Fatalf("%s, %s (%s): %s", tw.label, s, tw.x.proto, out)
		}
	}
}

// fresh reads each query through every sidecar in a new root session and
// compares it with MariaDB.
func (x *rsRun) fresh(qs ...string) {
	x.t.Helper()
	for _, p := range x.sidecars() {
		tw := x.rootVia(p)
		for _, q := range qs {
			tw.same(q)
		}
	}
}

// warmAll warms each query through every sidecar in a new root session.
func (x *rsRun) warmAll(qs ...string) {
	x.t.Helper()
	for _, p := range x.sidecars() {
		tw := x.rootVia(p)
		for _, q := range qs {
			tw.warm(q)
		}
	}
}

// account creates a user of the run's own, name@'%' with password "pw",
// and grants it what grants say ({db} is the run's database, {user} the
// account); it returns the user name.
func (x *rsRun) account(base string, grants ...string) string {
	x.t.Helper()
	name := x.name(base)
	acct := "'" + name + "'@'%'"
	x.exec("CREATE USER " + acct + " IDENTIFIED BY 'pw'")
	r := strings.NewReplacer("{db}", x.db, "{user}", acct)
	for _, g := range grants {
		x.exec(r.Replace(g))
	}
	return name
}

// as is a session of user (password "pw") through p, with no default
// database: such users may not be able to open the run's.
func (x *rsRun) as(p *proxy, user string) *twin {
	x.t.Helper()
	return x.sess(p, rsAccount{user: user, pass: "pw", db: "-"})
}

// rsCase is one case of the suite.
type rsCase struct {
	class, name string
	setup       []string // run as root in the run's database first
	protos      []string // default both
	steps       int      // about how many steps it takes, to start long cases first
	tune        func(*mysqlproxy.Config)
	body        func(x *rsRun)
}

// TestReadSide runs the read-side suite against a MariaDB of its own: the
// cases create accounts and grants, and a grant invalidates everything.
func TestReadSide(t *testing.T) {
	m, err := testenv.StartMariaDB(testenv.MariaDBOptions{ExtraArgs: []string{
		"--log-bin-trust-function-creators=1",
		// A case that deadlocks itself fails in seconds, not in 50.
		"--innodb-lock-wait-timeout=5",
	}})
	if err != nil {
		t.Fatalf("StartMariaDB: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	// Sessions from the second host: the follower's account, and an
	// anonymous account that any unknown name from there logs in as.
	m.Exec(t, "CREATE USER '"+testenv.BinlogUser+"'@'"+rsHost2+"' IDENTIFIED BY '"+testenv.BinlogPassword+"'")
	m.Exec(t, "GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT, SHOW VIEW ON *.* TO '"+testenv.BinlogUser+"'@'"+rsHost2+"'")
	m.Exec(t, "CREATE USER ''@'"+rsHost2+"'")
	m.Exec(t, "CREATE USER 'ops'@'%' IDENTIFIED BY 'opspw'")
	// The cases spend their time waiting on the servers, not on the CPU:
	// run more of them at once than -parallel's default of GOMAXPROCS.
	sem := make(chan struct{}, rsConcurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range rsByWeight() {
		for _, two := range []bool{true, false} {
			topo := "one"
			if two {
				topo = "two"
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t.Run(c.class+"/"+c.name+"/"+topo, func(t *testing.T) { rsRunCase(t, m, c, two) })
			}()
		}
	}
}

// rsConcurrency is how many case runs go at once.
const rsConcurrency = 10

// rsByWeight returns the cases with the long ones (many steps) first, so
// that the suite does not end waiting for one of them.
func rsByWeight() []rsCase {
	out := slices.Clone(rsCases)
	slices.SortStableFunc(out, func(a, b rsCase) int { return b.steps - a.steps })
	return out
}

// rsRunCase runs a case with one sidecar or two, in each protocol.
func rsRunCase(t *testing.T, m *testenv.MariaDB, c rsCase, two bool) {
	env := newRSEnv(t, m, two, c.tune)
	protos := c.protos
	if protos == nil {
		protos = []string{"text", "prepared"}
	}
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			x := &rsRun{t: t, env: env, proto: proto}
			x.db = m.NewDatabase(t)
			x.root = openDB(t, rootDSN(m.Addr, x.db, "multiStatements=true&interpolateParams=true"))
			t.Cleanup(x.release)
			x.exec(c.setup...)
			// The followers bump what the setup wrote twice, the
			// second time a moment later; a warm entry must not
			// be invalidated by that while a case runs.
			x.sync()
			c.body(x)
		})
	}
}

// Shared setups.
var (
	rsOneRow  = []string{"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'one'), (2, 'two')"}
	rsTwoTabs = []string{
		"CREATE TABLE t1 (id INT PRIMARY KEY, v INT, s VARCHAR(10))", "INSERT INTO t1 VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')",
		"CREATE TABLE t2 (id INT PRIMARY KEY, v INT)", "INSERT INTO t2 VALUES (1, 100)",
	}
	rsStateTab = []string{
		"CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP NULL, s VARCHAR(20) CHARACTER SET utf8mb4)",
		"INSERT INTO t VALUES (1, '2024-01-01 12:00:00', 'café'), (2, '2024-06-01 00:30:00', 'thé'), (3, NULL, 'x')",
	}
	rsRows = []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t SELECT seq, 0 FROM seq_1_to_16",
		"CREATE TABLE u (id INT PRIMARY KEY)", "INSERT INTO u VALUES (1)",
	}
)

const (
	rsTZ  = "SELECT ts FROM t WHERE id = 1"
	rsStr = "SELECT s FROM t WHERE id = 1"
)

// rsSnapshotStart is a way to begin a transaction that has taken its
// snapshot, and to end it.
type rsSnapshotStart struct {
	name       string
	start, end []string
}

// rsSnapshotStarts returns the ways to begin such a transaction at
// REPEATABLE READ, and one more, named name, begun by begin.
func rsSnapshotStarts(name string, begin ...string) []rsSnapshotStart {
	const read = "SELECT SQL_NO_CACHE COUNT(*) FROM u"
	return []rsSnapshotStart{
		{"consistent-snapshot", []string{"START TRANSACTION WITH CONSISTENT SNAPSHOT"}, []string{"COMMIT"}},
		{"begin", []string{"BEGIN", read}, []string{"COMMIT"}},
		{"autocommit-0", []string{"SET autocommit = 0", read}, []string{"COMMIT", "SET autocommit = 1"}},
		{name, append(begin, read), []string{"COMMIT"}},
		{"xa", []string{"XA START 'rs-rr'", read}, []string{"XA END 'rs-rr'", "XA ROLLBACK 'rs-rr'"}},
	}
}

func rsRow(id int) string { return fmt.Sprintf("SELECT v FROM t WHERE id = %d", id) }

// rsLoadReader names the rows LOAD DATA LOCAL reads: row 6 whose unique
// u takes row 1's place.
const rsLoadReader = "readside-load"

func init() {
	mysql.RegisterReaderHandler(rsLoadReader, func() io.Reader { return strings.NewReader("6\tz\t60\n") })
}

// rsGlobal serializes the cases that change a global default (Lock)
// with those whose twins, opened at different moments, would start with
// different values of it (RLock).
var rsGlobal sync.RWMutex

var rsCases = []rsCase{
	// Identity and privileges: a cached read is scoped by the account
	// MariaDB matched, with its roles in force, never by the name typed;
	// the admin and kv gates too.
	{
		class: "identity", name: "anonymous-account-vs-carol",
		setup: rsOneRow,
		body: func(x *rsRun) {
			carol := x.account("carol", "GRANT SELECT ON {db}.t TO {user}")
			q := "SELECT v FROM " + x.db + ".t WHERE id = 1"
			x.as(x.A(), carol).warm(q)
			// The same name with no password, from the host whose
			// anonymous account matches first: MariaDB logs it in as
			// ''@127.0.0.2, which may not read t.
			anon := x.sess(x.B(), rsAccount{user: carol, host: rsHost2, db: "-"})
			anon.same("SELECT CURRENT_USER()")
			anon.same(q)
		},
	},
	{
		class: "identity", name: "same-user-two-hosts",
		setup: rsOneRow,
		body: func(x *rsRun) {
			dave := x.name("dave")
			x.exec("CREATE USER '"+dave+"'@'127.0.0.1' IDENTIFIED BY 'pw'",
				"GRANT SELECT ON "+x.db+".t TO '"+dave+"'@'127.0.0.1'",
				"CREATE USER '"+dave+"'@'"+rsHost2+"' IDENTIFIED BY 'pw'")
			q := "SELECT v FROM " + x.db + ".t WHERE id = 1"
			x.as(x.A(), dave).warm(q)
			other := x.sess(x.B(), rsAccount{user: dave, pass: "pw", host: rsHost2, db: "-"})
			other.same("SELECT CURRENT_USER()")
			other.same(q)
		},
	},
	{
		class: "identity", name: "admin-and-kv-gates-by-account",
		setup: rsOneRow,
		tune: func(c *mysqlproxy.Config) {
			c.AdminUsers = []string{"root", "ops"}
			c.KVUsers = []string{"ops"}
		},
		body: func(x *rsRun) {
			// "ops" and "root" typed with no password from the second
			// host log in as its anonymous account, which is neither.
			for _, typed := range []string{"ops", "root"} {
				anon := x.sess(x.B(), rsAccount{user: typed, host: rsHost2, db: "-"})
				anon.same("SELECT CURRENT_USER()")
				for _, s := range []string{"MYCACHED FLUSH", "MYCACHED INVALIDATE TABLE " + x.db + ".t", "SHOW MYCACHED STATUS", `SELECT "k"`, `SELECT "k", "l"`} {
					anon.same(s)
				}
				anon.set(`INSERT "k" = "v"`)
				anon.set(`DELETE "k"`)
			}
		},
	},
	{
		class: "identity", name: "set-role-by-execute-immediate",
		setup: rsOneRow,
		body: func(x *rsRun) {
			role := x.name("reader")
			x.exec("CREATE ROLE "+role, "GRANT SELECT ON "+x.db+".t TO "+role)
			erin := x.account("erin", "GRANT "+role+" TO {user}")
			q := "SELECT v FROM " + x.db + ".t WHERE id = 1"
			// A session with the role fills the cache.
			e := x.as(x.A(), erin)
			e.set("SET ROLE " + role)
			e.fill(q)
			// The same account without the role, and the same session
			// once the role is dropped by a statement whose effect on the
			// roles no text shows.
			x.as(x.B(), erin).same(q)
			e.exec("EXECUTE IMMEDIATE 'SET ROLE NONE'")
			e.same(q)
			e.exec("EXECUTE IMMEDIATE 'SET ROLE " + role + "'")
			e.fill(q)
			e.exec("PREPARE sr FROM 'SET ROLE NONE'", "EXECUTE sr")
			e.same(q)
			// Roles set by EXECUTE IMMEDIATE from the start.
			f := x.as(x.A(), erin)
			f.exec("EXECUTE IMMEDIATE 'SET ROLE " + role + "'")
			f.fill(q)
			x.as(x.B(), erin).same(q)
			f.exec("EXECUTE IMMEDIATE CONCAT('SET ROLE ', 'NONE')")
			f.same(q)
			// Set unseen, then dropped by a SET ROLE the text shows: what
			// the session read with the role is not its to read now.
			g := x.as(x.B(), erin)
			g.exec("EXECUTE IMMEDIATE 'SET ROLE " + role + "'")
			g.fill(q)
			g.exec("SET ROLE NONE")
			g.same(q)
			g.set("SET ROLE " + role)
			g.fill(q)
			g.exec("EXECUTE IMMEDIATE 'SET ROLE NONE'")
			g.exec("SET ROLE NONE")
			g.same(q)
		},
	},
	{
		class: "identity", name: "set-default-role",
		setup: rsOneRow,
		body: func(x *rsRun) {
			role := x.name("reader")
			x.exec("CREATE ROLE "+role, "GRANT SELECT ON "+x.db+".t TO "+role)
			frank := x.account("frank", "GRANT "+role+" TO {user}", "SET DEFAULT ROLE "+role+" FOR {user}")
			q := "SELECT v FROM " + x.db + ".t WHERE id = 1"
			f := x.as(x.A(), frank)
			f.warm(q)
			f.exec("SET DEFAULT ROLE NONE")
			// A new session has no role; the old one keeps it.
			x.as(x.B(), frank).same(q)
			f.same(q)
			f.exec("SET DEFAULT ROLE " + role)
			x.as(x.B(), frank).same(q)
		},
	},
	{
		// Role names hold what a parse of SHOW GRANTS could cut at: a
		// space, an @. Each role's session gets its own entries.
		class: "identity", name: "role-names-with-space-and-at",
		setup: append([]string{"CREATE TABLE sec (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO sec VALUES (1, 'secret')"}, rsOneRow...),
		body: func(x *rsRun) {
			ra, rb, rat := "'"+x.name("r a")+"'", "'"+x.name("r b")+"'", "'"+x.name("r@x")+"'"
			x.exec("CREATE ROLE "+ra, "CREATE ROLE "+rb, "CREATE ROLE "+rat,
				"GRANT SELECT ON "+x.db+".sec TO "+ra, "GRANT SELECT ON "+x.db+".t TO "+rb,
				"GRANT SELECT ON "+x.db+".sec TO "+rat)
			ivy := x.account("ivy", "GRANT "+ra+" TO {user}", "GRANT "+rb+" TO {user}", "GRANT "+rat+" TO {user}")
			q := "SELECT id, v FROM " + x.db + ".sec WHERE id = 1"
			a := x.as(x.A(), ivy)
			a.exec("SET ROLE " + ra)
			a.fill(q)
			b := x.as(x.B(), ivy)
			b.exec("SET ROLE " + rb)
			b.same(q)
			c := x.as(x.A(), ivy)
			c.exec("SET ROLE " + rat)
			c.fill(q)
			x.as(x.B(), ivy).same(q) // no role
		},
	},
	{
		// The server keeps the database privileges a session found at
		// login: after a REVOKE, a session from before may still read
		// what a new one of the same account may not.
		class: "identity", name: "revoke-while-connected",
		setup: append([]string{"CREATE TABLE sec (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO sec VALUES (1, 'secret')"}, rsOneRow...),
		body: func(x *rsRun) {
			// t's grant lets kim into the database after the REVOKE.
			kim := x.account("kim", "GRANT SELECT ON {db}.t TO {user}", "GRANT SELECT ON {db}.* TO {user}")
			in := rsAccount{user: kim, pass: "pw"}
			q := "SELECT id, v FROM sec WHERE id = 1"
			// In the database: the server keeps that database's access.
			old := x.sess(x.A(), in)
			old.same(q)
			x.exec("REVOKE SELECT ON " + x.db + ".* FROM '" + kim + "'@'%'")
			x.sync()
			x.release()
			// A statement after which mycached reads the grants again.
			old.exec("DO 1; DO 1")
			old.warm(q)
			x.sess(x.B(), in).same(q)
			x.sess(x.A(), in).same(q)
		},
	},
	{
		// The server fixes a session's privileges on a database when it
		// USEs it (by statement or COM_INIT_DB), and its global ones when
		// it sets a role: a REVOKE after that leaves them to the session,
		// not to a new one whose grants read the same.
		class: "identity", name: "privileges-fixed-at-use-and-set-role", steps: 6,
		setup: append([]string{"CREATE TABLE sec (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO sec VALUES (1, 'secret')"}, rsOneRow...),
		body: func(x *rsRun) {
			q := "SELECT id, v FROM " + x.db + ".sec WHERE id = 1"
			for i, use := range []string{"USE %s", "USE %s; SELECT no_such_column"} {
				x.step(strings.Fields(use)[len(strings.Fields(use))-1], func(x *rsRun) {
					lu := x.account(fmt.Sprintf("lu%d", i), "GRANT SELECT ON {db}.t TO {user}")
					old := x.as(x.A(), lu)
					x.exec("GRANT SELECT ON " + x.db + ".* TO '" + lu + "'@'%'")
					old.exec(fmt.Sprintf(use, x.db))
					x.exec("REVOKE SELECT ON " + x.db + ".* FROM '" + lu + "'@'%'")
					x.sync()
					x.release()
					old.warm(q)
					for _, p := range x.sidecars() {
						n := x.as(p, lu)
						n.exec("USE " + x.db)
						n.same(q)
					}
				})
			}
			x.step("set-role", func(x *rsRun) {
				role := x.name("ur")
				x.exec("CREATE ROLE "+role, "GRANT SELECT ON *.* TO "+role)
				ru := x.account("ru", "GRANT "+role+" TO {user}")
				old := x.as(x.A(), ru)
				old.exec("SET ROLE " + role)
				x.exec("REVOKE SELECT ON *.* FROM " + role)
				x.sync()
				x.release()
				old.warm(q)
				for _, p := range x.sidecars() {
					n := x.as(p, ru)
					n.exec("SET ROLE " + role)
					n.same(q)
				}
			})
			x.step("use-versus-set-role", func(x *rsRun) {
				// Two sessions that read the same grants after a REVOKE,
				// one at USE (its global privileges stay), the other at
				// SET ROLE NONE (they go): they must not share entries.
				odb := x.name("odb")
				x.exec("CREATE DATABASE "+odb, "CREATE TABLE "+odb+".sec (id INT PRIMARY KEY, v VARCHAR(20))",
					"INSERT INTO "+odb+".sec VALUES (1, 'global')")
				x.t.Cleanup(func() { x.exec("DROP DATABASE " + odb) })
				oq := "SELECT id, v FROM " + odb + ".sec WHERE id = 1"
				gu := x.account("gu", "GRANT SELECT ON *.* TO {user}", "GRANT SELECT ON {db}.* TO {user}")
				for _, p := range x.sidecars() {
					keep, drop := x.as(x.A(), gu), x.as(p, gu)
					// The grants a login reads go behind its OK (see
					// the README): a statement after it waits for them.
					keep.exec("DO 1")
					drop.exec("DO 1")
					x.exec("REVOKE SELECT ON *.* FROM '" + gu + "'@'%'")
					x.sync()
					x.release()
					drop.exec("SET ROLE NONE")
					keep.exec("USE " + x.db)
					drop.exec("USE " + x.db)
					keep.warm(oq)
					drop.same(oq)
					x.exec("GRANT SELECT ON *.* TO '" + gu + "'@'%'")
				}
			})
			x.step("show-create-procedure", func(x *rsRun) {
				// Loading a routine of another database switches to it
				// and back, which fixes the privileges on the session's
				// own database again: the session that did must not
				// share entries with one that did not.
				odb := x.name("pdb")
				x.exec("CREATE DATABASE "+odb, "CREATE PROCEDURE "+odb+".p() SELECT 1")
				x.t.Cleanup(func() { x.exec("DROP DATABASE " + odb) })
				su := x.account("su", "GRANT SELECT ON {db}.t TO {user}", "GRANT EXECUTE ON "+odb+".* TO {user}")
				for _, p := range x.sidecars() {
					loads := x.sess(x.A(), rsAccount{user: su, pass: "pw"})
					other := x.sess(p, rsAccount{user: su, pass: "pw"})
					loads.exec("DO 1")
					other.exec("DO 1")
					x.exec("GRANT SELECT ON " + x.db + ".* TO '" + su + "'@'%'")
					x.sync()
					x.release()
					loads.exec("SHOW CREATE PROCEDURE " + odb + ".p")
					loads.warm(q)
					other.same(q)
					x.exec("REVOKE SELECT ON " + x.db + ".* FROM '" + su + "'@'%'")
				}
			})
			x.step("reset-connection", func(x *rsRun) {
				// COM_RESET_CONNECTION keeps the privileges the session
				// had: it shares no entries with a new login.
				ku := x.account("ku", "GRANT SELECT ON {db}.t TO {user}")
				for _, p := range x.sidecars() {
					via := dialRaw(x.t, p.addr, ku, "pw", x.db, false)
					direct := dialRaw(x.t, x.env.m.Addr, ku, "pw", x.db, false)
					for _, c := range []*rawConn{via, direct} {
						if _, err := c.Execute("DO 1"); err != nil {
							x.t.Fatal(err)
						}
					}
					x.exec("GRANT SELECT ON " + x.db + ".* TO '" + ku + "'@'%'")
					x.sync()
					x.release()
					// A new login, on the same wire format, fills.
					w := dialRaw(x.t, x.A().addr, ku, "pw", x.db, false)
					for range 3 {
						if _, err := w.Execute(q); err != nil {
							x.t.Fatal(err)
						}
						time.Sleep(20 * time.Millisecond)
					}
					read := func(c *rawConn) string {
						c.exchange(x.t, 0x1f) // COM_RESET_CONNECTION
						if _, err := c.Execute(q); err != nil {
							return err.Error()
						}
						return "rows"
					}
					if got, want := read(via), read(direct); got != want {
						x.t.Errorf("%s via %s after COM_RESET_CONNECTION, %s: got %s, want %s", ku, x.side(p), q, got, want)
					}
					x.exec("REVOKE SELECT ON " + x.db + ".* FROM '" + ku + "'@'%'")
				}
			})
		},
	},
	{
		// A stored function run by a statement that is not a cacheable
		// read changes the role, a variable (unscoped, which no tracker
		// reports), or creates a temporary table over a real one.
		class: "session", name: "function-side-effects", steps: 4,
		setup: append([]string{
			"CREATE TABLE sec (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO sec VALUES (1, 'secret')",
			"CREATE TABLE r (v VARCHAR(10))", "INSERT INTO r VALUES ('real')",
			"CREATE TABLE lg (n INT)",
			"CREATE FUNCTION setdpi(n INT) RETURNS INT DETERMINISTIC NO SQL BEGIN SET @@div_precision_increment = n; RETURN n; END",
			"CREATE FUNCTION mktemp() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN CREATE TEMPORARY TABLE r (v VARCHAR(10)); INSERT INTO r VALUES ('temp'); RETURN 1; END",
		}, rsRows...),
		body: func(x *rsRun) {
			role := x.name("sr")
			x.exec("CREATE ROLE "+role, "GRANT SELECT ON "+x.db+".sec TO "+role,
				"CREATE FUNCTION setrole() RETURNS INT DETERMINISTIC NO SQL SQL SECURITY INVOKER BEGIN SET ROLE "+role+"; RETURN 1; END")
			jo := x.account("jo", "GRANT "+role+" TO {user}", "GRANT EXECUTE ON {db}.* TO {user}", "GRANT SELECT ON {db}.t TO {user}", "GRANT INSERT ON {db}.lg TO {user}")
			div := "SELECT id / 7 FROM t WHERE id = 1"
			sec := "SELECT id, v FROM " + x.db + ".sec WHERE id = 1"
			for _, call := range []string{"SELECT %s", "DO %s", "SET @x = %s", "INSERT INTO lg VALUES (%s)"} {
				x.step(call, func(x *rsRun) {
					s := x.rootVia(x.A())
					s.warm(div)
					s.exec(fmt.Sprintf(call, "setdpi(10)"))
					s.same(div)
					s.same(div)

					s = x.rootVia(x.B())
					s.warm("SELECT v FROM r")
					s.exec(fmt.Sprintf(call, "mktemp()"))
					s.same("SELECT v FROM r")
					s.same("SELECT v FROM r")

					j := x.as(x.A(), jo)
					j.exec(fmt.Sprintf(strings.Replace(call, "lg", x.db+".lg", 1), x.db+".setrole()"))
					// Cached or not (the server may say the state changed
					// in a way no tracker shows), not for the account alone.
					j.same(sec)
					j.same(sec)
					x.as(x.B(), jo).same(sec)
				})
			}
		},
	},
	{
		// SET statements anywhere in a multi-statement text, unscoped
		// ones included, which the server does not report.
		class: "session", name: "multi-statement-sets",
		setup: rsRows,
		body: func(x *rsRun) {
			div := "SELECT id / 7 FROM t WHERE id = 1"
			for i, text := range []string{
				"SELECT 1; SET @@div_precision_increment = 9",
				"DO 1; SET @@div_precision_increment = 8",
				"SELECT 1; EXECUTE IMMEDIATE 'SET @@div_precision_increment = 7'",
				"SET @a = 1; SET div_precision_increment = 6; SELECT 1",
			} {
				s := x.rootVia(x.sidecars()[i%len(x.sidecars())])
				s.warm(div)
				s.exec(text)
				s.same(div)
				s.same(div)
			}
		},
	},
	{
		// Temporary tables no tracker reports (MariaDB reports none
		// made by CREATE TEMPORARY TABLE ... SELECT) and no parse sees:
		// made by EXECUTE, PREPARE, a compound statement, a trigger.
		// Their session reads them, every other session the real table.
		class: "session", name: "hidden-temporary-tables",
		setup: append(slices.Clone(rsRows),
			"CREATE TABLE trig (x INT)",
			"CREATE TRIGGER trig_ai AFTER INSERT ON trig FOR EACH ROW CREATE TEMPORARY TABLE u (id INT)",
			// MariaDB reports no state change for these.
			// Written only from another database.
			"CREATE TABLE trig3 (x INT)",
			"CREATE TRIGGER trig3_ai AFTER INSERT ON trig3 FOR EACH ROW CREATE TEMPORARY TABLE u (id INT)",
			"CREATE TABLE trig2 (x INT)",
			"CREATE TRIGGER trig2_ai AFTER INSERT ON trig2 FOR EACH ROW CREATE TEMPORARY TABLE u SELECT 6 AS id",
			"CREATE FUNCTION mkt() RETURNS INT MODIFIES SQL DATA BEGIN CREATE TEMPORARY TABLE u SELECT 4 AS id; RETURN 1; END",
			"CREATE VIEW vf AS SELECT mkt() AS x"),
		body: func(x *rsRun) {
			const q = "SELECT id FROM u"
			for i, create := range []string{
				"EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE u SELECT 7 AS id'",
				"PREPARE s FROM 'CREATE OR REPLACE TEMPORARY TABLE u SELECT 8 AS id'; EXECUTE s",
				"BEGIN NOT ATOMIC CREATE TEMPORARY TABLE u SELECT 9 AS id; END",
				"INSERT INTO trig VALUES (1)",
				"INSERT INTO trig2 VALUES (1)",
				"SELECT * FROM vf",
				"EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE tmp0 SELECT 5 AS id'; SELECT id FROM u; ALTER TABLE tmp0 RENAME TO u",
			} {
				p := x.sidecars()[i%len(x.sidecars())]
				other := x.rootVia(p)
				other.warm(q)
				s := x.rootVia(p)
				s.exec(create)
				s.same(q)
				s.same(q)
				other.same(q)
				for _, p := range x.sidecars() {
					x.rootVia(p).same(q)
				}
			}
			// A trigger of another database than the session's: the
			// server reports the session's database (the trigger ran in
			// its own and came back) with the state-change flag,
			// whatever the trigger did.
			for _, p := range x.sidecars() {
				other := x.rootVia(p)
				other.warm(q)
				s := x.rootVia(p)
				s.exec("USE mysql", "INSERT INTO "+x.db+".trig3 VALUES (1)", "USE "+x.db)
				// Its reads bypass the cache until the follower is fresh
				// as of its write (own-write-unapplied); then too.
				for range 40 {
					s.same(q)
					time.Sleep(50 * time.Millisecond)
				}
				other.same(q)
				x.rootVia(x.B()).same(q)
			}
		},
	},
	{
		// Under table locks the server refuses reads of the tables not
		// locked (1100), however the locks were taken: the cache must
		// not answer those reads, and answers them again once the locks
		// are released.
		class: "session", name: "table-locks-refuse-other-tables", steps: 8,
		setup: rsRows,
		body: func(x *rsRun) {
			q := rsRow(1)
			for i, lock := range []string{
				"LOCK TABLES u READ",
				"  lock\ttable u read",
				"/*!40000 LOCK TABLES u READ */",
				"/*M! LOCK TABLE u WRITE */",
				"FLUSH TABLES u WITH READ LOCK",
				"FLUSH TABLE u FOR EXPORT",
				"DO 1; LOCK TABLES u READ",
				"LOCK TABLES u READ; DO 1",
			} {
				p := x.sidecars()[i%len(x.sidecars())]
				x.step(fmt.Sprint(i), func(x *rsRun) {
					x.rootVia(p).warm(q)
					s := x.rootVia(p)
					// Both sides of the twin locking u at once would
					// wait on each other: the sidecar's side goes first,
					// then MariaDB's.
					seq := func(c *sql.Conn) string {
						out := run(c, "text", lock) + "\n" + query(c, x.proto, q) + query(c, x.proto, q)
						out += run(c, "text", "UNLOCK TABLES") + "\n" + query(c, x.proto, q)
						out += run(c, "text", lock) + "\n" + run(c, "text", "BEGIN") + "\n" + query(c, x.proto, q)
						return out + run(c, "text", "COMMIT")
					}
					if got, want := seq(s.via), seq(s.direct); got != want {
						x.t.Errorf("%s, %s:\ngot  %s\nwant %s", s.label, lock, got, want)
					} else if !strings.Contains(want, "error 1100") {
						x.t.Errorf("%s: MariaDB answered the read under the lock: the case proves nothing:\n%s", lock, want)
					}
				})
			}
		},
	},
	{
		// Variables set unseen under limits that would cut short or
		// refuse the statement that reads them again.
		class: "session", name: "hidden-sets-under-limits",
		setup: rsRows,
		body: func(x *rsRun) {
			all := "SELECT id FROM t WHERE id < 4"
			join := "SELECT a.id FROM t a, t b WHERE a.id < 3 AND b.id < 3"
			for i, limit := range []string{"SET sql_select_limit = 1", "SET max_join_size = 1"} {
				p := x.sidecars()[i%len(x.sidecars())]
				w := x.rootVia(p)
				w.warm(all)
				w.warm(join)
				s := x.rootVia(p)
				s.exec(limit, "EXECUTE IMMEDIATE 'SET @@div_precision_increment = 9'")
				s.same(all)
				s.same(join)
				s.same(all)
				s.exec("SET @a = 1; SET @@sql_select_limit = 2")
				s.same(all)
				x.rootVia(p).same(all)
			}
		},
	},
	{
		// A statement prepared under ANSI_QUOTES keeps that parse when
		// the session's sql_mode changes; another session's text does
		// not.
		class: "session", name: "prepared-under-another-sql_mode", protos: []string{"prepared"},
		setup: rsOneRow,
		body: func(x *rsRun) {
			q := `SELECT "id", 'y' FROM t WHERE id = 1`
			a := x.rootVia(x.A())
			a.exec("SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")
			ps := a.prepare(q)
			a.exec("SET sql_mode = DEFAULT")
			ps.warm()
			ps.same()
			b := x.rootVia(x.B())
			b.prepare(q).same()
			b.prepare(q).same()
		},
	},
	{
		class: "identity", name: "column-level-grant",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b VARCHAR(10))", "INSERT INTO t VALUES (1, 'a1', 'b1')"},
		body: func(x *rsRun) {
			gia := x.account("gia", "GRANT SELECT (id, a) ON {db}.t TO {user}")
			hank := x.account("hank", "GRANT SELECT ON {db}.t TO {user}")
			all := "SELECT id, a, b FROM " + x.db + ".t WHERE id = 1"
			some := "SELECT id, a FROM " + x.db + ".t WHERE id = 1"
			h := x.as(x.A(), hank)
			h.warm(all)
			h.warm(some)
			g := x.as(x.B(), gia)
			g.same(all)
			g.warm(some)
			x.rootVia(x.A()).write("REVOKE SELECT (a) ON " + x.db + ".t FROM '" + gia + "'@'%'")
			g.same(some)
			x.as(x.B(), gia).same(some)
			h.same(some)
		},
	},
	{
		class: "identity", name: "row-filter-views-per-user",
		setup: []string{
			"CREATE TABLE t (owner VARCHAR(80), v INT)",
			"CREATE FUNCTION whoami() RETURNS VARCHAR(80) DETERMINISTIC RETURN SUBSTRING_INDEX(USER(), '@', 1)",
			"CREATE VIEW v AS SELECT owner, v FROM t WHERE owner = SUBSTRING_INDEX(USER(), '@', 1)",
			"CREATE VIEW vf AS SELECT owner, v FROM t WHERE owner = whoami()",
			"CREATE VIEW vv AS SELECT owner, v FROM v",
			"CREATE SQL SECURITY INVOKER VIEW vc AS SELECT owner, v FROM t WHERE owner = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)",
		},
		body: func(x *rsRun) {
			// ann and bob have no account: from the second host both log
			// in as its anonymous one, whose rows a view picks by USER().
			ann, bob, ivan, judy := x.name("ann"), x.name("bob"), x.name("ivan"), x.name("judy")
			x.exec(fmt.Sprintf("INSERT INTO t VALUES ('%s', 1), ('%s', 2), ('%s', 3), ('%s', 4)", ann, bob, ivan, judy))
			for _, v := range []string{"v", "vf", "vv"} {
				x.exec("GRANT SELECT ON " + x.db + "." + v + " TO ''@'" + rsHost2 + "'")
			}
			x.account("ivan", "GRANT SELECT ON {db}.t TO {user}", "GRANT SELECT ON {db}.vc TO {user}")
			x.account("judy", "GRANT SELECT ON {db}.t TO {user}", "GRANT SELECT ON {db}.vc TO {user}")
			for _, v := range []string{"v", "vf", "vv"} {
				q := "SELECT owner, v FROM " + x.db + "." + v
				for i, who := range []string{ann, bob} {
					s := x.sess(x.sidecarN(i), rsAccount{user: who, host: rsHost2, db: "-"})
					s.same(q)
					s.same(q)
				}
			}
			q := "SELECT owner, v FROM " + x.db + ".vc"
			for i, who := range []string{ivan, judy} {
				s := x.as(x.sidecarN(i), who)
				s.same(q)
				s.same(q)
			}
		},
	},

	// Session state that changes a result, however it was set.
	{
		class: "session", name: "prepared-set-time_zone",
		setup: rsStateTab,
		body: func(x *rsRun) {
			x.rsStateChanged([]string{rsTZ}, func(s *twin) { s.set("SET time_zone = ?", "+05:00") })
			x.rsStateChanged([]string{rsTZ}, func(s *twin) { s.set("SET @@session.time_zone = ?", "-03:00") })
		},
	},
	{
		class: "session", name: "prepared-set-sql_select_limit",
		setup: rsRows,
		body: func(x *rsRun) {
			q := "SELECT id FROM t WHERE id < 4 ORDER BY id"
			x.rsStateChanged([]string{q}, func(s *twin) { s.set("SET sql_select_limit = ?", 1) })
			x.rootVia(x.B()).same(q)
		},
	},
	{
		class: "session", name: "set-from-user-variable",
		setup: rsStateTab,
		body: func(x *rsRun) {
			pipes := "SELECT id || 0 AS x FROM t WHERE id = 1"
			x.rsStateChanged([]string{rsTZ, pipes}, func(s *twin) {
				s.set("SET @tz = ?", "+05:00")
				s.exec("SET time_zone = @tz")
				s.set("SET @m = ?", "PIPES_AS_CONCAT")
				s.exec("SET sql_mode = @m")
			})
		},
	},
	{
		// The client turns the session's trackers off, or lists other
		// variables: the server reports nothing of that change, nor of
		// the changes it hides, in the same statement or after.
		class: "session", name: "client-changes-the-trackers",
		setup: rsStateTab,
		body: func(x *rsRun) {
			q := "SELECT id FROM t ORDER BY id"
			x.rsStateChanged([]string{rsTZ}, func(s *twin) {
				s.exec("SET session_track_system_variables = ''", "SET time_zone = '+05:00'")
			})
			x.rsStateChanged([]string{rsTZ, q}, func(s *twin) {
				s.exec("SET session_track_system_variables = 'autocommit', session_track_state_change = OFF, time_zone = '+06:00', sql_select_limit = 2")
			})
			x.rsStateChanged([]string{rsTZ}, func(s *twin) {
				s.exec("SET @v = ''", "PREPARE st FROM 'SET session_track_system_variables = ?'", "EXECUTE st USING @v", "SET time_zone = '-02:00'")
			})
			x.rsStateChanged([]string{rsTZ}, func(s *twin) {
				s.exec("EXECUTE IMMEDIATE 'SET session_track_system_variables = ?, time_zone = ?' USING 'autocommit', '+07:00'")
			})
			x.rsStateChanged([]string{rsTZ}, func(s *twin) {
				s.set("SET session_track_system_variables = ?", "")
				s.set("SET time_zone = ?", "+09:00")
			})
		},
	},
	{
		// MariaDB's trackers report SET @@x = ... (no scope) only as "the
		// state changed", with no variable: the values must be read back.
		class: "session", name: "set-unscoped-system-variable",
		setup: rsRows,
		body: func(x *rsRun) {
			q := "SELECT id FROM t WHERE id < 4 ORDER BY id"
			// 1 under a case-insensitive collation, 0 under latin1_bin.
			ws := "SELECT CONCAT('a', v) = 'A0' AS eq FROM t WHERE id = 1"
			x.rsStateChanged([]string{q}, func(s *twin) { s.exec("SET @@sql_select_limit = 1") })
			x.rsStateChanged([]string{ws}, func(s *twin) { s.exec("SET @@collation_connection = latin1_bin") })
			// The same session, the same text, before and after.
			s := x.rootVia(x.B())
			s.exec("SET sql_select_limit = 0")
			s.same(q)
			s.same(q)
			s.exec("SET @saved = 2", "SET @@sql_select_limit = @saved")
			s.same(q)
			s.same(q)
		},
	},
	{
		// An unscoped SET @@sql_mode is reported only as "the state
		// changed": the next text is read by the new mode, in which
		// the quote ends at the backslash and the table is read.
		class: "session", name: "unscoped-set-changes-how-the-text-reads",
		setup: rsOneRow,
		body: func(x *rsRun) {
			q := "SELECT 'a\\' AS s, (SELECT COUNT(*) FROM t) AS n -- '\n"
			// Each read in a new session, right after its SET.
			read := func(p *proxy, mode string) string {
				s := x.rootVia(p)
				s.exec("SET @@sql_mode = " + mode)
				return s.same(q)
			}
			for _, mode := range []string{"'NO_BACKSLASH_ESCAPES'", "CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"} {
				read(x.B(), mode)
				read(x.A(), mode)
				read(x.B(), mode)
			}
			x.rootVia(x.A()).write("INSERT INTO t VALUES (3, 'three')")
			x.sync()
			for _, p := range []*proxy{x.A(), x.B()} {
				if got := read(p, "'NO_BACKSLASH_ESCAPES'"); !strings.Contains(got, "3") {
					x.t.Errorf("the count after the insert, directly: %s", got)
				}
			}
			// In sjis, 0x95 0x5C is one character, not a byte and a
			// backslash that escapes the quote.
			sj := "SELECT '\x95\x5c' AS a, (SELECT COUNT(*) FROM t) AS n -- '\n"
			for i, p := range []*proxy{x.B(), x.A(), x.B()} {
				s := x.rootVia(p)
				s.exec("SET @@character_set_client = sjis")
				s.same(sj)
				if i == 1 {
					x.rootVia(x.A()).write("INSERT INTO t VALUES (4, 'four')")
					x.sync()
				}
			}
		},
	},
	{
		class: "session", name: "prepare-and-execute-set",
		setup: rsStateTab,
		body: func(x *rsRun) {
			x.rsStateChanged([]string{rsTZ, rsStr}, func(s *twin) {
				s.exec("PREPARE stz FROM 'SET time_zone = ''+05:00'''", "EXECUTE stz", "PREPARE sn FROM 'SET NAMES latin1'", "EXECUTE sn")
			})
		},
	},
	{
		class: "session", name: "execute-immediate-set",
		setup: rsStateTab,
		body: func(x *rsRun) {
			x.rsStateChanged([]string{rsTZ, rsStr}, func(s *twin) {
				s.exec("EXECUTE IMMEDIATE 'SET time_zone = ''+05:00'''", "EXECUTE IMMEDIATE CONCAT('SET NAMES ', 'latin1')")
			})
		},
	},
	{
		class: "session", name: "routine-sets-timestamp",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, tm TIME)", "INSERT INTO t VALUES (1, '10:00:00')",
			"CREATE PROCEDURE pts() SET @@timestamp = 1000000000",
			"CREATE FUNCTION fts() RETURNS INT BEGIN SET @@timestamp = 1000000000; RETURN 1; END",
		},
		body: func(x *rsRun) {
			// A TIME read as a datetime takes the session's date.
			q := "SELECT CAST(tm AS DATETIME) FROM t WHERE id = 1"
			x.rsStateChanged([]string{q}, func(s *twin) { s.exec("CALL pts()") })
			x.rsStateChanged([]string{q}, func(s *twin) { s.same("SELECT fts()") })
		},
	},
	{
		// MariaDB reports SET timestamp = DEFAULT, of a timestamp that
		// was set, with the value it had; and a timestamp frozen a
		// moment ago (UNIX_TIMESTAMP()) reads like the clock. A TIME
		// read as a datetime takes the session's date: sessions of one
		// clock and the other share no entry.
		class: "session", name: "timestamp-default-and-frozen-near-the-clock",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, tm TIME)", "INSERT INTO t VALUES (1, '10:00:00')"},
		body: func(x *rsRun) {
			q := "SELECT CAST(tm AS DATETIME) FROM t WHERE id = 1"
			for _, forms := range [][]string{
				{"SET timestamp = 946684800", "SET timestamp = DEFAULT"},
				{"SET timestamp = 946684801", "SET SESSION timestamp = DEFAULT, time_zone = DEFAULT"},
			} {
				frozen := x.rootVia(x.A())
				frozen.exec(forms[0])
				frozen.warm(q)
				back := x.rootVia(x.B())
				back.exec(forms...)
				back.same(q)
				back.same(q)
				again := x.rootVia(x.A())
				again.exec(forms[0])
				again.same(q)
			}
			// A read no session of the clock has filled yet.
			q = "SELECT CAST(tm AS DATETIME), 'near' FROM t WHERE id = 1"
			near := x.rootVia(x.A())
			near.exec("SET timestamp = UNIX_TIMESTAMP()")
			near.warm(q)
			clock := x.rootVia(x.B())
			before := clock.executed()
			clock.same(q)
			if clock.executed() == before {
				x.t.Errorf("%s: a session of the clock was served the entry of one whose clock stopped", q)
			}
		},
	},
	{
		class: "session", name: "routine-sets-time_zone",
		setup: append([]string{
			"CREATE PROCEDURE ptz() SET time_zone = '+05:00'",
			"CREATE FUNCTION ftz() RETURNS INT BEGIN SET time_zone = '-07:00'; RETURN 1; END",
		}, rsStateTab...),
		body: func(x *rsRun) {
			x.rsStateChanged([]string{rsTZ}, func(s *twin) { s.exec("CALL ptz()") })
			x.rsStateChanged([]string{rsTZ}, func(s *twin) { s.same("SELECT ftz()") })
		},
	},
	{
		// The procedure turns the trackers off before its changes, and
		// leaves a note: the client reads the note first (mycached reads
		// the session's state back only after that), then the zone.
		class: "session", name: "routine-hides-its-changes-and-leaves-notes",
		setup: append([]string{
			"CREATE PROCEDURE phide() BEGIN SET session_track_system_variables = ''; SET time_zone = '+04:00'; " +
				"SET @a = 1; CREATE TABLE IF NOT EXISTS t (id INT); END",
		}, rsStateTab...),
		body: func(x *rsRun) {
			x.rsStateChanged([]string{rsTZ}, func(s *twin) {
				s.exec("CALL phide()")
				if out := s.sameIn("text", "SHOW WARNINGS"); !strings.Contains(out, "1050") {
					x.t.Errorf("the procedure's note, directly: %s", out)
				}
				s.sameIn("text", "SELECT @@warning_count")
			})
		},
	},
	{
		class: "session", name: "handshake-charset",
		setup: rsStateTab,
		body: func(x *rsRun) {
			x.rootVia(x.A()).warm(rsStr)
			for _, coll := range []string{"latin1_swedish_ci", "gbk_chinese_ci"} {
				acct := x.rootAcct()
				acct.params = "collation=" + coll
				s := x.sess(x.B(), acct)
				s.same(rsStr)
				s.same(rsStr)
			}
			x.rootVia(x.B()).same(rsStr)
		},
	},
	{
		class: "session", name: "found_rows-after-a-hit",
		setup: rsRows,
		body: func(x *rsRun) {
			two := "SELECT id FROM t WHERE id < 6 ORDER BY id LIMIT 2"
			calc := "SELECT SQL_CALC_FOUND_ROWS id FROM t WHERE id < 6 ORDER BY id LIMIT 2"
			x.rootVia(x.A()).warm(two)
			s := x.rootVia(x.B())
			s.warm(two)
			for _, proto := range []string{"text", "prepared"} {
				// MariaDB last ran a read of sixteen rows; the hit of two
				// must leave FOUND_ROWS() at two.
				s.sameIn("text", "SELECT SQL_NO_CACHE id FROM t")
				s.same(two)
				s.sameIn(proto, "SELECT FOUND_ROWS()")
				s.same(calc)
				s.sameIn(proto, "SELECT FOUND_ROWS()")
				// Statements that are not reads leave FOUND_ROWS() as
				// the hit made it; a read makes it anew.
				for _, between := range []string{"SET @w = 1", "DO 1", "UPDATE t SET v = v WHERE id = 16", "SELECT 1",
					// Refused by the server: it leaves FOUND_ROWS().
					"SELECT nocol FROM t", "SELECT * FROM nosuch"} {
					s.sameIn("text", "SELECT SQL_NO_CACHE id FROM t")
					s.same(two)
					s.exec(between)
					s.sameIn(proto, "SELECT FOUND_ROWS()")
				}
			}
			x.rootVia(x.A()).write("INSERT INTO t VALUES (0, 0)")
			o := x.rootVia(x.B())
			o.same(calc)
			o.same("SELECT FOUND_ROWS()")
		},
	},
	{
		class: "session", name: "warnings-after-a-hit",
		setup: rsStateTab,
		body: func(x *rsRun) {
			s := x.rootVia(x.B())
			s.warm(rsStr)
			for _, proto := range []string{"text", "prepared"} {
				for _, diag := range []string{"SHOW WARNINGS", "SELECT @@warning_count", "SHOW COUNT(*) WARNINGS"} {
					s.sameIn("text", "SELECT CAST(s AS SIGNED) FROM t WHERE id = 1")
					s.same(rsStr)
					s.sameIn(proto, diag)
					// A statement that uses no table and has no message
					// leaves the hit's warnings in place; one with a
					// message of its own replaces them.
					for _, between := range []string{"SET @w = 1", "DO 1", "SELECT 1", "SET @w = CAST('1x' AS SIGNED)"} {
						s.sameIn("text", "SELECT CAST(s AS SIGNED) FROM t WHERE id = 1")
						s.same(rsStr)
						s.exec(between)
						s.sameIn(proto, diag)
					}
				}
			}
			// Diagnostics read by a statement prepared by name, from a
			// text or a variable, with other statements prepared since.
			s.exec("PREPARE sw FROM 'SHOW WARNINGS'", "SET @rc = 'SELECT ROW_COUNT()'", "PREPARE rc FROM @rc", "PREPARE other FROM 'SELECT 1'")
			for _, diag := range []string{"EXECUTE sw", "EXECUTE rc", "EXECUTE IMMEDIATE @rc", "EXECUTE IMMEDIATE 'SHOW WARNINGS'"} {
				s.sameIn("text", "SELECT CAST(s AS SIGNED) FROM t WHERE id = 1")
				s.exec("SET @z = 1")
				s.same(rsStr)
				s.sameIn("text", diag)
			}
		},
	},
	{
		// A session whose variables mycached cannot read again (the
		// server refuses its SHOW VARIABLES over a memory cap) reads
		// from the server until it can.
		class: "session", name: "variables-unreadable",
		setup: rsRows,
		body: func(x *rsRun) {
			const q = "SELECT id / 7 FROM t WHERE id = 1"
			const capped = "SET SESSION max_session_mem_used = 8192"
			for _, p := range []*proxy{x.A(), x.B()} {
				// Filled under the same cap (which is in the key), by a
				// session whose variables were read before it.
				w := x.rootVia(p)
				w.exec(capped)
				for range 3 {
					w.same(q)
				}
				s := x.rootVia(p)
				s.exec(capped)
				// Unscoped: no tracker reports it, and its reading fails.
				s.exec("SET @@div_precision_increment = 9")
				s.same(q)
				s.same(q)
			}
		},
	},
	{
		// A procedure may read the diagnostics its caller's last
		// statement left, which after a hit are the hit's to make.
		class: "session", name: "diagnostics-read-by-a-procedure-after-a-hit",
		setup: append([]string{
			"CREATE PROCEDURE p_sw() SHOW WARNINGS",
			"CREATE PROCEDURE p_gd() BEGIN DECLARE n INT; GET DIAGNOSTICS n = NUMBER; SELECT n; END",
			"CREATE FUNCTION f_fr() RETURNS INT READS SQL DATA RETURN FOUND_ROWS()",
			"CREATE FUNCTION f_wc() RETURNS INT READS SQL DATA RETURN @@warning_count",
			"CREATE VIEW v_fr AS SELECT f_fr() AS fr",
		}, rsStateTab...),
		body: func(x *rsRun) {
			for _, proto := range []string{"text", "prepared"} {
				for _, call := range []string{"CALL p_sw()", "CALL p_gd()", "SELECT f_fr()", "SELECT f_wc()",
					"EXECUTE IMMEDIATE CONCAT('SELECT FOUND', '_ROWS()')", "SELECT fr FROM v_fr"} {
					// A session that has run no stored code yet.
					s := x.rootVia(x.B())
					s.warm(rsStr)
					s.sameIn("text", "SELECT CAST('1x' AS SIGNED) FROM seq_1_to_3")
					s.same(rsStr)
					s.sameIn(proto, call)
				}
			}
		},
	},
	{
		// After stored code, mycached reads the session's variables again
		// before the next statement it may cache; not before one that
		// reads what the code left (prepared, as PDO and mysqli do).
		class: "session", name: "diagnostics-after-stored-code",
		setup: append([]string{"CREATE PROCEDURE pw() DO CAST('9z' AS SIGNED)"}, rsRows...),
		body: func(x *rsRun) {
			s := x.rootVia(x.B())
			for _, code := range []string{"CALL pw()", "EXECUTE IMMEDIATE 'DO CAST(''3z'' AS SIGNED)'", "SET @x = CAST('4z' AS SIGNED)", "SELECT 1; DO CAST('5z' AS SIGNED)",
				// Not parsed by mycached: it may have run anything.
				"SELECT CAST('6z' AS INT)", "SELECT CAST('7z' AS INT) FROM t WHERE id = 1"} {
				// A read of no table between leaves the warnings, which
				// mycached's reading of the session's state would clear.
				for _, between := range [][]string{nil, {"SELECT 1"}, {"SELECT 1", "SELECT 'q'"}} {
					for _, diag := range [][]string{{"SELECT FOUND_ROWS()"}, {"SHOW WARNINGS"}, {"SELECT @@warning_count"}, {"SELECT ROW_COUNT()"},
						{"GET DIAGNOSTICS @n = NUMBER", "SELECT @n"}, {"GET DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT", "SELECT @m"}} {
						s.sameIn("text", "SELECT SQL_NO_CACHE id FROM t")
						s.exec(code)
						for _, b := range between {
							s.same(b)
						}
						for _, d := range diag[:len(diag)-1] {
							s.exec(d)
						}
						s.same(diag[len(diag)-1])
					}
				}
			}
		},
	},
	{
		// A hit, then a statement that may set FOUND_ROWS() or leave it
		// as the hit's: which do is the server's business (a subquery
		// of a table sets it, a constant one does not; SHOW TABLES sets
		// it, SHOW CREATE TABLE does not), and a read of it gets what it
		// gets directly. One that sets ROW_COUNT() to 0 and leaves
		// FOUND_ROWS() (SET, DO, BEGIN) gives the later statement's 0
		// and the hit's count.
		class: "session", name: "found-rows-after-a-hit-and-another-statement",
		setup: rsRows,
		body: func(x *rsRun) {
			s := x.rootVia(x.A())
			q := "SELECT id FROM t WHERE id < 5"
			s.warm(q)
			for _, mid := range [][]string{
				{"SET @z = 1"}, {"DO 1"}, {"BEGIN"}, {"COMMIT"}, {"SET NAMES utf8mb4"}, {"SET @z = 2; SET @y = 3"},
				{"PREPARE q2 FROM 'SELECT 1'"}, {"DEALLOCATE PREPARE nosuch"}, {"FLUSH STATUS"}, {"ANALYZE TABLE u"}, {"CHECK TABLE u"},
				{"CHECKSUM TABLE u"}, {"HELP 'select'"}, {"LOCK TABLES u READ", "UNLOCK TABLES"}, {"UNLOCK TABLES"},
				{"SET @a = (SELECT COUNT(*) FROM t)"}, {"SET @b := (SELECT 1) + 1"}, {"DO (SELECT COUNT(*) FROM t)"},
				{"INSERT IGNORE INTO u SELECT 1"}, {"INSERT IGNORE INTO u VALUES ((SELECT 1))"},
				{"UPDATE u JOIN t ON u.id = t.id SET u.id = u.id"}, {"UPDATE u SET id = id WHERE id IN (SELECT id FROM t WHERE id = 1)"},
				{"DELETE u FROM u JOIN t ON u.id = t.id WHERE t.id = 0"}, {"UPDATE u SET id = id WHERE id = 1"},
				{"SHOW TABLES"}, {"SHOW CREATE TABLE t"}, {"SHOW GRANTS"}, {"SHOW COUNT(*) WARNINGS"}, {"DESCRIBE t"},
				{"EXPLAIN SELECT * FROM t"}, {"ANALYZE SELECT * FROM u"}, {"SELECT nosuch FROM t"},
				{"CREATE TEMPORARY TABLE tt SELECT * FROM t", "DROP TEMPORARY TABLE tt"},
			} {
				s.same(q)
				for _, m := range mid {
					s.exec(m)
				}
				s.same("SELECT ROW_COUNT(), FOUND_ROWS()")
			}
		},
	},
	{
		// A view may read what the session's last statement left, which
		// after a hit are the hit's to make.
		class: "session", name: "diagnostics-read-by-a-view-after-a-hit",
		setup: append([]string{
			"CREATE VIEW v_fr AS SELECT FOUND_ROWS() AS fr", "CREATE VIEW v_rc AS SELECT ROW_COUNT() AS rc",
			"CREATE VIEW v_nest AS SELECT fr FROM v_fr",
		}, rsRows...),
		body: func(x *rsRun) {
			q := "SELECT id FROM t WHERE id < 5"
			s := x.rootVia(x.B())
			s.warm(q)
			for _, read := range []string{"SELECT fr FROM v_fr", "SELECT * FROM (SELECT * FROM v_fr) x", "SELECT t.id, fr FROM t JOIN v_fr WHERE t.id = 1",
				"SELECT (SELECT rc FROM v_rc)", "SELECT fr FROM v_nest"} {
				s.sameIn("text", "SELECT CAST('1x' AS SIGNED) FROM seq_1_to_3")
				s.exec("UPDATE u SET id = id WHERE id = 1")
				s.same(q)
				s.same(read)
			}
			s.same(q)
			s.exec("SET @x = (SELECT fr FROM v_fr)")
			s.same("SELECT @x")
		},
	},
	{
		class: "session", name: "set-statement-for",
		setup: append([]string{"CREATE TABLE n (id INT PRIMARY KEY)", "INSERT INTO n VALUES (1), (2), (3)"}, rsStateTab...),
		body: func(x *rsRun) {
			all := "SELECT id FROM n ORDER BY id"
			s := x.rootVia(x.A())
			s.same("SET STATEMENT time_zone = '+05:00' FOR " + rsTZ)
			s.warm(rsTZ)
			s.same("SET STATEMENT sql_select_limit = 1 FOR " + all)
			s.warm(all)
			o := x.rootVia(x.B())
			o.set("SET time_zone = ?", "+05:00")
			o.same(rsTZ)
			o.set("SET sql_select_limit = ?", 1)
			o.same(all)
		},
	},
	{
		class: "session", name: "sql_auto_is_null",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "INSERT INTO t (v) VALUES (1), (2), (3), (4)",
			// A view hides the IS NULL from the text.
			"CREATE VIEW vn AS SELECT id, v FROM t WHERE id IS NULL",
		},
		body: func(x *rsRun) {
			// Each session inserts into a temporary table of its own, so
			// that the twins' LAST_INSERT_ID() agree, and then reads the
			// row of t whose id is its LAST_INSERT_ID().
			for _, q := range []string{"SELECT id, v FROM t WHERE id IS NULL", "SELECT id, v FROM vn"} {
				for i, p := range []*proxy{x.A(), x.B(), x.A()} {
					s := x.rootVia(p)
					s.set("SET sql_auto_is_null = ?", 1)
					s.exec("DROP TEMPORARY TABLE IF EXISTS ids")
					s.exec(fmt.Sprintf("CREATE TEMPORARY TABLE ids (id INT PRIMARY KEY AUTO_INCREMENT) AUTO_INCREMENT = %d", 2+i))
					for j := 0; j < 2; j++ {
						s.exec("INSERT INTO ids VALUES ()")
						s.same(q)
						s.same(q)
					}
				}
			}
		},
	},
	{
		class: "session", name: "session-variables",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, d DATE, c CHAR(5), s VARCHAR(20), n INT)",
			"INSERT INTO t VALUES (1, '2024-01-07', 'ab', 'Café', 7), (2, '2024-12-30', 'cd', 'cafe', 8)",
		},
		body: func(x *rsRun) {
			rsGlobal.RLock()
			defer rsGlobal.RUnlock()
			for _, c := range []struct {
				set string
				arg any
				q   string
			}{
				{"SET group_concat_max_len = ?", 4, "SELECT GROUP_CONCAT(s ORDER BY id) FROM t"},
				{"SET div_precision_increment = ?", 0, "SELECT n / 3 FROM t WHERE id = 1"},
				{"SET lc_time_names = ?", "de_DE", "SELECT DATE_FORMAT(d, '%W %M') FROM t WHERE id = 1"},
				{"SET default_week_format = ?", 3, "SELECT WEEK(d) FROM t WHERE id = 2"},
				{"SET sql_mode = ?", "PAD_CHAR_TO_FULL_LENGTH", "SELECT c FROM t WHERE id = 1"},
				{"SET collation_connection = ?", "utf8mb4_bin", "SELECT COUNT(*) FROM t WHERE s = 'cafe'"},
				{"SET character_set_results = ?", "latin1", "SELECT s FROM t WHERE id = 1"},
				{"SET max_sort_length = ?", 8, "SELECT id FROM t ORDER BY CONCAT(REPEAT('x', 10), s) DESC, id"},
				{"SET sql_mode = ?", "HIGH_NOT_PRECEDENCE", "SELECT NOT n BETWEEN -5 AND 5 FROM t WHERE id = 1"},
				{"SET sql_mode = ?", "EMPTY_STRING_IS_NULL", "SELECT '' IS NULL FROM t WHERE id = 1"},
			} {
				x.rootVia(x.A()).warm(c.q)
				s := x.rootVia(x.B())
				s.set(c.set, c.arg)
				s.same(c.q)
				s.same(c.q)
			}
		},
	},
	{
		class: "session", name: "global-default-changed",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, d DATE)", "INSERT INTO t VALUES (1, '2024-12-30')",
			"CREATE TABLE v (id INT PRIMARY KEY, x INT) WITH SYSTEM VERSIONING", "INSERT INTO v VALUES (1, 1), (2, 2)",
		},
		body: func(x *rsRun) {
			rsGlobal.Lock()
			defer rsGlobal.Unlock()
			for _, c := range []struct{ q, set, reset string }{
				{"SELECT WEEK(d) FROM t WHERE id = 1", "default_week_format = 3", "default_week_format = 0"},
				// A recursive CTE stops, without an error, after so many
				// iterations.
				{"WITH RECURSIVE c (n) AS (SELECT id FROM t UNION ALL SELECT n + 1 FROM c WHERE n < 10) SELECT COUNT(*) FROM c",
					"max_recursive_iterations = 3", "max_recursive_iterations = DEFAULT"},
				// A system-versioned table read as of another time.
				{"SELECT COUNT(*) FROM v", "system_versioning_asof = '2001-01-01 00:00:00'", "system_versioning_asof = DEFAULT"},
			} {
				x.rootVia(x.A()).warm(c.q)
				x.exec("SET GLOBAL " + c.set)
				// Sessions opened now start with the new default.
				x.rootVia(x.B()).same(c.q)
				x.rootVia(x.A()).same(c.q)
				x.exec("SET GLOBAL " + c.reset)
			}
		},
	},
	{
		// A plain comment before a statement or after it (a trace id a
		// client library adds) changes nothing the server answers, and
		// shares the statement's entry; one within it may name a column,
		// and does not.
		class: "text", name: "edge-comments",
		setup: rsOneRow,
		body: func(x *rsRun) {
			s := x.rootVia(x.A())
			q := "SELECT v FROM t WHERE id = 1"
			s.warm(q)
			for _, v := range []string{
				"/* trace_id=4bf92f35 */ " + q, q + " /* traceparent='00-4bf92f35-01' */",
				q + " -- app:checkout\n", "# app:cart\n" + q, "/* a */ /* b */ " + q + " /* c */",
			} {
				before := s.executed()
				s.same(v)
				if s.executed() != before {
					x.t.Errorf("%s (%s) went to the server: want a hit of %s's entry", v, x.proto, q)
				}
			}
			// Named by the text of its expression, comment included.
			s.warm("SELECT 1 + id FROM t WHERE id = 1")
			s.same("SELECT 1 /* one */ + id FROM t WHERE id = 1")
			s.same("/* a */ SELECT 1 /* one */ + id FROM t WHERE id = 1 /* b */")
			// A comment after a ';' is a statement of its own there.
			s.same(q + "; /* c */")
		},
	},
	{
		// A session that has the server trace its statements, or profile
		// them, reads what the server ran for it: a hit would leave the
		// trace of the statement before it, and be missing from SHOW
		// PROFILES.
		class: "session", name: "traced-session",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2)",
			"CREATE TABLE u (id INT PRIMARY KEY)", "INSERT INTO u VALUES (1)",
		},
		body: func(x *rsRun) {
			q, other := "SELECT v FROM t WHERE id = 1", "SELECT id FROM u WHERE id = 1"
			for _, set := range []string{"SET optimizer_trace = 'enabled=on'", "SET profiling = 1"} {
				s := x.rootVia(x.A())
				s.warm(q)
				s.warm(other)
				s.exec(set)
				for range 2 {
					s.same(q)
					s.same(other)
					s.same(q)
					s.same("SELECT QUERY FROM information_schema.OPTIMIZER_TRACE")
				}
				s.sameWith("SHOW PROFILES", profiledTexts)
			}
		},
	},
	{
		// The server does not run a hit: the cost of the session's last
		// statement is the one before it, unless the hit runs again
		// for the read of it.
		class: "session", name: "last-query-cost-after-hit",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t SELECT seq, seq FROM seq_1_to_50"},
		body: func(x *rsRun) {
			s := x.rootVia(x.A())
			point := "SELECT v FROM t WHERE id = 1"
			s.warm(point)
			for _, show := range []string{
				"SHOW SESSION STATUS LIKE 'Last_query_cost'", "SHOW STATUS WHERE Variable_name = 'last_query_cost'",
			} {
				for _, before := range []string{"SELECT SQL_NO_CACHE * FROM t WHERE v > 3 LIMIT 2", "SELECT SQL_NO_CACHE COUNT(*) FROM t"} {
					s.same(before)
					s.same(point)
					s.same(show)
				}
			}
		},
	},
	{
		class: "session", name: "column-default-is-evaluated",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), u VARCHAR(40) DEFAULT (UUID()))", "INSERT INTO t (id) VALUES (1)"},
		body: func(x *rsRun) {
			s := x.rootVia(x.B())
			for _, q := range []string{"SELECT DEFAULT(ts) FROM t WHERE id = 1", "SELECT DEFAULT(u) FROM t WHERE id = 1"} {
				// MariaDB evaluates the default each time: two reads differ.
				d1, d2 := query(s.direct, x.proto, q), query(s.direct, x.proto, q)
				v1, v2 := query(s.via, x.proto, q), query(s.via, x.proto, q)
				if d1 != d2 && v1 == v2 {
					x.t.Errorf("%s twice through the sidecar: got the same answer twice (%s), want a new one as MariaDB gives (%s then %s)", q, v1, d1, d2)
				}
			}
		},
	},
	{
		class: "session", name: "sequences",
		setup: []string{"CREATE SEQUENCE s"},
		body: func(x *rsRun) {
			s := x.rootVia(x.B())
			for _, q := range []string{"SELECT NEXT VALUE FOR s", "SELECT NEXTVAL(s)", "SELECT s.nextval FROM DUAL"} {
				if a, b := query(s.via, x.proto, q), query(s.via, x.proto, q); a == b && !strings.HasPrefix(a, "error") {
					x.t.Errorf("%s twice through the sidecar: got %s both times, want the next value", q, a)
				}
			}
		},
	},

	// Transactions: a read whose snapshot predates a write must not be
	// stored under the write's generations; uncommitted rows are never
	// stored; every way a transaction ends bumps what it wrote again.
	{
		class: "transaction", name: "repeatable-read-snapshot-predates-write", steps: 10,
		setup: rsRows,
		body: func(x *rsRun) {
			id := 0
			for _, st := range rsSnapshotStarts("next-transaction-isolation", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", "BEGIN") {
				for _, writer := range []string{"write-through-A", "write-directly"} {
					id++
					q := rsRow(id)
					x.step(st.name+"/"+writer, func(x *rsRun) {
						r := x.rootVia(x.B())
						r.execXA(st.start...)
						upd := fmt.Sprintf("UPDATE t SET v = v + 100 WHERE id = %d", id)
						if writer == "write-directly" {
							x.exec(upd)
							x.sync()
						} else {
							x.rootVia(x.A()).write(upd)
						}
						r.same(q) // the snapshot, from before the write
						x.fresh(q)
						r.execXA(st.end...)
						r.same(q)
					})
				}
			}
		},
	},
	{
		// A transaction whose snapshot is older than a write is not
		// served the rows cached after it: it reads its snapshot.
		class: "transaction", name: "repeatable-read-hit-newer-than-snapshot", steps: 10,
		setup: rsRows,
		body: func(x *rsRun) {
			id := 0
			for _, st := range rsSnapshotStarts("serializable", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "START TRANSACTION READ ONLY") {
				for _, writer := range []string{"write-through-A", "write-directly"} {
					id++
					q := rsRow(id)
					x.step(st.name+"/"+writer, func(x *rsRun) {
						x.warmAll(q)
						r := x.rootVia(x.B())
						r.execXA(st.start...)
						upd := fmt.Sprintf("UPDATE t SET v = v + 100 WHERE id = %d", id)
						if writer == "write-directly" {
							x.exec(upd)
						} else {
							x.rootVia(x.A()).write(upd)
						}
						// B knows of a write through A from its follower
						// (or A's word, with peers): within its lag.
						x.sync()
						x.warmAll(q) // the new row, cached by every sidecar
						r.same(q)    // the snapshot, from before the write
						r.execXA(st.end...)
						r.same(q)
					})
				}
			}
		},
	},
	{
		// A snapshot holds what was committed before it, bumped or not
		// (a write whose OK is on its way; here, one the held followers
		// have not applied): an entry older than the snapshot is not
		// served to the transaction.
		class: "transaction", name: "repeatable-read-hit-older-than-snapshot", steps: 5,
		setup: rsRows,
		body: func(x *rsRun) {
			for i, st := range rsSnapshotStarts("serializable", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "START TRANSACTION READ ONLY") {
				id := i + 1
				q := rsRow(id)
				x.step(st.name, func(x *rsRun) {
					x.warmAll(q)
					x.exec(fmt.Sprintf("UPDATE t SET v = v + 100 WHERE id = %d", id))
					r := x.rootVia(x.B())
					r.execXA(st.start...)
					r.same(q) // the snapshot, which holds the write
					r.execXA(st.end...)
					x.sync()
					x.fresh(q)
				})
			}
		},
	},
	{
		class: "transaction", name: "read-uncommitted-neither-fills-nor-hits", steps: 25,
		setup: append([]string{
			"CREATE PROCEDURE rs_next_tx_ru() SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
			"CREATE TABLE mi (id INT PRIMARY KEY) ENGINE=MyISAM", "INSERT INTO mi VALUES (1)",
			// Stored functions and triggers may not run SET TRANSACTION,
			// but may run its other spelling.
			"CREATE FUNCTION rs_next_ru() RETURNS INT DETERMINISTIC BEGIN SET @@tx_isolation = 'READ-UNCOMMITTED'; RETURN 1; END",
			"CREATE VIEW rs_next_ru_v AS SELECT rs_next_ru() AS one",
			"CREATE TABLE trg (id INT PRIMARY KEY)",
			"CREATE TRIGGER rs_next_ru_trg BEFORE INSERT ON trg FOR EACH ROW SET @@tx_isolation = 'READ-UNCOMMITTED'",
		}, append(rsRows, "INSERT INTO t SELECT seq, 0 FROM seq_17_to_25")...),
		body: func(x *rsRun) {
			for i, way := range []struct {
				name  string
				stmts []string
			}{
				{"session", []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"}},
				{"next-transaction-is-the-next-statement", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"}},
				{"tx_isolation", []string{"SET tx_isolation = 'READ-UNCOMMITTED'"}},
				// MariaDB's trackers do not report an unscoped SET @@name.
				{"unscoped-tx_isolation", []string{"SET @@tx_isolation = 'READ-UNCOMMITTED'"}},
				{"unscoped-tx_isolation-from-a-variable", []string{"SET @rs_level = 'READ-UNCOMMITTED'", "SET @@tx_isolation = @rs_level"}},
				{"unscoped-tx_isolation-then-begin", []string{"SET @@tx_isolation = 'READ-UNCOMMITTED'", "BEGIN"}},
				{"execute-immediate", []string{"EXECUTE IMMEDIATE 'SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED'"}},
				{"session-then-begin", []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "BEGIN"}},
				{"next-transaction-read-only", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "START TRANSACTION READ ONLY"}},
				// Statements that open no table leave the level for the
				// next transaction: a driver's ping, a look at a variable.
				{"next-transaction-after-a-ping", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "DO 1", "SELECT @@tx_isolation", "SHOW VARIABLES LIKE 'tx_isolation'"}},
				{"next-transaction-in-execute-immediate", []string{"EXECUTE IMMEDIATE 'SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED'"}},
				{"next-transaction-in-a-procedure", []string{"CALL rs_next_tx_ru()"}},
				// Nor do statements that fail, or use no transactional
				// table, or show metadata.
				{"next-transaction-after-a-failed-read", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "SELECT * FROM rs_no_such_table"}},
				{"next-transaction-after-a-myisam-read", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "SELECT * FROM mi", "SELECT * FROM mi"}},
				{"next-transaction-after-show-create", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "SHOW CREATE TABLE t", "SHOW INDEX FROM t"}},
				{"next-transaction-after-a-sequence-read", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "SELECT * FROM seq_1_to_3"}},
				// A chained transaction keeps the ended one's level.
				{"chained-transaction", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "BEGIN", "SELECT 1", "COMMIT AND CHAIN"}},
				{"completion-type-chain", []string{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "SET completion_type = 'CHAIN'", "BEGIN", "ROLLBACK"}},
				// Stored code that sets it, however the session runs it:
				// the statement that runs it is a transaction of its own,
				// and the level is left for the next.
				{"stored-function-by-do", []string{"DO rs_next_ru()"}},
				{"stored-function-then-begin", []string{"DO rs_next_ru()", "BEGIN"}},
				{"stored-function-in-a-select", []string{"SELECT rs_next_ru()"}},
				{"stored-function-in-a-read-of-a-table", []string{"SELECT rs_next_ru() FROM t WHERE id = 1"}},
				{"stored-function-in-a-view", []string{"SELECT * FROM rs_next_ru_v"}},
				{"stored-function-in-a-write", []string{"REPLACE INTO trg VALUES (rs_next_ru() + 100)"}},
				{"trigger", []string{"REPLACE INTO trg VALUES (1)"}},
			} {
				id := i + 1
				q := rsRow(id)
				x.step(way.name, func(x *rsRun) {
					// The committed row is cached first: the session must
					// not be served it either.
					x.rootVia(x.B()).warm(q)
					w := conn(x.t, x.root)
					execOn(x.t, w, "BEGIN")
					execOn(x.t, w, fmt.Sprintf("UPDATE t SET v = 99 WHERE id = %d", id))
					r := x.rootVia(x.A())
					r.set(way.stmts[0])
					r.exec(way.stmts[1:]...)
					r.same(q)
					r.same(q)
					execOn(x.t, w, "ROLLBACK")
					x.fresh(q)
					r.exec("COMMIT")
					r.same(q)
				})
			}
		},
	},
	{
		class: "transaction", name: "every-end-of-transaction-bumps-again", steps: 11,
		setup: rsRows,
		body: func(x *rsRun) {
			for i, e := range []struct {
				name       string
				begin, end []string
			}{
				{"commit-and-chain", []string{"BEGIN"}, []string{"COMMIT AND CHAIN", "ROLLBACK"}},
				{"begin", []string{"BEGIN"}, []string{"BEGIN", "ROLLBACK"}},
				{"start-transaction", []string{"BEGIN"}, []string{"START TRANSACTION READ ONLY", "COMMIT"}},
				{"set-autocommit-1", []string{"SET autocommit = 0"}, []string{"SET autocommit = 1"}},
				{"lock-tables", []string{"BEGIN"}, []string{"LOCK TABLES u READ", "UNLOCK TABLES"}},
				{"ddl", []string{"BEGIN"}, []string{"CREATE TABLE ddl (i INT)"}},
				{"execute-immediate-commit", []string{"BEGIN"}, []string{"EXECUTE IMMEDIATE 'COMMIT'"}},
				{"prepare-execute-commit", []string{"BEGIN"}, []string{"PREPARE c FROM 'COMMIT'", "EXECUTE c"}},
				{"execute-immediate-commit-and-chain", []string{"BEGIN"}, []string{"EXECUTE IMMEDIATE 'COMMIT AND CHAIN'", "ROLLBACK"}},
				{"commit-in-multi-statement", []string{"BEGIN"}, []string{"COMMIT; DO 1"}},
				{"execute-immediate-autocommit-1", []string{"SET autocommit = 0"}, []string{"EXECUTE IMMEDIATE 'SET autocommit = 1'"}},
			} {
				id := i + 1
				q := rsRow(id)
				x.step(e.name, func(x *rsRun) {
					w := x.rootVia(x.A())
					w.write(e.begin...)
					w.write(fmt.Sprintf("UPDATE t SET v = v + 10 WHERE id = %d", id))
					// A reader fills from the committed row under the
					// generation the write bumped.
					x.rootVia(x.B()).warm(q)
					w.write(e.end...)
					x.fresh(q)
				})
			}
		},
	},
	{
		// ROLLBACK TO a savepoint, in every spelling, leaves the
		// transaction open with what it wrote before the savepoint: the
		// session reads its own write, and the COMMIT bumps it again.
		class: "transaction", name: "rollback-to-savepoint-keeps-the-transaction", steps: 3,
		setup: rsRows,
		body: func(x *rsRun) {
			for i, rb := range []string{"ROLLBACK TO s", "ROLLBACK WORK TO s", "ROLLBACK WORK TO SAVEPOINT s"} {
				id := i + 1
				q := rsRow(id)
				x.step(rb, func(x *rsRun) {
					w := x.rootVia(x.A())
					w.write("BEGIN", fmt.Sprintf("UPDATE t SET v = v + 10 WHERE id = %d", id), "SAVEPOINT s", rb)
					// A reader fills from the committed row under the
					// generation the write bumped.
					x.rootVia(x.B()).warm(q)
					own, _ := w.read(q)
					w.write("COMMIT")
					x.fresh(q)
					if _, want := x.rootVia(x.A()).read(q); own != want {
						x.t.Errorf("%s: the writer read %s after %s, want its own write, %s", q, own, rb, want)
					}
				})
			}
		},
	},
	{
		// A text of several statements that begins a transaction and
		// writes in it leaves the transaction open: what it wrote is
		// bumped again when the transaction ends, however it ends.
		class: "transaction", name: "multi-statement-begins-and-writes", steps: 6,
		setup: rsRows,
		body: func(x *rsRun) {
			for i, e := range []struct {
				name, text string // text writes row %d
				begin, end []string
			}{
				{"begin-update", "BEGIN; UPDATE t SET v = v + 10 WHERE id = %d", nil, []string{"COMMIT"}},
				{"start-transaction-update-select", "START TRANSACTION; UPDATE t SET v = v + 10 WHERE id = %d; SELECT 1", nil, []string{"COMMIT"}},
				{"commit-begin-update", "COMMIT; BEGIN; UPDATE t SET v = v + 10 WHERE id = %d", []string{"BEGIN"}, []string{"COMMIT"}},
				{"ended-by-begin", "BEGIN; UPDATE t SET v = v + 10 WHERE id = %d", nil, []string{"BEGIN", "ROLLBACK"}},
				{"ended-by-ddl", "BEGIN; UPDATE t SET v = v + 10 WHERE id = %d", nil, []string{"CREATE TABLE ms_ddl (i INT)"}},
				{"commit-and-chain-update", "COMMIT AND CHAIN; UPDATE t SET v = v + 10 WHERE id = %d", []string{"BEGIN"}, []string{"DO 1; COMMIT"}},
			} {
				id := i + 1
				q := rsRow(id)
				x.step(e.name, func(x *rsRun) {
					w := x.rootVia(x.A())
					w.write(e.begin...)
					w.write(fmt.Sprintf(e.text, id))
					// A reader fills from the committed row under the
					// generation the write bumped.
					x.rootVia(x.B()).warm(q)
					w.write(e.end...)
					x.fresh(q)
				})
			}
		},
	},
	{
		class: "transaction", name: "xa", steps: 4,
		setup: rsRows,
		body: func(x *rsRun) {
			for i, readAt := range []int{1, 2, 3} {
				id := i + 1
				q := rsRow(id)
				w := x.rootVia(x.A())
				xid := "'rsxa-" + w.xidTag() + "'"
				steps := []string{"XA START " + xid, fmt.Sprintf("UPDATE t SET v = v + 10 WHERE id = %d", id), "XA END " + xid, "XA PREPARE " + xid}
				for j, s := range steps {
					w.write(s)
					if j == readAt {
						x.rootVia(x.B()).warm(q)
					}
				}
				w.write("XA COMMIT " + xid)
				x.fresh(q)
			}
			// Prepared by a session that went away, committed by another
			// through the other sidecar.
			q := rsRow(4)
			w := x.rootVia(x.A())
			xid := "'rsxa-" + w.xidTag() + "'"
			w.write("XA START "+xid, "UPDATE t SET v = v + 10 WHERE id = 4", "XA END "+xid, "XA PREPARE "+xid)
			id := connID(x.t, w.via)
			_ = w.via.Raw(func(any) error { return errBadConn })
			w.via.Close()
			waitFor(x.t, 10*time.Second, "the preparing session to end", func() bool { return !processExists(x.t, x.env.m, id) })
			x.rootVia(x.B()).warm(q)
			x.rootVia(x.B()).write("XA COMMIT " + xid)
			x.fresh(q)
		},
	},
	{
		class: "transaction", name: "temporary-table-in-transaction",
		setup: []string{"CREATE TABLE t (v INT)", "INSERT INTO t VALUES (1)"},
		body: func(x *rsRun) {
			q := "SELECT v FROM t"
			s := x.rootVia(x.A())
			s.exec("BEGIN", "CREATE TEMPORARY TABLE t (v INT)")
			x.rootVia(x.B()).warm(q)
			s.same(q)
			s.same(q)
			s.exec("ROLLBACK") // the temporary table stays
			x.rootVia(x.A()).warm(q)
			s.same(q)
			s.exec("START TRANSACTION WITH CONSISTENT SNAPSHOT", "EXECUTE IMMEDIATE 'DROP TEMPORARY TABLE t'",
				"EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE t (v INT)'", "INSERT INTO t VALUES (7)")
			s.same(q)
			s.exec("COMMIT")
			x.rootVia(x.B()).warm(q)
			s.same(q)
			x.fresh(q)
		},
	},

	{
		// A table renamed into place under LOCK TABLES, with DDL on it
		// (a dump's import): its foreign key cannot be learned while the
		// lock is held, and must be before a write to its parent is
		// trusted to the parse alone.
		class: "write", name: "child-locked-while-learned",
		setup: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)", "INSERT INTO p VALUES (1), (2)",
			"CREATE TABLE c (id INT PRIMARY KEY, pid INT, v INT)", "INSERT INTO c VALUES (1, 1, 1)",
			"CREATE TABLE cn (id INT PRIMARY KEY, pid INT, v INT, FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE)",
			"INSERT INTO cn VALUES (1, 1, 1)",
		},
		body: func(x *rsRun) {
			// A write to p that the followers see: what writes to p
			// write with it is known, and the next one does not wait.
			x.rootVia(x.A()).write("DELETE FROM p WHERE id = 99")
			x.sync()
			ctx := context.Background()
			conn, err := x.root.Conn(ctx)
			if err != nil {
				x.t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range []string{"RENAME TABLE c TO co, cn TO c", "LOCK TABLES c WRITE", "ALTER TABLE c DISABLE KEYS"} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					x.t.Fatalf("%s: %v", q, err)
				}
			}
			x.sync() // the followers read the DDL while the lock is held
			if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
				x.t.Fatal(err)
			}
			q := "SELECT id, pid, v FROM c WHERE pid = 1"
			x.sync()
			r := x.rootVia(x.B())
			r.warm(q) // once the table could be learned
			x.rootVia(x.A()).write("DELETE FROM p WHERE id = 1")
			r.same(q)
			x.rootVia(x.A()).same(q)
		},
	},
	{
		// Writes whose targets the parse must find itself, before any
		// follower hears of them: through a view with a check option or
		// one whose reads are never cached, to a sequence by NEXTVAL or
		// SETVAL, inside BEGIN NOT ATOMIC.
		class: "write", name: "targets-the-parse-must-find", steps: 9,
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0), (2, 0)",
			"CREATE VIEW vc AS SELECT id, v FROM t WHERE id < 10 WITH CHECK OPTION",
			"CREATE VIEW vl AS SELECT id, v FROM vc WHERE id < 5 WITH LOCAL CHECK OPTION",
			"CREATE VIEW vn AS SELECT id, v FROM t WHERE id < UNIX_TIMESTAMP()",
			"CREATE SEQUENCE s", "CREATE TABLE ts (id INT PRIMARY KEY, n BIGINT)", "INSERT INTO ts VALUES (1, 0)",
		},
		body: func(x *rsRun) {
			row := []string{"SELECT v FROM t WHERE id = 1", "SELECT SUM(v) FROM t"}
			seq := []string{"SELECT next_not_cached_value FROM s"}
			for _, c := range []struct {
				write string
				reads []string
			}{
				{"UPDATE vc SET v = v + 1 WHERE id = 1", row},
				{"UPDATE vl SET v = v + 1 WHERE id = 1", row},
				{"UPDATE vn SET v = v + 1 WHERE id = 1", row},
				{"DELETE FROM vc WHERE id = 2", row},
				{"SELECT SETVAL(s, 5000)", seq},
				{"DO NEXTVAL(s)", seq},
				{"SET @x = NEXT VALUE FOR s", seq},
				{"UPDATE ts SET n = NEXTVAL(s) WHERE id = 1", seq},
				{"BEGIN NOT ATOMIC UPDATE t SET v = v + 1 WHERE id = 1; END", row},
			} {
				x.step(c.write, func(x *rsRun) { x.rsWriteHeld(c.write, false, c.reads...) })
			}
		},
	},
	{
		// More writes the parse must read right: a column name that Go
		// folds together with another one and the server does not, a
		// USE inside a multi-statement text, a trigger's error after a
		// MyISAM row was written.
		class: "write", name: "targets-the-parse-must-find-2", steps: 5,
		setup: []string{
			"CREATE TABLE kg (`ა` INT PRIMARY KEY, `Ა` INT, v INT)", "INSERT INTO kg VALUES (1, 5, 0), (5, 1, 0)",
			"CREATE TABLE m (id INT PRIMARY KEY, v INT) ENGINE=MyISAM", "INSERT INTO m VALUES (1, 1)",
			"CREATE TRIGGER m_bi BEFORE INSERT ON m FOR EACH ROW BEGIN IF NEW.id = 3 THEN SET @x = (SELECT nocol FROM m LIMIT 1); END IF; END",
		},
		body: func(x *rsRun) {
			kg := []string{"SELECT v FROM kg WHERE `ა` = 1", "SELECT v FROM kg WHERE `Ა` = 5", "SELECT v FROM kg WHERE `Ა` = 1"}
			x.step("georgian-by-capital", func(x *rsRun) { x.rsWriteHeld("UPDATE kg SET v = v + 1 WHERE `Ა` = 5", false, kg...) })
			x.step("georgian-by-key", func(x *rsRun) { x.rsWriteHeld("UPDATE kg SET v = v + 1 WHERE `ა` = 1", false, kg...) })
			db2 := x.newDB()
			x.exec("CREATE TABLE `"+db2+"`.t7 (id INT PRIMARY KEY, v INT)", "INSERT INTO `"+db2+"`.t7 VALUES (1, 0)")
			x.step("use-in-a-multi-statement", func(x *rsRun) {
				x.rsWriteHeld("USE `"+db2+"`; UPDATE t7 SET v = v + 5 WHERE id = 1", false, "SELECT v FROM `"+db2+"`.t7 WHERE id = 1")
			})
			x.step("trigger-error-after-a-myisam-row", func(x *rsRun) {
				x.rsWriteHeld("INSERT INTO m VALUES (2, 2), (3, 3)", true, "SELECT COUNT(*) FROM m", "SELECT v FROM m WHERE id = 2")
			})
			// And what the followers make of the writes to kg.
			x.sync()
			x.release()
			x.fresh(kg...)
		},
	},
	{
		// What triggers write, once the followers have seen one statement
		// on each table: an INSERT whose trigger writes, an UPDATE whose
		// trigger wrote nothing then, a write through a view, a trigger
		// that writes a MyISAM table inside a transaction.
		class: "write", name: "trigger-writes-learned", steps: 5,
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
			"CREATE TABLE audit (id INT PRIMARY KEY, n INT)", "INSERT INTO audit VALUES (1, 0)",
			"CREATE TABLE big (id INT PRIMARY KEY, v INT)", "INSERT INTO big VALUES (1, 0)",
			"CREATE TABLE am (id INT PRIMARY KEY, n INT) ENGINE=MyISAM", "INSERT INTO am VALUES (1, 0)",
			"CREATE TABLE tx (id INT PRIMARY KEY)",
			"CREATE VIEW tv AS SELECT id, v FROM t",
			"CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW UPDATE audit SET n = n + 1 WHERE id = 1",
			"CREATE TRIGGER t_au AFTER UPDATE ON t FOR EACH ROW BEGIN IF NEW.v > 100 THEN UPDATE big SET v = NEW.v WHERE id = 1; END IF; END",
			"CREATE TRIGGER tx_ai AFTER INSERT ON tx FOR EACH ROW UPDATE am SET n = n + 1 WHERE id = 1",
			"CREATE TABLE tx2 (id INT PRIMARY KEY)",
			"CREATE TRIGGER tx2_ai AFTER INSERT ON tx2 FOR EACH ROW UPDATE am SET n = n + 10 WHERE id = 1",
		},
		body: func(x *rsRun) {
			x.exec("INSERT INTO t VALUES (0, 0)", "UPDATE t SET v = 1 WHERE id = 0", "INSERT INTO tx VALUES (0)")
			x.sync()
			audit, big, am := "SELECT n FROM audit WHERE id = 1", "SELECT v FROM big WHERE id = 1", "SELECT n FROM am WHERE id = 1"
			x.step("insert", func(x *rsRun) { x.rsWriteHeld("INSERT INTO t VALUES (1, 1)", false, audit, "SELECT SUM(n) FROM audit") })
			x.step("update", func(x *rsRun) { x.rsWriteHeld("UPDATE t SET v = 101 WHERE id = 0", false, big) })
			x.step("through-a-view", func(x *rsRun) { x.rsWriteHeld("INSERT INTO tv VALUES (2, 1)", false, audit) })
			x.step("myisam-in-a-transaction", func(x *rsRun) {
				x.sync()
				r := x.rootVia(x.B())
				r.fill(am)
				w := x.rootVia(x.A())
				w.write("START TRANSACTION", "INSERT INTO tx VALUES (1)")
				// MyISAM keeps no transaction: its row is seen at once.
				r.same(am)
				w.write("COMMIT")
				r.same(am)
				x.release()
			})
			// A first write to tx2, whose trigger no follower has seen,
			// rolled back: what the trigger wrote to MyISAM stays.
			x.step("myisam-first-write-rolled-back", func(x *rsRun) {
				x.sync()
				r := x.rootVia(x.B())
				r.fill(am)
				x.rootVia(x.A()).write("START TRANSACTION", "INSERT INTO tx2 VALUES (1)", "ROLLBACK")
				r.same(am)
				x.release()
			})
		},
	},
	{
		// A follower that is not current learns nothing: a write to a
		// table whose triggers' tables it has not seen (whether it has
		// triggers is unknown: the follower's account lacks TRIGGER)
		// bumps everything, since a trigger may write any database.
		class: "write", name: "unseen-table-follower-behind", protos: []string{"text"},
		tune: func(c *mysqlproxy.Config) { c.MaxStaleness = 200 * time.Millisecond },
		setup: []string{
			"CREATE TABLE u (id INT PRIMARY KEY, v INT)", "INSERT INTO u VALUES (1, 1)",
			"CREATE TABLE z (id INT PRIMARY KEY)",
		},
		body: func(x *rsRun) {
			const q = "SELECT v FROM u WHERE id = 1"
			r := x.rootVia(x.A())
			r.fill(q)
			// Held, the followers do not hear of this write, and fall
			// behind the server past --max-staleness.
			x.exec("INSERT INTO u VALUES (2, 2)")
			time.Sleep(600 * time.Millisecond)
			x.rootVia(x.A()).write("INSERT INTO z VALUES (1)")
			before := r.executed()
			r.same(q)
			if r.executed() == before {
				x.t.Errorf("%s was served from the cache after a first write, with the follower behind, to a table whose triggers are unknown\n%s", q, query(r.via, "text", "SHOW MYCACHED QUERIES"))
			}
		},
	},
	{
		// A bounded sidecar whose follower is further behind than
		// --max-staleness serves nothing from the cache: the other
		// followers, whose bumps a strict check would read, read the
		// same binlog, and are as late.
		class: "write", name: "bounded-follower-behind", protos: []string{"text"},
		tune: func(c *mysqlproxy.Config) {
			c.Consistency, c.MaxStaleness = mysqlproxy.ConsistencyBounded, 200*time.Millisecond
		},
		setup: []string{"CREATE TABLE u (id INT PRIMARY KEY, v INT)", "INSERT INTO u VALUES (1, 1)"},
		body: func(x *rsRun) {
			const q = "SELECT v FROM u WHERE id = 1"
			r := x.rootVia(x.B())
			r.fill(q)
			// Held, the followers do not hear of this write.
			x.exec("UPDATE u SET v = 2 WHERE id = 1")
			time.Sleep(600 * time.Millisecond)
			r.same(q)
			r.same(q)
		},
	},
	{
		// sql_mode=ORACLE's s.nextval and s.currval read like a column.
		class: "write", name: "oracle-sequence-operations",
		setup: []string{"CREATE SEQUENCE s"},
		body: func(x *rsRun) {
			// Through the sidecars alone: each side's NEXTVAL advances
			// the one sequence.
			seen := map[string]bool{}
			for i := range 6 {
				c := x.rootVia(x.sidecarN(i % 2)).via
				run(c, "text", "SET sql_mode = ORACLE")
				// The rows, after the column line.
				val := func(q string) string {
					_, rows, _ := strings.Cut(query(c, x.proto, q), "\n")
					return rows
				}
				next := val("SELECT s.nextval FROM dual")
				if seen[next] || next == "" {
					x.t.Fatalf("s.nextval gave %q again", next)
				}
				seen[next] = true
				if cur := val("SELECT s.currval FROM dual"); cur != next {
					x.t.Errorf("s.currval after s.nextval gave %q: got %q", next, cur)
				}
			}
		},
	},
	// Row-level dependencies: a literal keys a row only when MariaDB
	// surely compares it as that row; keys change with DDL anywhere.
	{
		class: "rowlevel", name: "hex-and-bit-literal-keys", steps: 6,
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (5, 0), (53, 0)"},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM t WHERE id = 53", "SELECT v FROM t WHERE id = 5", "SELECT v FROM t WHERE id = 0x35", "SELECT v FROM t WHERE id IN (5, b'110101')"}
			for _, w := range []string{
				"UPDATE t SET v = v + 1 WHERE id = 0x35",
				"UPDATE t SET v = v + 1 WHERE id = b'110101'",
				"UPDATE t SET v = v + 1 WHERE id = X'35'",
				"UPDATE t SET v = v + 1 WHERE id = _latin1 0x35",
				"DELETE FROM t WHERE id = 0x35",
				"INSERT INTO t (id, v) VALUES (0x35, 9)",
			} {
				x.rsWriteAndRead(w, reads...)
			}
		},
	},
	{
		class: "rowlevel", name: "enum-date-year-bit-keys", steps: 8,
		setup: []string{
			"CREATE TABLE e (k ENUM('a', 'b', 'c') PRIMARY KEY, v INT)", "INSERT INTO e VALUES ('a', 0), ('b', 0), ('c', 0)",
			"CREATE TABLE d (k DATE PRIMARY KEY, v INT)", "INSERT INTO d VALUES ('2024-01-01', 0), ('2000-01-01', 0)",
			"CREATE TABLE y (k YEAR PRIMARY KEY, v INT)", "INSERT INTO y VALUES (2024, 0), (1924, 0)",
			"CREATE TABLE b (k BIT(8) PRIMARY KEY, v INT)", "INSERT INTO b VALUES (b'110101', 0), (5, 0)",
		},
		body: func(x *rsRun) {
			for _, c := range []struct {
				writes []string
				reads  []string
			}{
				{[]string{"UPDATE e SET v = v + 1 WHERE k = 2", "UPDATE e SET v = v + 1 WHERE k = 'b'"},
					[]string{"SELECT v FROM e WHERE k = 2", "SELECT v FROM e WHERE k = 'b'", "SELECT v FROM e WHERE k = '2'"}},
				{[]string{"UPDATE d SET v = v + 1 WHERE k = 240101", "UPDATE d SET v = v + 1 WHERE k = '2024-01-01'"},
					[]string{"SELECT v FROM d WHERE k = 240101", "SELECT v FROM d WHERE k = '2024-01-01'", "SELECT v FROM d WHERE k = 20240101"}},
				{[]string{"UPDATE y SET v = v + 1 WHERE k = 24", "UPDATE y SET v = v + 1 WHERE k = 2024"},
					[]string{"SELECT v FROM y WHERE k = 24", "SELECT v FROM y WHERE k = 2024", "SELECT v FROM y WHERE k = '24'"}},
				{[]string{"UPDATE b SET v = v + 1 WHERE k = 53", "UPDATE b SET v = v + 1 WHERE k = b'101'"},
					[]string{"SELECT v FROM b WHERE k = 53", "SELECT v FROM b WHERE k = b'110101'", "SELECT v FROM b WHERE k = 5"}},
			} {
				for _, w := range c.writes {
					x.rsWriteAndRead(w, c.reads...)
				}
			}
		},
	},
	{
		class: "rowlevel", name: "auto_increment_increment",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "INSERT INTO t VALUES (1, 0), (2, 0)"},
		body: func(x *rsRun) {
			ids := func(from, to int) []string {
				var qs []string
				for i := from; i <= to; i++ {
					qs = append(qs, rsRow(i))
				}
				return qs
			}
			w := x.rootVia(x.A())
			w.set("SET auto_increment_increment = ?", 3)
			r := x.rootVia(x.B())
			for _, q := range ids(3, 8) {
				r.warm(q)
			}
			w.write("INSERT INTO t (v) VALUES (10), (11)") // ids 4 and 7
			for _, q := range ids(3, 8) {
				r.same(q)
			}
			w.set("SET auto_increment_offset = ?", 2)
			for _, q := range ids(8, 14) {
				r.warm(q)
			}
			w.write("INSERT INTO t (v) VALUES (12), (13)") // ids 8 and 11
			for _, q := range ids(8, 14) {
				r.same(q)
			}
			// Set unscoped, which no tracker reports.
			u := x.rootVia(x.A())
			u.exec("SET @@auto_increment_increment = 5")
			for _, q := range ids(12, 22) {
				r.warm(q)
			}
			u.write("INSERT INTO t (v) VALUES (14), (15)") // ids 16 and 21
			for _, q := range ids(12, 22) {
				r.same(q)
			}
			x.fresh(ids(3, 22)...)
		},
	},
	{
		class: "rowlevel", name: "out-of-range-key-clipped",
		setup: []string{
			"CREATE TABLE t (id TINYINT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
			"CREATE TABLE u (id TINYINT UNSIGNED PRIMARY KEY, v INT)", "INSERT INTO u VALUES (1, 1)",
		},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM t WHERE id = 127", "SELECT v FROM t WHERE id = -128", "SELECT COUNT(*) FROM t",
				"SELECT v FROM u WHERE id = 255", "SELECT v FROM u WHERE id = 0"}
			r := x.rootVia(x.B())
			for _, q := range reads {
				r.warm(q)
			}
			w := x.rootVia(x.A())
			w.exec("SET sql_mode = ''")
			w.write("INSERT INTO t (id, v) VALUES (300, 2)", "INSERT INTO t (id, v) VALUES (-200, 3)", "INSERT INTO u (id, v) VALUES (300, 4)", "INSERT INTO u (id, v) VALUES (-5, 5)")
			for _, q := range reads {
				r.same(q)
			}
			x.fresh(reads...)
		},
	},
	{
		class: "rowlevel", name: "alias-named-like-another-table", steps: 3,
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
			"CREATE TABLE t2 (id INT PRIMARY KEY, v INT)", "INSERT INTO t2 VALUES (1, 100)",
		},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t2 WHERE id = 1", "SELECT t.v FROM t2 AS t WHERE t.id = 1", "SELECT t2.v FROM t AS t2 WHERE t2.id = 1"}
			for _, w := range []string{
				"UPDATE t2 AS t SET t.v = t.v + 1 WHERE t.id = 1",
				"UPDATE t AS t2 SET t2.v = t2.v + 1 WHERE t2.id = 1",
				"DELETE t FROM t2 AS t WHERE t.id = 1",
			} {
				x.rsWriteAndRead(w, reads...)
			}
		},
	},
	{
		class: "rowlevel", name: "unsigned-keys-written-directly",
		setup: []string{
			"CREATE TABLE u (id BIGINT UNSIGNED PRIMARY KEY, v INT)", "INSERT INTO u VALUES (18446744073709551615, 0), (1, 0)",
			"CREATE TABLE s (id TINYINT UNSIGNED PRIMARY KEY, v INT)", "INSERT INTO s VALUES (200, 0), (1, 0)",
		},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM u WHERE id = 18446744073709551615", "SELECT v FROM s WHERE id = 200"}
			x.warmAll(reads...)
			x.exec("UPDATE u SET v = v + 1 WHERE id = 18446744073709551615", "UPDATE s SET v = v + 1 WHERE id = 200")
			x.sync()
			x.fresh(reads...)
		},
	},
	{
		class: "rowlevel", name: "primary-key-swapped-by-rename", steps: 4,
		setup: []string{
			"CREATE TABLE t (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, v INT)", "INSERT INTO t VALUES (1, 7, 0), (2, 8, 0)",
			"CREATE TABLE t_new (id INT NOT NULL, k INT NOT NULL PRIMARY KEY, v INT)", "INSERT INTO t_new VALUES (1, 7, 0), (2, 8, 0)",
		},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE k = 7", "SELECT v FROM t WHERE id = 2", "SELECT v FROM t WHERE k = 8"}
			// Every sidecar learns t's key (id).
			x.warmAll(reads...)
			// Swapped through A: k is the key now.
			x.rootVia(x.A()).write("RENAME TABLE t TO t_old, t_new TO t")
			x.rsPKChanged(reads, "UPDATE t SET v = v + 1 WHERE k = 7", "UPDATE t SET v = v + 1 WHERE id = 2")
			// Swapped back directly: id is the key again.
			x.exec("RENAME TABLE t TO t_new, t_old TO t")
			x.rsPKChanged(reads, "UPDATE t SET v = v + 1 WHERE k = 8", "UPDATE t SET v = v + 1 WHERE id = 1")
		},
	},
	{
		class: "rowlevel", name: "primary-key-changed-by-alter", steps: 6,
		setup: []string{"CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, v INT)", "INSERT INTO t VALUES (1, 7, 0), (2, 8, 0)"},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE k = 7", "SELECT v FROM t WHERE id = 2", "SELECT v FROM t WHERE k = 8"}
			x.warmAll(reads...)
			x.rootVia(x.A()).write("ALTER TABLE t ADD PRIMARY KEY (id)")
			x.rsPKChanged(reads, "UPDATE t SET v = v + 1 WHERE id = 1", "UPDATE t SET v = v + 1 WHERE k = 8")
			x.rootVia(x.B()).write("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (k)")
			x.rsPKChanged(reads, "UPDATE t SET v = v + 1 WHERE id = 2", "UPDATE t SET v = v + 1 WHERE k = 7")
			x.exec("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id)")
			x.rsPKChanged(reads, "UPDATE t SET v = v + 1 WHERE k = 8", "UPDATE t SET v = v + 1 WHERE id = 1")
		},
	},
	{
		class: "rowlevel", name: "columns-reordered-directly",
		setup: []string{"CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 10), (2, 20)"},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE id = 2"}
			x.warmAll(reads...)
			x.exec("ALTER TABLE t MODIFY v INT FIRST")
			x.sync()
			x.warmAll(reads...)
			// The row image is (v, id) = (1, 2) now.
			x.exec("UPDATE t SET v = 1 WHERE id = 2")
			x.sync()
			x.fresh(reads...)
		},
	},
	{
		class: "rowlevel", name: "replace-and-upsert-by-unique-key", steps: 5,
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, u VARCHAR(5) UNIQUE, v INT)", "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)"},
		body: func(x *rsRun) {
			reads := []string{rsRow(1), rsRow(2), rsRow(3), rsRow(4), rsRow(5), rsRow(6)}
			for _, w := range []string{
				"REPLACE INTO t VALUES (3, 'a', 3)",
				"INSERT INTO t VALUES (4, 'b', 4) ON DUPLICATE KEY UPDATE v = v + 40",
				"INSERT IGNORE INTO t VALUES (5, 'b', 5)",
				"UPDATE t SET u = 'z' WHERE id = 2",
				"LOAD DATA LOCAL INFILE 'Reader::" + rsLoadReader + "' REPLACE INTO TABLE t (id, u, v)",
			} {
				x.rsWriteAndRead(w, reads...)
			}
		},
	},
	{
		class: "rowlevel", name: "returning",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2)"},
		body: func(x *rsRun) {
			reads := []string{rsRow(2), rsRow(3), rsRow(4), "SELECT COUNT(*) FROM t"}
			r := x.rootVia(x.B())
			for _, q := range reads {
				r.warm(q)
			}
			w := x.rootVia(x.A())
			for _, s := range []string{"DELETE FROM t WHERE id = 2 RETURNING v", "INSERT INTO t (v) VALUES (3) RETURNING id", "INSERT INTO t (v) VALUES (4) RETURNING id"} {
				if out := query(w.via, x.proto, s); strings.HasPrefix(out, "error") {
					x.t.Fatalf("%s: %s", s, out)
				}
			}
			for _, q := range reads {
				r.same(q)
			}
			x.fresh(reads...)
		},
	},

	// Text that the analysis might read otherwise than the server: the
	// session's sql_mode and character set, comments that are code, and
	// the database a name is bound in.
	{
		class: "text", name: "no_backslash_escapes",
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			nbe := "SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"
			x.rsHiddenTable(nbe, `'x\'`)
		},
	},
	{
		class: "text", name: "ansi_quotes", steps: 3,
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			for _, mode := range []string{"SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')", "SET sql_mode = 'ANSI'", "SET sql_mode = 'ORACLE'"} {
				x.step(mode, func(x *rsRun) {
					q := `SELECT "v" FROM t1 WHERE id = 1`
					plain := "SELECT v FROM t1 WHERE id = 1"
					x.rootVia(x.A()).warm(q)
					x.rootVia(x.B()).warm(plain)
					a := x.rootVia(x.B())
					a.exec(mode)
					a.warm(q)
					w := x.rootVia(x.A())
					w.exec(mode)
					w.write(`UPDATE "t1" SET "v" = "v" + 1 WHERE "id" = 1`)
					a.same(q)
					x.fresh(plain)
				})
			}
		},
	},
	{
		class: "text", name: "multibyte-charset-trail-backslash", steps: 6,
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			for _, c := range []struct{ set, ch string }{
				{"SET NAMES gbk", "\xbf\x5c"},
				{"EXECUTE IMMEDIATE 'SET NAMES gbk'", "\xbf\x5c"},
				{"SET character_set_client = gbk", "\xbf\x5c"},
				{"SET NAMES big5", "\xa5\x5c"},
				{"SET NAMES sjis", "\x95\x5c"},
				{"SET NAMES cp932", "\x95\x5c"},
			} {
				x.step(c.set, func(x *rsRun) { x.rsHiddenTable(c.set, "'"+c.ch+"'") })
			}
		},
	},
	{
		class: "text", name: "handshake-gbk-trail-backslash",
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			x.rsHiddenTable("", "'\xbf\x5c'")
		},
	},
	{
		class: "text", name: "gbk-with-no_backslash_escapes",
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			x.rsHiddenTable("SET NAMES gbk, sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')", "'\xbf\x5c\x5c'")
		},
	},
	{
		class: "text", name: "latin1-identifiers",
		setup: []string{"CREATE TABLE `tàble` (id INT PRIMARY KEY, v INT)", "INSERT INTO `tàble` VALUES (1, 0), (2, 0)"},
		body: func(x *rsRun) {
			reads := []string{"SELECT v FROM `tàble` WHERE id = 1", "SELECT SUM(v) FROM `tàble`"}
			r := x.rootVia(x.B())
			for _, q := range reads {
				r.warm(q)
			}
			w := x.rootVia(x.A())
			w.exec("SET NAMES latin1")
			w.write("UPDATE `t\xe0ble` SET v = v + 1 WHERE id = 1")
			for _, q := range reads {
				r.same(q)
			}
			x.fresh(reads...)
			// A latin1 reader, and a utf8mb4 writer.
			l := x.rootVia(x.B())
			l.exec("SET NAMES latin1")
			lq := "SELECT v FROM `t\xe0ble` WHERE id = 2"
			l.warm(lq)
			x.rootVia(x.A()).write("UPDATE `tàble` SET v = v + 1 WHERE id = 2")
			l.same(lq)
		},
	},
	{
		class: "text", name: "executable-comments", steps: 2,
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			var reads []string
			for _, c := range []string{"/*!", "/*M!", "/*!50100", "/*!99999", "/*M!100000", "/*M!999999", "/*!100000", "/*!00000"} {
				reads = append(reads, "SELECT v FROM t1 WHERE id = 1 "+c+" UNION ALL SELECT v FROM t2 */")
			}
			reads = append(reads,
				"SELECT /*! v FROM t2 UNION ALL SELECT */ v FROM t1 WHERE id = 1",
				"SELECT v FROM t1 WHERE id = 1 /*M!100000 UNION ALL SELECT v FROM t2 /* inner */ */",
				"SELECT v FROM t1 WHERE id = 1 /*!UNION ALL*/ SELECT v FROM t2")
			x.rsWriteAndRead("UPDATE t2 SET v = v + 1 WHERE id = 1", reads...)
			x.rsWriteAndRead("UPDATE t2 SET v = v + 1 /*M! WHERE id = 1 */", reads...)
		},
	},
	{
		class: "text", name: "comment-and-operator-edges",
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			x.rsWriteAndRead("UPDATE t2 SET v = v + 1 WHERE id = 1",
				"SELECT v FROM t1 WHERE id = 2--1\nUNION ALL SELECT v FROM t2",
				"SELECT v FROM t1 WHERE id = 1 /* /* */ UNION ALL SELECT v FROM t2 /* */",
				"SELECT v FROM t1 WHERE '#' <> '' UNION ALL SELECT v FROM t2",
				"SELECT v FROM t1 WHERE \"--\" <> '' UNION ALL SELECT v FROM t2",
				"SELECT v FROM t1 WHERE 'a' 'b' = 'ab' UNION ALL SELECT v FROM t2",
				"SELECT v FROM t1 WHERE N'x' <> _latin1'y' UNION ALL SELECT v FROM t2",
				"SELECT v FROM t1 WHERE id = 1 UNION ALL SELECT v FROM t2 #'",
				"SELECT v FROM t1 WHERE s = '\\\\' OR 1 = 1 UNION ALL SELECT v FROM t2 -- '",
			)
		},
	},
	{
		class: "text", name: "cte-named-like-a-table", steps: 2,
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			reads := []string{
				"WITH t1 AS (SELECT v FROM t2) SELECT v FROM t1",
				"WITH t2 AS (SELECT v FROM t1 WHERE id = 1) SELECT v FROM t2",
				"WITH RECURSIVE t1 AS (SELECT v FROM t2 UNION ALL SELECT v + 1 FROM t1 WHERE v < 103) SELECT v FROM t1",
				"SELECT v FROM (SELECT v FROM t2) AS t1",
			}
			x.rsWriteAndRead("UPDATE t2 SET v = v + 1 WHERE id = 1", reads...)
			x.rsWriteAndRead("UPDATE t1 SET v = v + 1 WHERE id = 1", reads...)
		},
	},
	{
		class: "text", name: "system-schemas-in-any-case",
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			reads := []string{
				"SELECT COUNT(*) FROM Information_Schema.TABLES WHERE TABLE_SCHEMA = '" + x.db + "'",
				"SELECT COUNT(*) FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = '" + x.db + "'",
				"SELECT COUNT(*) FROM `information_schema`.`tables` WHERE table_schema = '" + x.db + "'",
				"SELECT COUNT(*) FROM information_schema.TABLES t1 WHERE t1.TABLE_SCHEMA = '" + x.db + "'",
			}
			s := x.rootVia(x.B())
			for _, q := range reads {
				s.same(q)
				s.same(q)
			}
			i := x.rootVia(x.B())
			i.exec("USE INFORMATION_SCHEMA")
			iq := "SELECT COUNT(*) FROM TABLES WHERE TABLE_SCHEMA = '" + x.db + "'"
			i.same(iq)
			i.same(iq)
			x.rootVia(x.A()).write("CREATE TABLE extra (i INT)")
			for _, q := range reads {
				s.same(q)
			}
			i.same(iq)
		},
	},
	{
		class: "text", name: "json_table-and-subqueries",
		setup: []string{"CREATE TABLE t1 (id INT PRIMARY KEY, v INT)", "INSERT INTO t1 VALUES (1, 1)", "CREATE TABLE t2 (id INT PRIMARY KEY, doc TEXT, v INT)", "INSERT INTO t2 VALUES (1, '[1, 2]', 5)"},
		body: func(x *rsRun) {
			x.rsWriteAndRead("UPDATE t2 SET doc = '[3]', v = v + 1 WHERE id = 1",
				"SELECT j.x FROM JSON_TABLE((SELECT doc FROM t2 WHERE id = 1), '$[*]' COLUMNS (x INT PATH '$')) AS j",
				"SELECT v, (SELECT MAX(v) FROM t2) FROM t1 WHERE id = 1",
				"SELECT v FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE v > 5)",
				"SELECT v FROM t1 WHERE id = 1 AND v IN (SELECT 1 FROM t2 WHERE v = 5)",
			)
		},
	},
	{
		class: "text", name: "nested-views",
		setup: []string{
			"CREATE TABLE t2 (id INT PRIMARY KEY, v INT)", "INSERT INTO t2 VALUES (1, 1)",
			"CREATE VIEW v1 AS SELECT id, v FROM t2", "CREATE VIEW v2 AS SELECT id, v * 2 AS w FROM v1",
			"CREATE VIEW v3 AS SELECT a.w FROM v2 a JOIN v1 b ON a.id = b.id",
		},
		body: func(x *rsRun) {
			x.rsWriteAndRead("UPDATE t2 SET v = v + 1 WHERE id = 1", "SELECT w FROM v2 WHERE id = 1", "SELECT w FROM v3", "SELECT v FROM v1 WHERE id = 1")
		},
	},
	{
		class: "text", name: "prepared-statement-binds-db-at-prepare",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"},
		body: func(x *rsRun) {
			db2 := x.newDB()
			x.exec("CREATE TABLE "+db2+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+db2+".t VALUES (1, 2)")
			q := "SELECT v FROM t WHERE id = 1"
			s := x.rootVia(x.A())
			if x.proto == "prepared" {
				ps := s.prepare(q)
				pw := s.prepare("UPDATE t SET v = v + 1 WHERE id = 1")
				s.exec("USE " + db2)
				ps.warm()
				x.rootVia(x.B()).write("UPDATE " + x.db + ".t SET v = v + 10 WHERE id = 1")
				ps.same()
				s.same(q) // prepared in db2 now
				r := x.rootVia(x.B())
				r.warm(q)
				pw.write() // binds the run's database, where it was prepared
				r.same(q)
			} else {
				s.exec("PREPARE ps FROM '"+q+"'", "PREPARE pw FROM 'UPDATE t SET v = v + 1 WHERE id = 1'", "USE "+db2)
				s.same("EXECUTE ps")
				x.rootVia(x.B()).write("UPDATE " + x.db + ".t SET v = v + 10 WHERE id = 1")
				s.same("EXECUTE ps")
				s.same(q)
				r := x.rootVia(x.B())
				r.warm(q)
				s.write("EXECUTE pw")
				r.same(q)
			}
			x.fresh(q)
			x.sess(x.B(), rsAccount{user: "root", pass: rootPass, db: db2}).same(q)
		},
	},
	{
		class: "text", name: "failed-multi-statement-use",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"},
		body: func(x *rsRun) {
			db2 := x.newDB()
			x.exec("CREATE TABLE "+db2+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+db2+".t VALUES (1, 2)")
			q := "SELECT v FROM t WHERE id = 1"
			x.rootVia(x.A()).warm(q)
			x.sess(x.A(), rsAccount{user: "root", pass: rootPass, db: db2}).warm(q)
			for _, multi := range []string{
				"USE " + db2 + "; SELECT * FROM no_such_table",
				"USE " + db2 + "; USE no_such_db",
				"SELECT * FROM no_such_table; USE " + db2,
				"DO 1; USE " + db2 + "; SIGNAL SQLSTATE '45000'",
				"SET session_track_schema = OFF, session_track_state_change = OFF; USE " + db2,
			} {
				s := x.rootVia(x.B())
				s.exec(multi)
				s.same(q)
				s.same(q)
				s.same("SELECT DATABASE()")
			}
		},
	},
	{
		class: "text", name: "temporary-table-shadows", steps: 9,
		setup: []string{"CREATE TABLE t (v INT)", "INSERT INTO t VALUES (1)"},
		body: func(x *rsRun) {
			q := "SELECT v FROM t"
			for _, create := range []struct {
				name  string
				stmts []string
			}{
				{"prepare-execute", []string{"PREPARE ct FROM 'CREATE TEMPORARY TABLE t (v INT)'", "EXECUTE ct"}},
				{"execute-immediate", []string{"EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE t (v INT)'"}},
				{"alter-table-rename", []string{"CREATE TEMPORARY TABLE tmp (v INT)", "ALTER TABLE tmp RENAME TO t"}},
				{"rename-table", []string{"CREATE TEMPORARY TABLE tmp (v INT)", "RENAME TABLE tmp TO t"}},
				{"create-select", []string{"CREATE TEMPORARY TABLE t SELECT 42 AS v"}},
				{"executable-comment", []string{"/*!CREATE TEMPORARY TABLE t (v INT)*/"}},
				{"create-or-replace", []string{"CREATE OR REPLACE TEMPORARY TABLE t (v INT)"}},
				{"multi-statement", []string{"CREATE TEMPORARY TABLE t (v INT); SELECT 1"}},
				// The client's own trackers, which show nothing, are on
				// while a text that names them runs.
				{"trackers-off-multi-statement", []string{"SET session_track_state_change = OFF, session_track_system_variables = ''; CREATE TEMPORARY TABLE t (v INT)"}},
			} {
				x.step(create.name, func(x *rsRun) {
					s := x.rootVia(x.A())
					s.exec(create.stmts...)
					// Another session caches the real table; the one
					// with the temporary table must not get its rows.
					x.rootVia(x.B()).warm(q)
					s.same(q)
					s.same(q)
					s.exec("INSERT INTO t VALUES (42)")
					s.same(q)
					s.same(q)
					// Nor may others get the temporary table's.
					x.fresh(q)
					x.rootVia(x.A()).warm(q)
					s.same(q)
					s.exec("DROP TEMPORARY TABLE t")
					s.same(q)
				})
			}
		},
	},

	// Combinations.
	{
		class: "combination", name: "role-then-prepared-statement",
		setup: rsOneRow, protos: []string{"prepared"},
		body: func(x *rsRun) {
			role := x.name("reader")
			x.exec("CREATE ROLE "+role, "GRANT SELECT ON "+x.db+".t TO "+role)
			erin := x.account("erin", "GRANT "+role+" TO {user}")
			q := "SELECT v FROM " + x.db + ".t WHERE id = ?"
			e := x.as(x.A(), erin)
			e.set("SET ROLE " + role)
			ps := e.prepare(q)
			ps.same(1)
			ps.same(1)
			e.set("SET ROLE NONE")
			ps.same(1)
			e.exec("EXECUTE IMMEDIATE 'SET ROLE " + role + "'")
			ps.same(1)
			ps.same(1)
			e.exec("EXECUTE IMMEDIATE 'SET ROLE NONE'")
			ps.same(1)
			x.as(x.B(), erin).same(q, 1)
		},
	},
	{
		class: "combination", name: "executable-comment-under-no_backslash_escapes",
		setup: rsTwoTabs,
		body: func(x *rsRun) {
			x.rsHiddenTable("SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')", `'x\' /*M! AND 1 */`)
		},
	},
	{
		class: "combination", name: "prepared-set-time_zone-in-a-snapshot",
		setup: rsStateTab,
		body: func(x *rsRun) {
			x.rootVia(x.A()).warm(rsTZ)
			s := x.rootVia(x.B())
			s.exec("START TRANSACTION WITH CONSISTENT SNAPSHOT")
			s.set("SET time_zone = ?", "+05:00")
			x.rootVia(x.A()).write("UPDATE t SET ts = '2030-01-01 00:00:00' WHERE id = 1")
			s.same(rsTZ)
			s.exec("COMMIT")
			s.same(rsTZ)
			o := x.rootVia(x.A())
			o.set("SET time_zone = ?", "+05:00")
			o.same(rsTZ)
			x.fresh(rsTZ)
		},
	},
}

// sidecarN returns A for 0 and B for 1.
func (x *rsRun) sidecarN(i int) *proxy {
	if i == 0 {
		return x.A()
	}
	return x.B()
}

// xidTag names an XA transaction of this session alone.
func (tw *twin) xidTag() string {
	tw.x.t.Helper()
	return tw.x.env.tag + tw.x.proto[:1] + strconv.FormatInt(connID(tw.x.t, tw.via), 10)
}

// execXA is exec where the xid 'rs-rr' stands for one of each side's own:
// xids are server-wide, and the twins' transactions are two.
func (tw *twin) execXA(stmts ...string) {
	tw.x.t.Helper()
	tag := tw.xidTag()
	for _, s := range stmts {
		vs, ds := strings.ReplaceAll(s, "'rs-rr'", "'rs-rr-"+tag+"v'"), strings.ReplaceAll(s, "'rs-rr'", "'rs-rr-"+tag+"d'")
		if got, want := run(tw.via, "text", vs), run(tw.direct, "text", ds); got != want {
			tw.x.t.Fatalf("%s, %s:\ngot  %s\nwant %s", tw.label, s, got, want)
		}
	}
}

// rsStateChanged warms reads through A in a session of defaults, changes
// the state of a new session through B by change, and compares the reads
// there, twice each (the second may be a hit of the first).
func (x *rsRun) rsStateChanged(reads []string, change func(s *twin)) {
	x.t.Helper()
	w := x.rootVia(x.A())
	for _, q := range reads {
		w.warm(q)
	}
	s := x.rootVia(x.B())
	change(s)
	for _, q := range reads {
		s.same(q)
		s.same(q)
	}
}

// rsWriteAndRead warms reads through B (those the sidecar caches), writes
// through A with the followers held, and compares the reads through every
// sidecar.
func (x *rsRun) rsWriteAndRead(write string, reads ...string) {
	x.t.Helper()
	x.step(write, func(x *rsRun) { x.rsWriteAndReadNow(write, reads...) })
}

func (x *rsRun) rsWriteAndReadNow(write string, reads ...string) {
	x.t.Helper()
	r := x.rootVia(x.B())
	for _, q := range reads {
		r.fill(q)
	}
	x.rootVia(x.A()).write(write)
	for _, q := range reads {
		r.same(q)
	}
	x.fresh(reads...)
}

// rsWriteHeld warms reads through B, writes through A with the
// followers held, so that only A's own reading of the write protects the
// others, and compares the reads through B and a new session of A. The
// write must succeed, or fail when fails says so.
func (x *rsRun) rsWriteHeld(write string, fails bool, reads ...string) {
	x.t.Helper()
	x.sync()
	r := x.rootVia(x.B())
	for _, q := range reads {
		r.fill(q)
	}
	if out := run(x.rootVia(x.A()).via, "text", write); strings.HasPrefix(out, "error") != fails {
		x.t.Fatalf("%s: %s", write, out)
	}
	for _, q := range reads {
		r.same(q)
		x.rootVia(x.A()).same(q)
	}
	x.release()
}

// rsPKChanged follows a change of t's primary key: once the followers
// have seen it, every sidecar warms the reads, and writes by the old and
// the new key through each sidecar must show through the other.
func (x *rsRun) rsPKChanged(reads []string, writeA, writeB string) {
	x.t.Helper()
	x.sync()
	x.warmAll(reads...)
	x.rootVia(x.A()).write(writeA)
	x.fresh(reads...)
	x.warmAll(reads...)
	x.rootVia(x.B()).write(writeB)
	x.fresh(reads...)
}

// rsHiddenTable checks a session whose dialect set (or, when set is "",
// the handshake's gbk) reads lit as a whole string literal: a read with
// lit then a UNION over t2 must depend on t2, and an UPDATE pinned to row
// 1 by the default reading but widened to row 2 by the session's must
// bump row 2.
func (x *rsRun) rsHiddenTable(set, lit string) {
	x.t.Helper()
	open := func(p *proxy) *twin {
		if set == "" {
			acct := x.rootAcct()
			acct.params = "collation=gbk_chinese_ci"
			return x.sess(p, acct)
		}
		tw := x.rootVia(p)
		tw.exec(set)
		return tw
	}
	hide := "SELECT v FROM t1 WHERE s <> " + lit + " UNION ALL SELECT v FROM t2 -- '"
	row2 := "SELECT v FROM t1 WHERE id = 2"
	n := open(x.B())
	n.fill(hide)
	x.rootVia(x.B()).warm(row2)
	x.rootVia(x.A()).write("UPDATE t2 SET v = v + 1 WHERE id = 1")
	n.same(hide)
	open(x.A()).write("UPDATE t1 SET v = v + 1 WHERE id = 1 AND s = " + lit + " OR id = 2 -- '")
	n.same(hide)
	x.fresh(row2)
}

// TestTimeReadAsDateAfterMidnight: a TIME value read as a date takes the
// current date in the session's time zone, whether the text says so
// (CAST(tm AS DATETIME), SEC_TO_TIME()) or a generated column or a view
// does. Such a read cached before midnight is not served after it. The
// session's zone puts its midnight within the next minute.
func TestTimeReadAsDateAfterMidnight(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".tm (id INT PRIMARY KEY, tm TIME, v DATETIME AS (CAST(tm AS DATETIME)) VIRTUAL)")
	m.Exec(t, "INSERT INTO "+db+".tm (id, tm) VALUES (1, '10:00:00')")
	m.Exec(t, "CREATE VIEW "+db+".vt AS SELECT id, YEAR(tm) + DAYOFYEAR(tm) AS d FROM "+db+".tm")
	m.Exec(t, "CREATE TABLE "+db+".plain (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO "+db+".plain VALUES (1)")
	// A column of another type whose expression reads a TIME as a date.
	m.Exec(t, "CREATE TABLE "+db+".gen (id INT PRIMARY KEY, s INT, d DATETIME AS (CAST(SEC_TO_TIME(s) AS DATETIME)) VIRTUAL)")
	m.Exec(t, "INSERT INTO "+db+".gen (id, s) VALUES (1, 36000)")
	policy := writePolicy(t, t.TempDir(), "all.lua", "function cache(q)\n  if q.cacheable and q.kind == \"select\" then return {ttl = 600, admit = \"always\"} end\nend\n")
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Policy: []string{policy}}))
	via := openDB(t, rootDSN(p.addr, db, ""))
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	reads := []string{
		"SELECT id, v FROM tm",
		"SELECT CAST(tm AS DATETIME) FROM tm",
		"SELECT id, d FROM vt",
		"SELECT CAST(SEC_TO_TIME(36000 + id) AS DATETIME) FROM plain",
		"SELECT id, DATE(MAKETIME(10, id, 0)) FROM plain",
		"SELECT * FROM gen",
		"SELECT id, CAST(TIME '10:00:00' AS DATETIME), TIMESTAMP({t '10:00:00'}) FROM plain",
	}
	// A zone whose local time is 23:59 now, with at least 5 seconds to
	// midnight (offsets are whole minutes: the seconds are UTC's).
	for time.Now().UTC().Second() > 55 {
		time.Sleep(200 * time.Millisecond)
	}
	now := time.Now().UTC()
	off := (23*60 + 59 - (now.Hour()*60 + now.Minute()) + 1440) % 1440
	if off > 13*60 {
		off -= 1440
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	zone := fmt.Sprintf("SET time_zone = '%s%02d:%02d'", sign, off/60, off%60)
	midnight := now.Truncate(time.Minute).Add(time.Minute)
	cv, cd := conn(t, via), conn(t, direct)
	execOn(t, cv, zone)
	execOn(t, cd, zone)
	for _, q := range reads {
		connDump(cv, q)
		before := hits(t, via)
		if got, want := connDump(cv, q), connDump(cd, q); got != want {
			t.Fatalf("%s before midnight: got %s, want %s", q, got, want)
		}
		if hits(t, via) == before {
			t.Fatalf("%s was not served from the cache before midnight; the test proves nothing\n%s", q, dump(t, via, "SHOW MYCACHED QUERIES"))
		}
	}
	if !time.Now().Before(midnight) {
		t.Fatalf("the reads took past the zone's midnight; the test proves nothing")
	}
	time.Sleep(time.Until(midnight) + 500*time.Millisecond)
	for _, q := range reads {
		if got, want := connDump(cv, q), connDump(cd, q); got != want {
			t.Errorf("%s after midnight: got %s, want %s (yesterday's date)", q, got, want)
		}
	}
}

// profiledTexts renders the statements SHOW PROFILES lists.
func profiledTexts(c *sql.Conn) string {
	rows, err := c.QueryContext(context.Background(), "SHOW PROFILES")
	if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	out := ""
	for rows.Next() {
		var id int
		var took float64
		var text string
		if err := rows.Scan(&id, &took, &text); err != nil {
			return "error " + err.Error()
		}
		out += text + "\n"
	}
	if err := rows.Err(); err != nil {
		return out + outcome(nil, err)
	}
	return out
}

// TestTracedSessionStart: a session that starts with the server tracing
// or profiling its statements (their global defaults changed) reads
// what the server ran for it, as one that turned them on does
// ("traced-session" in TestReadSide, whose server other cases share).
func TestTracedSessionStart(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	root := openDB(t, rootDSN(m.Addr, db, ""))
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2)",
		"CREATE TABLE u (id INT PRIMARY KEY)", "INSERT INTO u VALUES (1)",
	} {
		mustExec(t, root, s)
	}
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	q, other := "SELECT v FROM t WHERE id = 1", "SELECT id FROM u WHERE id = 1"
	trace := "SELECT QUERY FROM information_schema.OPTIMIZER_TRACE"
	for _, v := range []string{"optimizer_trace", "profiling"} {
		t.Run(v, func(t *testing.T) {
			mustExec(t, root, "SET GLOBAL "+v+" = "+map[string]string{"optimizer_trace": "'enabled=on'", "profiling": "1"}[v])
			defer mustExec(t, root, "SET GLOBAL "+v+" = DEFAULT")
			via, direct := conn(t, openDB(t, rootDSN(p.addr, db, ""))), conn(t, openDB(t, rootDSN(m.Addr, db, "")))
			for range 3 {
				for _, r := range []string{q, other, q, trace} {
					if got, want := query(via, "text", r), query(direct, "text", r); got != want {
						t.Errorf("%s through the sidecar:\ngot  %swant %s", r, got, want)
					}
				}
			}
			// The statements mycached runs to set the session up come
			// first (README).
			if got, want := profiledTexts(via), profiledTexts(direct); !strings.HasSuffix(got, want) {
				t.Errorf("SHOW PROFILES through the sidecar:\ngot  %swant what ends in %s", got, want)
			}
		})
	}
}
