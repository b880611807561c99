package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mycached/mycached/mysqlproxy"
)

// options is the daemon's configuration after flags and the YAML file have
// been merged and checked.
type options struct {
	listen   string
	backend  string
	admin    string
	kvListen string
	config   string

	tlsCert       string
	tlsKey        string
	tlsSelfSigned bool
	serverTLS     *tls.Config // loaded from tlsCert/tlsKey or generated; nil means no client TLS

	backendTLS     string
	backendCA      string
	proxyProtocol  bool
	secureNetworks []string
	secureNets     []netip.Prefix
	connectTimeout time.Duration

	memcached           []string
	memcachedTimeout    time.Duration
	bumpWait            time.Duration
	memcachedGets       int
	cacheMemory         int64
	maxResultBytes      int64
	fillMemory          int64
	compressMinBytes    int64
	defaultTTL          time.Duration
	passthrough         bool
	tableLevel          bool
	cacheInTransactions string

	binlogUser         string
	binlogPasswordFile string
	binlogPassword     string // from the file or MYCACHED_BINLOG_PASSWORD
	binlogServerID     int
	consistency        string
	maxStaleness       time.Duration
	peerListen         string
	peerAdvertise      string
	peerSecretFile     string
	peerSecret         []byte // from the file or MYCACHED_PEER_SECRET
	stateDir           string

	policy        []string
	policyTimeout time.Duration
	policyMemory  int64

	adminUsers  []string
	kvPrefix    string
	kvMaxBytes  int64
	kvTimeout   time.Duration
	kvMaxConns  int
	kvUsers     []string
	kvPerUser   bool
	kvUsersFile string
	kvPasswords map[string]string // from --kv-users-file: who may use --kv-listen

	maxPacket       int64
	shutdownTimeout time.Duration
	logFormat       string
	logLevel        string
}

// flagDef is one flag: where it is listed in --help, its value, what it does.
type flagDef struct {
	group string
	name  string
	arg   string // the placeholder shown in --help; empty for booleans
	value flag.Value
	usage string
	unset string // what the empty default means, for --help
}

// defaultOptions returns the options before any flag or YAML key is applied.
func defaultOptions() options {
	return options{
		listen:              "127.0.0.1:3307",
		backend:             "127.0.0.1:3306",
		backendTLS:          "preferred",
		connectTimeout:      5 * time.Second,
		memcachedTimeout:    50 * time.Millisecond,
		bumpWait:            time.Second,
		memcachedGets:       2,
		cacheMemory:         256 << 20,
		maxResultBytes:      16 << 20,
		fillMemory:          256 << 20,
		defaultTTL:          60 * time.Second,
		cacheInTransactions: "until-write",
		consistency:         "strict",
		maxStaleness:        time.Second,
		policyTimeout:       5 * time.Millisecond,
		policyMemory:        4 << 20,
		adminUsers:          []string{"root"},
		kvPrefix:            "kv:",
		kvMaxBytes:          8 << 20,
		kvTimeout:           time.Second,
		kvMaxConns:          1000,
		maxPacket:           1 << 30,
		shutdownTimeout:     30 * time.Second,
		logFormat:           "text",
		logLevel:            "info",
	}
}

