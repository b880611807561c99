package mysqlproxy

import (
	"crypto/tls"
	"log/slog"
	"net/netip"
	"time"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/cache"
	"github.com/mycached/mycached/mysqlproxy/internal/kvproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
)

// BackendTLS says whether mycached uses TLS on its connection to the backend.
type BackendTLS = relay.BackendTLS

// The backend TLS modes, as named on the command line.
const (
	BackendTLSOff       = relay.BackendTLSOff       // never, even when the backend offers it
	BackendTLSPreferred = relay.BackendTLSPreferred // when the backend offers it, without verifying its certificate
	BackendTLSRequired  = relay.BackendTLSRequired  // always; fail when the backend does not offer it
	BackendTLSVerify    = relay.BackendTLSVerify    // always, and verify the certificate against the system roots (or BackendCA)
)

// CacheInTransactions says which reads inside a transaction may use the cache.
type CacheInTransactions = cache.InTransactions

// The modes of --cache-in-transactions.
const (
	CacheUntilWrite = cache.UntilWrite // until the transaction has written
	// CacheAfterFirstRead is CacheUntilWrite, but the server runs the read
	// that begins a transaction and the one that takes its snapshot.
	CacheAfterFirstRead = cache.AfterFirstRead
	CacheReadOnly       = cache.ReadOnly // only in transactions started READ ONLY
	CacheNever          = cache.Never    // never inside a transaction
)

// Consistency says how a hit is checked against writes: see
// Config.Consistency.
type Consistency = cache.Consistency

// The consistency levels of --consistency.
const (
	ConsistencyStrict  = cache.Strict  // a hit checks memcached's generations
	ConsistencyBounded = cache.Bounded // a hit checks the sidecar's own view while the follower is current
)

// CheckKVPrefix reports why prefix cannot be Config.KVPrefix: it is
// empty, overlaps a prefix mycached reserves in the cache ("q:", "g:",
// "i:"), or cannot begin a legal memcached key. NewServer refuses such a
// prefix; a command line can check it first.
func CheckKVPrefix(prefix string) error { return kvproxy.CheckPrefix(prefix) }

