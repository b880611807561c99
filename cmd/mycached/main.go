// Command mycached is the caching MySQL sidecar: it parses its flags and
// YAML file, starts the proxy and its admin endpoint, and handles signals.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain returns the exit status: 0 for a clean stop or --help, 1 when
// serving fails, 2 for bad configuration, which includes a policy script
// that does not load at startup.
func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check-policy" {
		return checkPolicy(args[1:], stdout, stderr)
	}
	opts, err := parseOptions(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mycached: %s\n", oneLine(err))
		return 2
	}
	if err := run(context.Background(), opts, stderr); err != nil {
		if policyLoadFailed(err) {
			err = fmt.Errorf("--policy: %w", err)
		}
		if opts.logFormat == "json" {
			// The log is read by a machine: the last line too.
			newLogger(opts, stderr).Error("mycached: "+oneLine(err), "exit", exitStatus(err))
		} else {
			fmt.Fprintf(stderr, "mycached: %s\n", oneLine(err))
		}
		return exitStatus(err)
	}
	return 0
}

// exitStatus is the status run's error err exits with: 2 for a policy
// that does not load, which is bad configuration, and 1 otherwise.
func exitStatus(err error) int {
	if policyLoadFailed(err) {
		return 2
	}
	return 1
}

// policyLoadFailed reports whether err is a --policy script that could not
// be read, compiled or run at startup: a configuration error, whose message
// names the file and line.
func policyLoadFailed(err error) bool {
	return errors.Is(err, cachepolicy.ErrRead) || errors.Is(err, cachepolicy.ErrCompile) ||
		errors.Is(err, cachepolicy.ErrTopLevel)
}

// oneLine keeps an error on one line, so that a supervisor's log shows it whole.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// proxy is what the daemon needs of a mysqlproxy.Server; tests use a fake.
type proxy interface {
	Serve(net.Listener) error
	ServeKV(net.Listener) error
	Shutdown(context.Context) error
	AdminHandler() http.Handler
	ReloadPolicy() error
}

// newProxy is the one place the daemon constructs the proxy.
func newProxy(cfg mysqlproxy.Config) (proxy, error) {
	s, err := mysqlproxy.NewServer(cfg)
	if err != nil {
		return nil, err // not s: a nil *Server in an interface is not nil
	}
	return s, nil
}

// proxyConfig maps the options onto mysqlproxy.Config.
func proxyConfig(o options, logger *slog.Logger) mysqlproxy.Config {
	cacheMemory := o.cacheMemory
	if cacheMemory == 0 {
		cacheMemory = -1 // on the command line 0 means off; in Config it means the default
	}
	return mysqlproxy.Config{
		Backend:             o.backend,
		ConnectTimeout:      o.connectTimeout,
		BackendTLS:          mysqlproxy.BackendTLS(o.backendTLS),
		BackendCA:           o.backendCA,
		ProxyProtocol:       o.proxyProtocol,
		SecureNetworks:      o.secureNets,
		TLS:                 o.serverTLS,
		Memcached:           o.memcached,
		MemcachedTimeout:    o.memcachedTimeout,
		BumpWait:            bumpWait(o.bumpWait),
		MemcachedGets:       o.memcachedGets,
		CacheMemory:         cacheMemory,
		MaxResultBytes:      o.maxResultBytes,
		FillMemory:          o.fillMemory,
		CompressMinBytes:    int(o.compressMinBytes),
		DefaultTTL:          o.defaultTTL,
		Passthrough:         o.passthrough,
		TableLevel:          o.tableLevel,
		CacheInTransactions: mysqlproxy.CacheInTransactions(o.cacheInTransactions),
		BinlogUser:          o.binlogUser,
		BinlogPassword:      o.binlogPassword,
		BinlogServerID:      uint32(o.binlogServerID),
		Consistency:         mysqlproxy.Consistency(o.consistency),
		MaxStaleness:        o.maxStaleness,
		PeerListen:          o.peerListen,
		PeerAdvertise:       o.peerAdvertise,
		PeerSecret:          o.peerSecret,
		StateDir:            o.stateDir,
		Policy:              o.policy,
		PolicyTimeout:       o.policyTimeout,
		PolicyMemory:        o.policyMemory,
		// Never nil: an empty --admin-users means nobody, not the default root.
		AdminUsers:       append([]string{}, o.adminUsers...),
		KVPrefix:         o.kvPrefix,
		KVMaxBytes:       int(o.kvMaxBytes),
		KVTimeout:        o.kvTimeout,
		KVMaxConnections: o.kvMaxConns,
		KVUsers:          o.kvUsers,
		KVPerUser:        o.kvPerUser,
		KVPasswords:      o.kvPasswords,
		MaxPacket:        int(o.maxPacket),
		ShutdownTimeout:  o.shutdownTimeout,
		Logger:           logger,
	}
}

// newLogger returns the slog logger that --log-format and --log-level ask for.
func newLogger(o options, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(o.logLevel)) // parseOptions allowed only valid names
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: errorText}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, hopts))
	}
	return slog.New(slog.NewTextHandler(w, hopts))
}