// flagDefs binds every flag to a field of o, in the order --help lists them.
func flagDefs(o *options) []flagDef {
	return []flagDef{
		{"Listeners", "listen", "ADDR", stringValue{&o.listen}, "accept MySQL clients on this host:port", ""},
		{"Listeners", "admin", "ADDR", stringValue{&o.admin}, "serve the status page (/), /status.json, /metrics and /healthz over HTTP on this host:port", "off"},
		{"Listeners", "kv-listen", "ADDR", stringValue{&o.kvListen}, "serve only the key/value pseudo-queries over the MySQL protocol, with no backend; needs user:password lines in --kv-users-file", "off"},

		{"Backend", "backend", "ADDR", stringValue{&o.backend}, "the MySQL or MariaDB server, host:port", ""},
		{"Backend", "backend-tls", "MODE", enumValue{&o.backendTLS, []string{"off", "preferred", "required", "verify"}}, "TLS to the backend: off, preferred (if offered), required, verify", ""},
		{"Backend", "backend-ca", "FILE", stringValue{&o.backendCA}, "PEM file of CAs for --backend-tls verify", "the system roots"},
		{"Backend", "backend-proxy-protocol", "", boolValue{&o.proxyProtocol}, "begin each client's backend connection with a PROXY protocol header carrying the client's address, so that the server matches accounts (user@host), blocks hosts and lists sessions by the client's address, not mycached's; the server must list mycached's address in proxy_protocol_networks", ""},
		{"Backend", "connect-timeout", "DURATION", durationValue{&o.connectTimeout}, "bound on dialing the backend", ""},

		{"Client TLS", "tls-cert", "FILE", stringValue{&o.tlsCert}, "PEM certificate for clients that ask for TLS; needs --tls-key", "no client TLS"},
		{"Client TLS", "tls-key", "FILE", stringValue{&o.tlsKey}, "PEM private key of --tls-cert", "none"},
		{"Client TLS", "tls-self-signed", "", boolValue{&o.tlsSelfSigned}, "offer a self-signed certificate for 127.0.0.1 and localhost", ""},
		{"Client TLS", "secure-networks", "CIDR,...", &listValue{p: &o.secureNetworks}, "client addresses whose connections without TLS count as secure, as the server counts its Unix socket; a client from elsewhere without TLS is refused when its account requires TLS or the server's require_secure_transport is ON (and mycached's own connection to the server uses TLS)", "loopback"},

		{"Cache", "memcached", "ADDR,...", &listValue{p: &o.memcached}, "memcached servers shared by every sidecar", "in-process cache only"},
		{"Cache", "memcached-timeout", "DURATION", durationValue{&o.memcachedTimeout}, "bound on each memcached operation; then the backend answers", ""},
		{"Cache", "bump-wait", "DURATION", durationValue{&o.bumpWait}, "how long a write's OK waits for its invalidations to reach memcached when the first try failed while memcached was answering (a stall, a busy server, or memcached just gone); other sidecars may serve the old rows until they land or their followers see the write; 0: never wait", ""},
		{"Cache", "memcached-gets", "N", intValue{&o.memcachedGets, 1}, "most gets in flight per memcached server before concurrent lookups queue and share one; under load mycached narrows to one, which spends the least CPU", ""},
		{"Cache", "cache-memory", "SIZE", sizeValue{&o.cacheMemory}, "in-process cache size; 0 turns it off", ""},
		{"Cache", "max-result-bytes", "SIZE", sizeValue{&o.maxResultBytes}, "largest response that is cached", ""},
		{"Cache", "fill-memory", "SIZE", sizeValue{&o.fillMemory}, "most memory all connections together hold in responses on their way into the cache, clients that read slowly included; past it a miss goes to its client at the client's pace and is not stored", ""},
		{"Cache", "compress-min-bytes", "SIZE", sizeValue{&o.compressMinBytes}, "compress memcached values at least this large; 0: never", ""},
		{"Cache", "default-ttl", "DURATION", durationValue{&o.defaultTTL}, "lifetime of entries cached by the built-in policy", ""},
		{"Cache", "passthrough", "", boolValue{&o.passthrough}, "relay only: cache nothing (writes still invalidate, for sidecars that do cache)", ""},
		{"Cache", "table-level", "", boolValue{&o.tableLevel}, "invalidate by table only: no row-level entries for primary-key lookups", ""},
		{"Cache", "cache-in-transactions", "MODE", enumValue{&o.cacheInTransactions, []string{"until-write", "after-first-read", "read-only", "never"}}, "cache reads in transactions: until-write, after-first-read, read-only, never", ""},

		{"Coherence", "binlog-user", "USER", stringValue{&o.binlogUser}, "account that follows the server's binlog, so that writes from anywhere invalidate, and reads keys, views and foreign keys, on connections of mycached's own; needs REPLICATION SLAVE, BINLOG MONITOR, SELECT and SHOW VIEW on *.*", "none: only writes through mycached invalidate"},
		{"Coherence", "binlog-password-file", "FILE", stringValue{&o.binlogPasswordFile}, "file holding --binlog-user's password; or set MYCACHED_BINLOG_PASSWORD", "none"},
		{"Coherence", "binlog-server-id", "N", intValue{&o.binlogServerID, 0}, "replica id of the follower, unique among the server's replicas; 0 picks one at random", ""},
		{"Coherence", "consistency", "MODE", enumValue{&o.consistency, []string{"strict", "bounded"}}, "strict: a hit checks memcached's generations, which every write through a sidecar bumps before its OK; bounded: a hit checks the sidecar's own view, with no round trip, while the follower is within --max-staleness of the server", ""},
		{"Coherence", "max-staleness", "DURATION", durationValue{&o.maxStaleness}, "how far behind the server a bounded hit may be; past it reads go to the server", ""},
		{"Coherence", "peer-listen", "ADDR", stringValue{&o.peerListen}, "hear from the other sidecars sharing --memcached on this host:port (a private network): each tells the others of its writes before its client hears OK, so strict hits are checked without a memcached round trip while every sidecar is linked", "off: strict hits read memcached's generations"},
		{"Coherence", "peer-advertise", "ADDR", stringValue{&o.peerAdvertise}, "host:port the other sidecars dial to reach --peer-listen", "--peer-listen's address"},
		{"Coherence", "peer-secret-file", "FILE", stringValue{&o.peerSecretFile}, "file holding a secret every sidecar of the fleet shares: peer links prove it to each other, and connections that cannot are closed; or set MYCACHED_PEER_SECRET", "none: anyone who reaches --peer-listen may send invalidations"},
		{"Coherence", "state-dir", "DIR", stringValue{&o.stateDir}, "keeps the follower's position, what it learned of triggers, and the invalidations still owed to memcached across restarts", "none: a restart invalidates every entry"},

		{"Policy", "policy", "FILE,...", &listValue{p: &o.policy}, "Lua policy scripts, loaded in order", "the built-in default.lua"},
		{"Policy", "policy-timeout", "DURATION", durationValue{&o.policyTimeout}, "deadline of each Lua hook call; then the query is not cached", ""},
		{"Policy", "policy-memory", "SIZE", sizeValue{&o.policyMemory}, "what each Lua hook call may allocate in strings and tables built by the libraries, beyond twice its statement's size; then it is killed and the query is not cached", ""},

		{"Access", "admin-users", "USER,...", &listValue{p: &o.adminUsers}, "accounts (user, or user@host) that may run admin pseudo-queries; empty: nobody", ""},
		{"Access", "kv-users", "USER,...", &listValue{p: &o.kvUsers}, "accounts (user, or user@host) that may use key/value pseudo-queries on --listen; for everyone else every statement is SQL", "nobody"},
		{"Access", "kv-users-file", "FILE", stringValue{&o.kvUsersFile}, "file of more --kv-users, one per line, # comments; a line user:password also lets that user into --kv-listen", "none"},
		{"Access", "kv-per-user", "", boolValue{&o.kvPerUser}, "give each user a private key/value namespace", ""},
		{"Access", "kv-prefix", "PREFIX", stringValue{&o.kvPrefix}, "namespace of key/value pairs in the cache: not empty, no whitespace or control bytes, at most 184 bytes, and neither beginning nor the beginning of the cache's own prefixes q:, g: and i:", ""},
		{"Access", "kv-max-bytes", "SIZE", sizeValue{&o.kvMaxBytes}, "largest key/value value accepted", ""},
		{"Access", "kv-timeout", "DURATION", durationValue{&o.kvTimeout}, "bound on each key/value statement as a whole, SELECT * and DROP included, and on each policy script's cache.get, set and delete; never less than --memcached-timeout", ""},
		{"Access", "kv-max-connections", "N", intValue{&o.kvMaxConns, 1}, "most connections --kv-listen holds at once; past it a client gets error 1040 Too many connections", ""},

		{"Limits and lifecycle", "max-packet", "SIZE", sizeValue{&o.maxPacket}, "largest client command accepted, reassembled, at least 1KiB; each session's limit is the server's max_allowed_packet, within this", ""},
		{"Limits and lifecycle", "shutdown-timeout", "DURATION", durationValue{&o.shutdownTimeout}, "on SIGTERM or SIGINT, time for in-flight statements to finish", ""},

		{"Logging", "log-format", "FORMAT", enumValue{&o.logFormat, []string{"text", "json"}}, "log to stderr as text or json", ""},
		{"Logging", "log-level", "LEVEL", enumValue{&o.logLevel, []string{"debug", "info", "warn", "error"}}, "least severe level logged: debug, info, warn, error", ""},

		{"Configuration", "config", "FILE", stringValue{&o.config}, "YAML file of settings keyed by flag name (see below)", "none"},
	}
}