// Config is everything a Server needs. NewServer fills zero values with the
// defaults documented on each field.
type Config struct {
	// Backend is the MySQL or MariaDB server, host:port. Required, unless
	// the server is for ServeKV alone (KVPasswords set, Backend empty).
	Backend string
	// ConnectTimeout bounds dialing the backend (default 5s).
	ConnectTimeout time.Duration
	// BackendTLS is the TLS mode to the backend (default preferred).
	BackendTLS BackendTLS
	// BackendCA is a PEM file of CAs for BackendTLSVerify; empty means system roots.
	BackendCA string
	// ProxyProtocol begins each client session's backend connection with
	// a PROXY protocol (version 1) header naming the client's address and
	// the address it reached mycached on: the server then matches
	// accounts, counts connection errors and shows sessions by the
	// client's address. The server must accept the header from
	// mycached's address (MariaDB's proxy_protocol_networks).
	// mycached's own connections (the binlog follower's) send none.
	ProxyProtocol bool

	// SecureNetworks are the client addresses whose connections to
	// mycached without TLS count as a secure transport, as the server
	// counts its own Unix socket; nil means loopback (and Unix sockets
	// always count). A client from elsewhere without TLS, logged in over
	// a backend hop with TLS, is refused (Access denied) when its account
	// requires TLS (REQUIRE SSL and the like) or the server's
	// require_secure_transport is ON, as the server would refuse it
	// directly. Over a backend hop without TLS the server judges that
	// itself.
	SecureNetworks []netip.Prefix

	// TLS is the server certificate offered to clients that ask for SSL.
	// Nil means CLIENT_SSL is masked from the greeting.
	TLS *tls.Config

	// Memcached lists memcached servers (host:port). Empty means L1 only.
	Memcached []string
	// MemcachedTimeout bounds every memcached operation (default 50ms).
	MemcachedTimeout time.Duration
	// BumpWait bounds how long a write's OK waits for its invalidations
	// to reach memcached once a first try failed while memcached was
	// answering: other sidecars read them there (default 1s; negative:
	// the OK does not wait, and the invalidations land in the background).
	BumpWait time.Duration
	// MemcachedGets is the most gets in flight per memcached server
	// before concurrent lookups queue and share one (default 2; under
	// load the store narrows to one).
	MemcachedGets int
	// CacheMemory bounds the in-process L1 cache in bytes (default 256 MiB; 0 keeps the default, negative disables L1).
	CacheMemory int64
	// MaxResultBytes is the largest response that is cached (default 16 MiB).
	MaxResultBytes int64
	// FillMemory bounds the bytes all sessions together hold in responses
	// on their way into the cache: the copy kept for the cache, and what
	// a client that reads slowly has not read yet (default 256 MiB). Past
	// it a miss is relayed at its client's pace and not stored.
	FillMemory int64
	// CompressMinBytes compresses memcached values at least this large (default 0: off).
	CompressMinBytes int
	// DefaultTTL is the ttl of the built-in policy (default 60s).
	DefaultTTL time.Duration
	// Passthrough caches nothing: every statement is relayed. Writes still
	// invalidate, so that sidecars sharing memcached stay coherent.
	Passthrough bool
	// TableLevel turns off row-level invalidation: primary-key lookups
	// depend on their table's generation like every other read.
	TableLevel bool
	// CacheInTransactions is the mode for reads in transactions (default until-write).
	CacheInTransactions CacheInTransactions

	// BinlogUser is an account with REPLICATION SLAVE (and SELECT and
	// SHOW VIEW, to read keys, views and foreign keys) that mycached uses
	// on connections of its own: to follow the binlog, so that writes
	// from anywhere invalidate, and to learn the schema. Empty means no
	// follower: invalidation rests on the parse of relayed writes alone.
	BinlogUser string
	// BinlogPassword is BinlogUser's password.
	BinlogPassword string
	// BinlogServerID is the follower's replica id, unique among the
	// server's replicas (default: a random one above 2^24).
	BinlogServerID uint32
	// Consistency is how a hit is checked (default strict): strict checks
	// memcached's generations on every hit; bounded checks the sidecar's
	// own view, with no round trip, while the binlog follower is within
	// MaxStaleness of the server, and falls back to strict past it.
	Consistency Consistency
	// MaxStaleness bounds how far behind the server a bounded hit may be
	// (default 1s).
	MaxStaleness time.Duration
	// PeerListen is where this sidecar hears from the fleet's other
	// sidecars (host:port, port 0 for any), so that strict hits need no
	// memcached round trip: every sidecar that shares memcached tells
	// the others of its writes before its client hears OK, and a hit is
	// checked against the local view while every other sidecar is
	// linked and the follower is current. Empty means this sidecar takes
	// no part: it still lists itself in memcached, so that the others
	// keep checking their hits against memcached. Needs Memcached.
	PeerListen string
	// PeerAdvertise is the address the other sidecars dial to reach
	// PeerListen (default: PeerListen's, once bound).
	PeerAdvertise string
	// PeerSecret, when set, must be the same on every sidecar of the
	// fleet: the peer links authenticate each other with it, and a
	// connection that cannot prove it is closed. Nil means anyone who can
	// reach PeerListen may send invalidations.
	PeerSecret []byte
	// StateDir keeps the follower's position, what it learned of the
	// tables triggers write, and the invalidations still owed to
	// memcached across restarts; empty means none is kept, and a restart
	// invalidates every entry.
	StateDir string

	// Policy lists Lua policy scripts, loaded in order. Empty means scripts/default.lua's built-in copy.
	Policy []string
	// PolicyEngine decides what is cached; nil means the built-in default
	// (every cacheable SELECT for DefaultTTL, per user). It takes
	// precedence over Policy.
	PolicyEngine cachepolicy.Policy
	// PolicyTimeout is the deadline of each Lua hook call (default 5ms).
	PolicyTimeout time.Duration
	// PolicyMemory bounds what each Lua hook call may allocate through the
	// libraries, beyond twice its statement's size (default 4 MiB).
	PolicyMemory int64

	// AdminUsers are the accounts that may run the admin pseudo-queries,
	// each a user name (any host) or user@host as the server matched it
	// (default ["root"]). For everyone else the statements go to the
	// server, which answers them as the syntax errors they are.
	AdminUsers []string

	// KVPrefix namespaces key/value pairs in the cache tier (default "kv:");
	// see CheckKVPrefix.
	KVPrefix string
	// KVMaxBytes is the largest kv value accepted (default 8 MiB).
	KVMaxBytes int
	// KVTimeout bounds each kv statement as a whole, SELECT * and DROP
	// included, and each policy script's cache.get, set and delete
	// (default 1s, and never less than MemcachedTimeout). A cache lookup
	// that times out falls back to MySQL; kv has nothing to fall back to,
	// so it waits longer before it fails.
	KVTimeout time.Duration
	// KVMaxConnections bounds the connections the kv-only listener holds
	// at once (default 1000). Past it a client gets error 1040, as from a
	// server at its max_connections: the listener needs no backend
	// connection, so nothing else bounds them, and they would take the
	// file descriptors the main listener needs.
	KVMaxConnections int
	// KVUsers are the accounts that may use kv on the main listener, each
	// a user name (any host) or user@host as the server matched it; empty
	// means none. SELECT "x" is SQL too, so for everyone else every
	// statement goes to the server. The kv-only listener serves every
	// form to the users of KVPasswords.
	KVUsers []string
	// KVPerUser gives each user their own kv namespace: the prefix, the
	// user name with bytes other than letters, digits, ".", "_" and "-"
	// percent-encoded (or, when that is over 64 bytes, "~" and 40 hex
	// digits of its SHA-256), and ":".
	KVPerUser bool
	// KVPasswords are the users the kv-only listener (ServeKV) accepts,
	// with their passwords in the clear or as MySQL's "*" + 40 hex digits
	// hash. Nobody else gets in there; empty means nobody. The main
	// listener ignores it: the backend checks passwords there.
	KVPasswords map[string]string

	// MaxPacket bounds a client's command packet, reassembled (default 1 GiB, MySQL's own ceiling).
	MaxPacket int
	// ShutdownTimeout bounds the drain on Shutdown (default 30s).
	ShutdownTimeout time.Duration

	// Logger receives connection errors and lifecycle events (default slog.Default()).
	Logger *slog.Logger
}