// reloadGrace is how long serve waits, once it has stopped serving, for
// a policy reload in progress.
var reloadGrace = 5 * time.Second

// errorText logs an error as its message. The text handler would print
// it with %+v, and the driver's errors then carry their stack traces
// into the log, dozens of lines each.
func errorText(_ []string, a slog.Attr) slog.Attr {
	if err, ok := a.Value.Any().(error); ok && a.Value.Kind() == slog.KindAny {
		a.Value = slog.StringValue(err.Error())
	}
	return a
}

// run starts the proxy and serves until ctx ends or a stop signal arrives.
func run(ctx context.Context, o options, stderr io.Writer) error {
	logger := newLogger(o, stderr)
	// Listen before building the proxy, so that a port in use fails fast and
	// leaves nothing of the proxy to tear down.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	var adminLn, kvLn net.Listener
	closeAll := func() {
		for _, l := range []net.Listener{ln, adminLn, kvLn} {
			if l != nil {
				l.Close()
			}
		}
	}
	if o.admin != "" {
		if adminLn, err = net.Listen("tcp", o.admin); err != nil {
			closeAll()
			return fmt.Errorf("--admin: %w", err)
		}
	}
	if o.kvListen != "" {
		if kvLn, err = net.Listen("tcp", o.kvListen); err != nil {
			closeAll()
			return fmt.Errorf("--kv-listen: %w", err)
		}
	}
	p, err := newProxy(proxyConfig(o, logger))
	if err != nil {
		closeAll()
		return err
	}
	addr := func(l net.Listener) string {
		if l == nil {
			return ""
		}
		return l.Addr().String()
	}
	logger.Info("mycached starting", "listen", ln.Addr().String(), "backend", o.backend,
		"memcached", strings.Join(o.memcached, ","), "admin", addr(adminLn), "kv_listen", addr(kvLn),
		"tls", o.serverTLS != nil, "backend_tls", o.backendTLS)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	return serve(ctx, logger, p, listeners{main: ln, admin: adminLn, kv: kvLn}, sigs, o.shutdownTimeout)
}

// listeners are what serve serves on; admin and kv are nil when off.
type listeners struct {
	main, admin, kv net.Listener
}

// serve runs p on ls.main, its kv-only listener on ls.kv and its admin
// handler on ls.admin when those are not nil, until ctx ends, a SIGTERM or
// SIGINT arrives on sigs, or serving fails. SIGHUP reloads the policy and
// carries on.
func serve(ctx context.Context, logger *slog.Logger, p proxy, ls listeners, sigs <-chan os.Signal, drain time.Duration) error {
	serveErr := make(chan error, 3)
	adminLn := ls.admin
	go func() { serveErr <- p.Serve(ls.main) }()
	if ls.kv != nil {
		go func() {
			if err := p.ServeKV(ls.kv); !errors.Is(err, mysqlproxy.ErrServerClosed) {
				serveErr <- fmt.Errorf("kv-listen: %w", err)
			}
		}()
	}
	var admin *http.Server
	if adminLn != nil {
		admin = &http.Server{
			Handler: p.AdminHandler(),
			// A scraper or health check needs seconds, not minutes; the
			// bounds keep a stuck client from holding a goroutine forever.
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       60 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		go func() {
			if err := admin.Serve(adminLn); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("admin: %w", err)
			}
		}()
	}

	// Reloads run off this loop, one at a time, so that it always takes
	// the next signal: signal.Notify drops one that finds the channel
	// full, and a SIGTERM behind a slow reload would be lost. SIGHUPs
	// that come during a reload make one more.
	reload := make(chan struct{}, 1)
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		for range reload {
			_ = p.ReloadPolicy() // which logs how it went
		}
	}()
	defer func() {
		// A reload stuck reading a script (a policy on a hung network
		// mount) must not keep the process from exiting: the drain is
		// over, and the state is saved.
		select {
		case <-reloaded:
		case <-time.After(reloadGrace):
			logger.Warn("a policy reload is still running (reading a script?); exiting without waiting for it")
		}
	}()
	defer close(reload)

	var failed error
wait:
	for {
		select {
		case <-ctx.Done():
			logger.Info("stopping", "reason", context.Cause(ctx))
			break wait
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				select {
				case reload <- struct{}{}:
				default: // one is queued already
				}
				continue
			}
			logger.Info("stopping", "signal", sig.String(), "drain", drain.String())
			break wait
		case err := <-serveErr:
			failed = err
			logger.Error("serving failed", "err", err)
			break wait
		}
	}

	// The drain gets its own context: ctx may be the reason we are stopping.
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := p.Shutdown(sctx); err != nil {
		logger.Warn("drain cut short; remaining connections closed", "err", err)
	}
	if admin != nil {
		if err := admin.Shutdown(sctx); err != nil {
			admin.Close()
		}
	}
	logger.Info("stopped")
	return failed
}

// bumpWait is --bump-wait as Config takes it: 0 there means the default,
// and on the command line no wait.
func bumpWait(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