// parseOptions parses the command line and the YAML file it names, and
// checks the result. On --help it writes the usage to helpOut and returns
// flag.ErrHelp. Every other error is one line that names the bad value.
func parseOptions(args []string, helpOut io.Writer) (options, error) {
	o := defaultOptions()
	defs := flagDefs(&o)

	fs := flag.NewFlagSet("mycached", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller, in one line
	fs.Usage = func() {}
	// The flag package wraps a Set error in its own words; keep ours, which
	// name the flag the way the user typed it.
	var setErr error
	for _, d := range defs {
		fs.Var(recordErr{d.value, "--" + d.name, &setErr}, d.name, d.usage)
	}
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			writeUsage(helpOut)
			return options{}, err
		case setErr != nil:
			return options{}, setErr
		}
		return options{}, flagError(err)
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q; flags start with --", fs.Arg(0))
	}

	if o.config != "" {
		onCommandLine := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
		if err := applyYAML(o.config, defs, onCommandLine); err != nil {
			return options{}, err
		}
	}
	if err := o.check(); err != nil {
		return options{}, err
	}
	return o, nil
}

// recordErr keeps the first Set error, prefixed with the flag's name.
type recordErr struct {
	flag.Value
	name string
	err  *error
}

func (r recordErr) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil && *r.err == nil {
		*r.err = fmt.Errorf("%s: %w", r.name, err)
	}
	return err
}