func (c *Config) fillDefaults() {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.BackendTLS == "" {
		c.BackendTLS = BackendTLSPreferred
	}
	if c.MemcachedTimeout == 0 {
		c.MemcachedTimeout = 50 * time.Millisecond
	}
	if c.CacheMemory == 0 {
		c.CacheMemory = 256 << 20
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = 16 << 20
	}
	if c.FillMemory == 0 {
		c.FillMemory = cache.DefaultFillMemory
	}
	if c.DefaultTTL == 0 {
		c.DefaultTTL = 60 * time.Second
	}
	if c.CacheInTransactions == "" {
		c.CacheInTransactions = CacheUntilWrite
	}
	if c.Consistency == "" {
		c.Consistency = ConsistencyStrict
	}
	if c.MaxStaleness == 0 {
		c.MaxStaleness = time.Second
	}
	if c.PolicyTimeout == 0 {
		c.PolicyTimeout = 5 * time.Millisecond
	}
	if c.AdminUsers == nil {
		c.AdminUsers = []string{"root"}
	}
	if c.KVPrefix == "" {
		c.KVPrefix = "kv:"
	}
	if c.KVMaxBytes == 0 {
		c.KVMaxBytes = 8 << 20
	}
	if c.KVTimeout == 0 {
		c.KVTimeout = time.Second
	}
	if c.KVMaxConnections == 0 {
		c.KVMaxConnections = 1000
	}
	c.KVTimeout = max(c.KVTimeout, c.MemcachedTimeout)
	if c.MaxPacket == 0 {
		c.MaxPacket = 1 << 30
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
