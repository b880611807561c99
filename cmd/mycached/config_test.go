package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func parse(t *testing.T, args ...string) options {
	t.Helper()
	o, err := parseOptions(args, &strings.Builder{})
	if err != nil {
		t.Fatalf("parseOptions(%q): %v", args, err)
	}
	return o
}

func TestParseOptionsDefaults(t *testing.T) {
	got := parse(t)
	want := defaultOptions()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestParseOptions(t *testing.T) {
	dir := t.TempDir()
	yamlFile := writeFile(t, dir, "mycached.yaml", `
listen: 127.0.0.1:4000
backend: 127.0.0.1:4001
memcached: [127.0.0.1:11211, 127.0.0.1:11212]
policy: a.lua,b.lua
cache-memory: 64MB
default-ttl: 30s
kv-per-user: true
admin-users:
  - root
  - ops
log-format: json
`)
	users := writeFile(t, dir, "users", "# kv users\nalice\n\n  bob  \n")
	pwUsers := writeFile(t, dir, "pwusers", "# user:password\nalice\napp:s3cret:with colon\n  bob : pw  \n")

	tests := []struct {
		name  string
		args  []string
		check func(o options) (got, want any)
	}{
		{"flag", []string{"--listen", "127.0.0.1:5000"}, func(o options) (any, any) { return o.listen, "127.0.0.1:5000" }},
		{"single dash", []string{"-backend=127.0.0.1:1"}, func(o options) (any, any) { return o.backend, "127.0.0.1:1" }},
		{"comma list", []string{"--memcached", "127.0.0.1:1, 127.0.0.1:2"}, func(o options) (any, any) {
			return o.memcached, []string{"127.0.0.1:1", "127.0.0.1:2"}
		}},
		{"repeated list flag appends", []string{"--memcached", "127.0.0.1:1", "--memcached", "127.0.0.1:2"}, func(o options) (any, any) {
			return o.memcached, []string{"127.0.0.1:1", "127.0.0.1:2"}
		}},
		{"size MiB", []string{"--cache-memory", "256MiB"}, func(o options) (any, any) { return o.cacheMemory, int64(256 << 20) }},
		{"size MB is binary", []string{"--max-result-bytes", "64MB"}, func(o options) (any, any) { return o.maxResultBytes, int64(64 << 20) }},
		{"fill memory", []string{"--fill-memory", "1GiB"}, func(o options) (any, any) { return o.fillMemory, int64(1 << 30) }},
		{"size G", []string{"--kv-max-bytes", "1G"}, func(o options) (any, any) { return o.kvMaxBytes, int64(1 << 30) }},
		{"size plain", []string{"--compress-min-bytes", "1500"}, func(o options) (any, any) { return o.compressMinBytes, int64(1500) }},
		{"duration", []string{"--memcached-timeout", "20ms"}, func(o options) (any, any) { return o.memcachedTimeout, 20 * time.Millisecond }},
		{"no bump wait", []string{"--bump-wait", "0"}, func(o options) (any, any) { return bumpWait(o.bumpWait), time.Duration(-1) }},
		{"kv timeout", []string{"--kv-timeout", "250ms"}, func(o options) (any, any) { return o.kvTimeout, 250 * time.Millisecond }},
		{"kv prefix", []string{"--kv-prefix", "app/kv:"}, func(o options) (any, any) { return o.kvPrefix, "app/kv:" }},
		{"kv prefix near a reserved one", []string{"--kv-prefix", "gq:"}, func(o options) (any, any) { return o.kvPrefix, "gq:" }},
		{"kv prefix longest", []string{"--kv-prefix", strings.Repeat("k", 184)}, func(o options) (any, any) { return len(o.kvPrefix), 184 }},
		{"int", []string{"--memcached-gets", "1"}, func(o options) (any, any) { return o.memcachedGets, 1 }},
		{"enum", []string{"--backend-tls", "verify"}, func(o options) (any, any) { return o.backendTLS, "verify" }},
		{"bool", []string{"--kv-per-user"}, func(o options) (any, any) { return o.kvPerUser, true }},
		{"empty admin users", []string{"--admin-users="}, func(o options) (any, any) { return len(o.adminUsers), 0 }},
		{"kv users file adds", []string{"--kv-users", "carol", "--kv-users-file", users}, func(o options) (any, any) {
			return o.kvUsers, []string{"carol", "alice", "bob"}
		}},
		{"kv users file without passwords", []string{"--kv-users-file", users}, func(o options) (any, any) {
			return o.kvPasswords, map[string]string(nil)
		}},
		{"kv users file with passwords names users", []string{"--kv-users-file", pwUsers}, func(o options) (any, any) {
			return o.kvUsers, []string{"alice", "app", "bob"}
		}},
		{"kv users file with passwords", []string{"--kv-users-file", pwUsers}, func(o options) (any, any) {
			return o.kvPasswords, map[string]string{"app": "s3cret:with colon", "bob": "pw"}
		}},
		{"kv listen", []string{"--kv-listen", "127.0.0.1:3308", "--kv-users-file", pwUsers}, func(o options) (any, any) {
			return o.kvListen, "127.0.0.1:3308"
		}},
		{"self-signed TLS", []string{"--tls-self-signed"}, func(o options) (any, any) { return o.serverTLS != nil, true }},
		{"secure networks", []string{"--secure-networks", "10.1.2.3/8,192.168.0.7,::1"}, func(o options) (any, any) {
			return fmt.Sprint(o.secureNets), "[10.0.0.0/8 192.168.0.7/32 ::1/128]"
		}},
		{"yaml scalar", []string{"--config", yamlFile}, func(o options) (any, any) { return o.listen, "127.0.0.1:4000" }},
		{"yaml list", []string{"--config", yamlFile}, func(o options) (any, any) {
			return o.memcached, []string{"127.0.0.1:11211", "127.0.0.1:11212"}
		}},
		{"yaml comma string", []string{"--config", yamlFile}, func(o options) (any, any) { return o.policy, []string{"a.lua", "b.lua"} }},
		{"yaml size", []string{"--config", yamlFile}, func(o options) (any, any) { return o.cacheMemory, int64(64 << 20) }},
		{"yaml bool", []string{"--config", yamlFile}, func(o options) (any, any) { return o.kvPerUser, true }},
		{"yaml block list", []string{"--config", yamlFile}, func(o options) (any, any) { return o.adminUsers, []string{"root", "ops"} }},
		{"yaml leaves the rest default", []string{"--config", yamlFile}, func(o options) (any, any) { return o.shutdownTimeout, 30 * time.Second }},
		{"flag overrides yaml", []string{"--listen", "127.0.0.1:6000", "--config", yamlFile}, func(o options) (any, any) { return o.listen, "127.0.0.1:6000" }},
		{"flag after config overrides yaml", []string{"--config", yamlFile, "--log-format", "text"}, func(o options) (any, any) { return o.logFormat, "text" }},
		{"flag list replaces yaml list", []string{"--config", yamlFile, "--memcached", "127.0.0.1:9"}, func(o options) (any, any) {
			return o.memcached, []string{"127.0.0.1:9"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := tt.check(parse(t, tt.args...))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestParseOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	badKey := writeFile(t, dir, "badkey.yaml", "listen: 127.0.0.1:1\nlistne: 127.0.0.1:2\n")
	badValue := writeFile(t, dir, "badvalue.yaml", "\nbackend-tls: sometimes\n")
	badSyntax := writeFile(t, dir, "badsyntax.yaml", "listen: [\n")
	nested := writeFile(t, dir, "nested.yaml", "memcached: {a: b}\n")
	twoDocs := writeFile(t, dir, "twodocs.yaml", "listen: 127.0.0.1:1\n---\nlistne: 127.0.0.1:2\n")
	notCert := writeFile(t, dir, "cert.pem", "not a certificate\n")
	noCA := writeFile(t, dir, "ca.pem", "nothing here\n")
	namesOnly := writeFile(t, dir, "names", "alice\nbob\n")
	noName := writeFile(t, dir, "noname", "alice\n  :secret\n")
	noPassword := writeFile(t, dir, "nopassword", "alice:pw\nops: \n")
	reservedPrefix := writeFile(t, dir, "prefix.yaml", "kv-prefix: \"q:\"\n")
	longSecret := writeFile(t, dir, "secret", "0123456789abcdef\n")
	shortSecret := writeFile(t, dir, "short", "0123456789\n")
	emptySecret := writeFile(t, dir, "empty", "\n")
	peerArgs := []string{"--backend", "127.0.0.1:3306", "--memcached", "127.0.0.1:11211", "--peer-listen", "127.0.0.1:7000"}

	tests := []struct {
		name string
		args []string
		want string // a fragment the error must contain, naming the bad value
	}{
		{"unknown flag", []string{"--listne", "x"}, "--listne"},
		{"bad enum", []string{"--backend-tls", "sometimes"}, `--backend-tls: "sometimes" is not one of off, preferred, required, verify`},
		{"bad cache mode", []string{"--cache-in-transactions", "always"}, `"always"`},
		{"bad log level", []string{"--log-level", "loud"}, `--log-level: "loud"`},
		{"bad duration", []string{"--policy-timeout", "5"}, `--policy-timeout: "5"`},
		{"negative duration", []string{"--default-ttl", "-1s"}, `"-1s"`},
		{"zero kv timeout", []string{"--kv-timeout", "0s"}, "--kv-timeout: must be more than 0"},
		{"kv prefix reserved", []string{"--kv-prefix", "g:"}, `--kv-prefix: kvproxy: unusable kv prefix "g:": it overlaps "g:", which mycached reserves for generations`},
		{"kv prefix inside a reserved one", []string{"--kv-prefix", "q:kv:"}, `"q:kv:": it overlaps "q:"`},
		{"kv prefix begins a reserved one", []string{"--kv-prefix", "i"}, `"i": it overlaps "i:"`},
		{"kv prefix empty", []string{"--kv-prefix="}, `--kv-prefix: kvproxy: unusable kv prefix "": it must not be empty`},
		{"kv prefix in yaml", []string{"--config", reservedPrefix}, `--kv-prefix: kvproxy: unusable kv prefix "q:"`},
		{"kv prefix with a space", []string{"--kv-prefix", "my kv:"}, "byte 0x20 at position 2"},
		{"kv prefix with a control byte", []string{"--kv-prefix", "kv\x01:"}, "byte 0x01 at position 2"},
		{"kv prefix too long", []string{"--kv-prefix", strings.Repeat("k", 185)}, "185 bytes is more than 184"},
		{"bad size", []string{"--cache-memory", "lots"}, `--cache-memory: "lots"`},
		{"int below its minimum", []string{"--memcached-gets", "0"}, `--memcached-gets: "0" is not a whole number of at least 1`},
		{"bad size unit", []string{"--max-packet", "12XB"}, `"12XB"`},
		{"size too big", []string{"--max-packet", "4G"}, "--max-packet: 4GiB"},
		{"packet below the server's floor", []string{"--max-packet", "10"}, "--max-packet: must be at least 1KiB"},
		{"no fill memory", []string{"--fill-memory", "0"}, "--fill-memory: must be more than 0"},
		{"no ttl", []string{"--default-ttl", "0"}, "--default-ttl: must be more than 0"},
		{"no memcached timeout", []string{"--memcached-timeout", "0s"}, "--memcached-timeout: must be more than 0"},
		{"no policy timeout", []string{"--policy-timeout", "0"}, "--policy-timeout: must be more than 0"},
		{"no policy memory", []string{"--policy-memory", "0"}, "--policy-memory: must be more than 0"},
		{"no kv bytes", []string{"--kv-max-bytes", "0"}, "--kv-max-bytes: must be more than 0"},
		{"bad bool", []string{"--tls-self-signed=maybe"}, `"maybe"`},
		{"bad secure network", []string{"--secure-networks", "10.0.0.0/33"}, `--secure-networks: "10.0.0.0/33" is neither`},
		{"missing value", []string{"--backend"}, "--backend"},
		{"listen without port", []string{"--listen", "127.0.0.1"}, `--listen: "127.0.0.1"`},
		{"backend bad port", []string{"--backend", "127.0.0.1:mysql"}, `"127.0.0.1:mysql"`},
		{"memcached without port", []string{"--memcached", "127.0.0.1:11211,127.0.0.2"}, `--memcached: "127.0.0.2"`},
		{"admin without port", []string{"--admin", "localhost"}, `--admin: "localhost"`},
		{"peer listen without port", []string{"--memcached", "127.0.0.1:11211", "--peer-listen", "foo"}, `--peer-listen: "foo"`},
		{"peer advertise without port", []string{"--memcached", "127.0.0.1:11211", "--peer-listen", "127.0.0.1:0", "--peer-advertise", "10.0.0.1"}, `--peer-advertise: "10.0.0.1"`},
		{"positional", []string{"serve"}, `"serve"`},
		{"cert without key", []string{"--tls-cert", "c.pem"}, `--tls-cert: "c.pem" needs --tls-key`},
		{"key without cert", []string{"--tls-key", "k.pem"}, `--tls-key: "k.pem"`},
		{"cert and self-signed", []string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-self-signed"}, "--tls-self-signed"},
		{"unreadable cert", []string{"--tls-cert", filepath.Join(dir, "none.pem"), "--tls-key", notCert}, "none.pem"},
		{"not a cert", []string{"--tls-cert", notCert, "--tls-key", notCert}, "cert.pem"},
		{"no CA", []string{"--backend-tls", "verify", "--backend-ca", noCA}, "ca.pem"},
		{"CA without verify", []string{"--backend-ca", noCA}, "--backend-ca: " + strconv.Quote(noCA) + " is used only with --backend-tls verify"},
		{"CA with preferred", []string{"--backend-tls", "preferred", "--backend-ca", noCA}, "used only with --backend-tls verify"},
		{"kv listen without users", []string{"--kv-listen", "127.0.0.1:3308"}, "--kv-listen: needs users with passwords"},
		{"kv listen without passwords", []string{"--kv-listen", "127.0.0.1:3308", "--kv-users-file", namesOnly}, "--kv-listen: needs users with passwords"},
		{"kv listen without port", []string{"--kv-listen", "127.0.0.1"}, `--kv-listen: "127.0.0.1"`},
		{"users file line without a name", []string{"--kv-users-file", noName}, "noname:2: no user name"},
		{"users file line with an empty password", []string{"--kv-users-file", noPassword}, `nopassword:2: an empty password after "ops:"`},
		{"unreadable users file", []string{"--kv-users-file", filepath.Join(dir, "nousers")}, "nousers"},
		{"unreadable yaml", []string{"--config", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{"unknown yaml key", []string{"--config", badKey}, `badkey.yaml:2: unknown key "listne"`},
		{"bad yaml value", []string{"--config", badValue}, `badvalue.yaml:2: backend-tls: "sometimes" is not one of`},
		{"yaml syntax", []string{"--config", badSyntax}, "badsyntax.yaml"},
		{"yaml nested value", []string{"--config", nested}, "nested.yaml:1: memcached"},
		{"yaml second document", []string{"--config", twoDocs}, "twodocs.yaml:3: a second YAML document"},
		{"max result bytes zero", []string{"--max-result-bytes", "0"}, "--max-result-bytes: must be more than 0"},
		{"peer secret without peer listen", []string{"--peer-secret-file", longSecret}, "--peer-secret-file: needs --peer-listen"},
		{"short peer secret", append(peerArgs, "--peer-secret-file", shortSecret), "at least 16 bytes"},
		{"empty peer secret", append(peerArgs, "--peer-secret-file", emptySecret), "is empty"},
		{"state dir that is a file", []string{"--state-dir", emptySecret}, "--state-dir: "},
		{"empty binlog password file", []string{"--binlog-user", "b", "--binlog-password-file", emptySecret}, "--binlog-password-file: "},
		{"unreadable peer secret", append(peerArgs, "--peer-secret-file", filepath.Join(dir, "nosecret")), "nosecret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseOptions(tt.args, &strings.Builder{})
			if err == nil {
				t.Fatalf("parseOptions(%q): got no error, want one containing %q", tt.args, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseOptions(%q): got %q, want it to contain %q", tt.args, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("parseOptions(%q): got a multi-line error %q, want one line", tt.args, err)
			}
		})
	}
}

func TestParseOptionsHelp(t *testing.T) {
	var out strings.Builder
	// A flag before --help must not change the defaults that --help shows.
	_, err := parseOptions([]string{"--listen", "127.0.0.1:9", "--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(out.String(), "(default 127.0.0.1:3307)") {
		t.Errorf("help does not show the listen default:\n%s", out.String())
	}
}

func TestSizes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1048576", 1 << 20, true},
		{"512k", 512 << 10, true},
		{"512KiB", 512 << 10, true},
		{"64MB", 64 << 20, true},
		{"64 mb", 64 << 20, true},
		{"256MiB", 256 << 20, true},
		{"1G", 1 << 30, true},
		{"2TiB", 2 << 40, true},
		{"100B", 100, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"1.5G", 0, false},
		{"-1", 0, false},
		{"99999999999T", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q): got %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok {
			if back, _ := parseSize(formatSize(got)); back != got {
				t.Errorf("parseSize(formatSize(%d)) = %d, want %d", got, back, got)
			}
		}
	}
}

// TestPeerSecret: the secret comes from --peer-secret-file, without its
// line end, or else from MYCACHED_PEER_SECRET.
func TestPeerSecret(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "secret", "0123456789abcdef-file\r\n")
	args := []string{"--backend", "127.0.0.1:3306", "--memcached", "127.0.0.1:11211", "--peer-listen", "127.0.0.1:7000"}
	t.Setenv("MYCACHED_PEER_SECRET", "0123456789abcdef-env")
	o, err := parseOptions(append(args, "--peer-secret-file", file), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if string(o.peerSecret) != "0123456789abcdef-file" {
		t.Errorf("from the file: %q", o.peerSecret)
	}
	if o, err = parseOptions(args, &strings.Builder{}); err != nil || string(o.peerSecret) != "0123456789abcdef-env" {
		t.Errorf("from the environment: %q, %v", o.peerSecret, err)
	}
	// Set for the fleet, the variable is ignored by a sidecar that
	// takes no part in the links.
	if o, err = parseOptions(args[:4], &strings.Builder{}); err != nil || o.peerSecret != nil {
		t.Errorf("without --peer-listen: %q, %v", o.peerSecret, err)
	}
}

// TestBinlogPasswordFromEnvironment: MYCACHED_BINLOG_PASSWORD gives the
// follower's password; set but empty, with --binlog-user, it is refused
// as an empty --binlog-password-file is.
func TestBinlogPasswordFromEnvironment(t *testing.T) {
	args := []string{"--binlog-user", "binlog"}
	t.Setenv("MYCACHED_BINLOG_PASSWORD", "pw")
	if o, err := parseOptions(args, &strings.Builder{}); err != nil || o.binlogPassword != "pw" {
		t.Errorf("from the environment: %q, %v", o.binlogPassword, err)
	}
	t.Setenv("MYCACHED_BINLOG_PASSWORD", "")
	if _, err := parseOptions(args, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "set but empty") {
		t.Errorf("set but empty: got %v, want it refused", err)
	}
	if _, err := parseOptions(nil, &strings.Builder{}); err != nil {
		t.Errorf("set but empty, without --binlog-user: %v", err)
	}
}