func (r recordErr) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagError rewrites the flag package's own errors in the double-dash style.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s (see mycached --help)", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name)
	}
	return errors.New(msg)
}

// applyYAML sets, from the YAML file at path, every flag that was not given
// on the command line.
func applyYAML(path string, defs []flagDef, onCommandLine map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", path, err)
	}
	// A second document ("---") would be ignored, settings and typos
	// alike.
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		line := more.Line
		if len(more.Content) > 0 {
			line = more.Content[0].Line
		}
		return fmt.Errorf("%s:%d: a second YAML document; put every setting in one", path, line)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: want a mapping of flag names to values", path, top.Line)
	}
	byName := make(map[string]flag.Value, len(defs))
	for _, d := range defs {
		byName[d.name] = d.value
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		where := fmt.Sprintf("%s:%d: %s", path, k.Line, k.Value)
		value, ok := byName[k.Value]
		switch {
		case !ok:
			return fmt.Errorf("%s:%d: unknown key %q (keys are flag names without --)", path, k.Line, k.Value)
		case k.Value == "config":
			return fmt.Errorf("%s: a config file cannot name another", where)
		case seen[k.Value]:
			return fmt.Errorf("%s: given twice", where)
		}
		seen[k.Value] = true
		s, err := yamlScalar(v)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if onCommandLine[k.Value] {
			continue
		}
		if err := value.Set(s); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// yamlScalar turns a scalar, or a list of scalars, into the flag's text.
func yamlScalar(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		items := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("list items must be plain values")
			}
			items = append(items, item.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("want a value or a list of values")
}

// check validates what each flag cannot check alone, and loads files.
func (o *options) check() error {
	addrs := []struct{ flag, addr string }{{"listen", o.listen}, {"backend", o.backend}, {"admin", o.admin}, {"kv-listen", o.kvListen},
		{"peer-listen", o.peerListen}, {"peer-advertise", o.peerAdvertise}}
	for _, m := range o.memcached {
		addrs = append(addrs, struct{ flag, addr string }{"memcached", m})
	}
	for _, a := range addrs {
		switch a.flag {
		case "admin", "kv-listen", "peer-listen", "peer-advertise":
			if a.addr == "" {
				continue // off
			}
		}
		if err := checkAddr(a.addr); err != nil {
			return fmt.Errorf("--%s: %w", a.flag, err)
		}
	}

	switch {
	case o.tlsCert != "" && o.tlsKey == "":
		return fmt.Errorf("--tls-cert: %q needs --tls-key", o.tlsCert)
	case o.tlsKey != "" && o.tlsCert == "":
		return fmt.Errorf("--tls-key: %q needs --tls-cert", o.tlsKey)
	case o.tlsCert != "" && o.tlsSelfSigned:
		return fmt.Errorf("--tls-self-signed: cannot be used with --tls-cert %q", o.tlsCert)
	}
	var err error
	if o.serverTLS, err = serverTLSConfig(o.tlsCert, o.tlsKey, o.tlsSelfSigned); err != nil {
		return err
	}

	for _, n := range o.secureNetworks {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			a, aerr := netip.ParseAddr(n)
			if aerr != nil {
				return fmt.Errorf("--secure-networks: %q is neither a network (127.0.0.0/8) nor an address", n)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		o.secureNets = append(o.secureNets, p.Masked())
	}

	if o.backendCA != "" && o.backendTLS != "verify" {
		// A CA that nothing checks against: the certificate would
		// not be verified, whatever the CA says.
		return fmt.Errorf("--backend-ca: %q is used only with --backend-tls verify, which checks the server's certificate against it", o.backendCA)
	}
	if o.backendCA != "" {
		pem, err := os.ReadFile(o.backendCA)
		if err != nil {
			return fmt.Errorf("--backend-ca: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("--backend-ca: no PEM certificate in %q", o.backendCA)
		}
	}
	if o.binlogPasswordFile != "" {
		b, err := os.ReadFile(o.binlogPasswordFile)
		if err != nil {
			return fmt.Errorf("--binlog-password-file: %w", err)
		}
		o.binlogPassword = strings.TrimRight(string(b), "\r\n")
		if o.binlogPassword == "" {
			// A file named and empty is a mistake, not a password.
			return fmt.Errorf("--binlog-password-file: %q is empty", o.binlogPasswordFile)
		}
	} else {
		v, set := os.LookupEnv("MYCACHED_BINLOG_PASSWORD")
		if set && v == "" && o.binlogUser != "" {
			// Set and empty is a mistake too (an empty line in an
			// environment file); a user without a password sets none.
			return errors.New("--binlog-user: MYCACHED_BINLOG_PASSWORD is set but empty")
		}
		o.binlogPassword = v
	}
	if o.stateDir != "" {
		// Made when missing; anything else in its place is a mistake
		// to say at once, not after connecting.
		if fi, err := os.Stat(o.stateDir); err == nil && !fi.IsDir() {
			return fmt.Errorf("--state-dir: %q is not a directory", o.stateDir)
		}
	}
	if o.binlogServerID > 1<<32-1 {
		return fmt.Errorf("--binlog-server-id: %d is more than 4294967295", o.binlogServerID)
	}
	if o.maxStaleness <= 0 {
		return errors.New("--max-staleness: must be more than 0")
	}
	if o.peerListen != "" && (len(o.memcached) == 0 || o.backend == "") {
		return errors.New("--peer-listen: needs --memcached and --backend")
	}
	if o.peerAdvertise != "" && o.peerListen == "" {
		return errors.New("--peer-advertise: needs --peer-listen")
	}
	if o.peerSecretFile != "" && o.peerListen == "" {
		return errors.New("--peer-secret-file: needs --peer-listen")
	}
	secret, from := os.Getenv("MYCACHED_PEER_SECRET"), "MYCACHED_PEER_SECRET"
	if o.peerSecretFile != "" {
		b, err := os.ReadFile(o.peerSecretFile)
		if err != nil {
			return fmt.Errorf("--peer-secret-file: %w", err)
		}
		if secret = strings.TrimRight(string(b), "\r\n"); secret == "" {
			return fmt.Errorf("--peer-secret-file: %q is empty", o.peerSecretFile)
		}
		from = "--peer-secret-file"
	}
	if secret != "" && o.peerListen != "" {
		if len(secret) < 16 {
			return fmt.Errorf("%s: the secret must be at least 16 bytes", from)
		}
		o.peerSecret = []byte(secret)
	}
	// Each of these would otherwise fall back to its default, which is
	// not what a 0 asks for.
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"kv-timeout", o.kvTimeout}, {"default-ttl", o.defaultTTL}, {"memcached-timeout", o.memcachedTimeout}, {"policy-timeout", o.policyTimeout},
		{"connect-timeout", o.connectTimeout}, {"shutdown-timeout", o.shutdownTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("--%s: must be more than 0", d.flag)
		}
	}
	if err := mysqlproxy.CheckKVPrefix(o.kvPrefix); err != nil {
		return fmt.Errorf("--kv-prefix: %w", err)
	}
	if o.kvUsersFile != "" {
		users, passwords, err := readUsersFile(o.kvUsersFile)
		if err != nil {
			return fmt.Errorf("--kv-users-file: %w", err)
		}
		o.kvUsers = append(o.kvUsers, users...)
		o.kvPasswords = passwords
	}
	if o.kvListen != "" && len(o.kvPasswords) == 0 {
		// Nothing behind the kv-only listener checks passwords but mycached:
		// without users and passwords it would have to let in everyone.
		return errors.New("--kv-listen: needs users with passwords: lines user:password in --kv-users-file")
	}

	ints := []struct {
		flag string
		n    int64
	}{{"compress-min-bytes", o.compressMinBytes}, {"kv-max-bytes", o.kvMaxBytes}, {"max-packet", o.maxPacket}, {"policy-memory", o.policyMemory}}
	for _, i := range ints {
		if i.n > 1<<31-1 {
			return fmt.Errorf("--%s: %s is more than 2GiB", i.flag, formatSize(i.n))
		}
	}
	if o.maxPacket < 1024 {
		// MariaDB's own floor for max_allowed_packet.
		return errors.New("--max-packet: must be at least 1KiB")
	}
	if o.fillMemory == 0 {
		return errors.New("--fill-memory: must be more than 0")
	}
	if o.kvMaxBytes == 0 {
		return errors.New("--kv-max-bytes: must be more than 0")
	}
	if o.policyMemory == 0 {
		return errors.New("--policy-memory: must be more than 0")
	}
	if o.maxResultBytes == 0 {
		return errors.New("--max-result-bytes: must be more than 0 (--passthrough caches nothing)")
	}
	return nil
}

// checkAddr accepts host:port with a numeric port.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has no valid port number", addr)
	}
	return nil
}

// readUsersFile reads the --kv-users-file: one user per line, blank lines
// and lines starting with # skipped. A line "user" names a user for
// --kv-users, as the file always did. A line "user:password" does that too,
// and also lets the user into --kv-listen with that password; the password
// is the rest of the line after the first ":" (surrounding blanks are
// trimmed), in the clear or as MySQL's "*" + 40 hex digits hash. passwords
// is nil when no line has one.
func readUsersFile(path string) (users []string, passwords map[string]string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pw, hasPW := strings.Cut(line, ":")
		user = strings.TrimSpace(user)
		if user == "" {
			return nil, nil, fmt.Errorf("%s:%d: no user name before the \":\"", path, n)
		}
		users = append(users, user)
		if hasPW && strings.TrimSpace(pw) == "" {
			// Anyone could log in to --kv-listen as user.
			return nil, nil, fmt.Errorf("%s:%d: an empty password after %q; give one, or drop the \":\" to name a user of --listen only", path, n, user+":")
		}
		if hasPW {
			if passwords == nil {
				passwords = make(map[string]string)
			}
			passwords[user] = strings.TrimSpace(pw)
		}
	}
	return users, passwords, sc.Err()
}
