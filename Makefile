# Targets for building, testing and linting mycached. `make test` is what
# CI runs (see .ci/run).

GO ?= go

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.ONESHELL:

# Debian packages the tests and benchmarks need, installed by `deps`.
# Each entry is package=check, where check succeeds when it is present.
DEPS_CHECKS := \
	'mariadb-server=command -v mariadbd || test -x /usr/sbin/mariadbd' \
	'mariadb-client=command -v mariadb' \
	'memcached=command -v memcached || test -x /usr/bin/memcached' \
	'sysbench=command -v sysbench' \
	'python3-pymysql=/usr/bin/python3 -c "import pymysql"' \
	'nginx-light=command -v nginx || test -x /usr/sbin/nginx' \
	'default-jdk-headless=command -v javac' \
	'libhibernate3-java=test -f /usr/share/java/hibernate3.jar' \
	'libmariadb-java=test -f /usr/share/java/mariadb-java-client.jar' \
	'libjavassist-java=test -f /usr/share/java/javassist.jar' \
	'libehcache-java=test -f /usr/share/java/ehcache-core.jar' \
	'libslf4j-java=test -f /usr/share/java/slf4j-nop.jar' \
	'python3-mysqldb=/usr/bin/python3 -c "import MySQLdb"' \
	'php-cli=command -v php' \
	'php-mysql=php -m | grep -qx mysqli && php -m | grep -qx pdo_mysql' \
	'ruby-mysql2=ruby -rmysql2 -e 1' \
	'libdbd-mariadb-perl=perl -MDBD::MariaDB -e 1' \
	'node-mysql=command -v node && test -f /usr/share/nodejs/mysql/index.js' \
	'mariadb-test=test -f /usr/share/mysql/mysql-test/mariadb-test-run.pl' \
	'chromium=command -v chromium' \
	'systemd=command -v systemd-analyze'

.PHONY: deps tools test lint build fuzz

# staticcheck is installed by `tools` (and so by `deps`) where `go install`
# puts it: GOBIN, or GOPATH/bin. lint calls it by that path, so a PATH
# without it does not matter.
STATICCHECK_VERSION := v0.8.2
GOBIN_DIR := $(shell d=$$($(GO) env GOBIN); echo "$${d:-$$($(GO) env GOPATH)/bin}")
STATICCHECK := $(GOBIN_DIR)/staticcheck

# tools installs staticcheck $(STATICCHECK_VERSION) when it is missing or
# another version.
tools:
	@if ! "$(STATICCHECK)" -version 2>/dev/null | grep -qF "($(STATICCHECK_VERSION:v%=%))"; then
		echo "tools: installing staticcheck $(STATICCHECK_VERSION) into $(GOBIN_DIR)"
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	fi

# deps installs the missing packages when run as root on Debian; otherwise
# it lists them and carries on, and the tests that need them fail clearly.
deps: tools
	@missing=()
	for entry in $(DEPS_CHECKS); do
		pkg=$${entry%%=*}; check=$${entry#*=}
		if ! bash -c "$$check" >/dev/null 2>&1; then missing+=("$$pkg"); fi
	done
	if [ $${#missing[@]} -eq 0 ]; then exit 0; fi
	if [ "$$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
		echo "deps: missing packages: $${missing[*]} (run 'make deps' as root on Debian to install them)" >&2
		exit 0
	fi
	echo "deps: installing $${missing[*]}"
	# Keep the packages' postinst scripts from starting system services:
	# tests start their own private servers.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "$${missing[@]}"

test: deps lint
	$(GO) test -race -count=1 -timeout 20m ./...

# lint fails on an unformatted file (gofmt -l), an untidy go.mod or go.sum
# (go mod tidy -diff), a go vet finding or a staticcheck finding
# (.ci/lint.sh; mysqlproxy/internal/citest shows that each of them fails it).
lint: tools
	GO="$(GO)" STATICCHECK="$(STATICCHECK)" .ci/lint.sh

build:
	$(GO) build -o bin/ ./cmd/...

# fuzz runs every native fuzz target in the repository (each `func Fuzz` in
# a _test.go file) for FUZZTIME, one after another on one worker, so that
# it shares a machine politely. `make test` already runs their seed corpora
# (testdata/fuzz) as ordinary tests. A failure stops the run and leaves its
# input in the package's testdata/fuzz: commit it with the fix. Go 1.26's
# fuzzing coordinator may end a run with a bare "context deadline exceeded"
# as FUZZTIME expires, writing no input (go.dev/issue/75804, fixed in Go
# 1.27): that is reported, and the run goes on.
FUZZTIME ?= 5m
fuzz:
	@grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
		pkg=./$$(dirname "$${f#./}")
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do
			echo "fuzz: $$t in $$pkg for $(FUZZTIME)"
			dir=$$pkg/testdata/fuzz/$$t
			before=$$(ls "$$dir" 2>/dev/null | wc -l)
			out=$$(mktemp)
			if ! $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -parallel 1 "$$pkg" 2>&1 | tee "$$out"; then
				after=$$(ls "$$dir" 2>/dev/null | wc -l)
				if [ "$$after" = "$$before" ] && grep -q '^    context deadline exceeded$$' "$$out"; then
					echo "fuzz: $$t: the coordinator's deadline race (go.dev/issue/75804), no failing input"
				else
					rm -f "$$out"; exit 1
				fi
			fi
			rm -f "$$out"
		done
	done

# demo, bench-relay and bench-cache start their own throwaway MariaDB,
# memcached and mycached, and kill only the processes they started.
.PHONY: demo bench-relay bench-cache bench-tools

bench-tools:
	$(GO) build -o bin/ ./cmd/mycached ./cmd/mycached-bench
	$(GO) build -o bin/transparent-caching ./examples/transparent-caching

demo: deps build bench-tools
	examples/demo.sh

bench-relay: deps bench-tools
	examples/bench/relay.sh

bench-cache: deps bench-tools
	examples/bench/cache.sh

# bench runs every benchmark scenario against its baselines and writes
# bench-out/report.md and bench-out/report.png; QUICK=1 is a short smoke
# run of the same scenarios.
QUICK ?=
.PHONY: bench
bench: deps bench-tools
	QUICK=$(QUICK) examples/bench/bench.sh

# test-examples-hibernate runs only the Hibernate example
# (examples/hibernate-2lc); `make test` runs it too, with every package.
.PHONY: test-examples-hibernate
test-examples-hibernate: deps
	$(GO) test -count=1 -timeout 10m ./examples/hibernate-2lc/

# bench-kv compares SELECT "k" through mycached with a direct memcached Get
# at 1, 8 and 32 clients (examples/bench/kv.sh; table in bench-out/kv.md).
.PHONY: bench-kv
bench-kv: deps bench-tools
	examples/bench/kv.sh

# test-peers runs MariaDB's mysql-test-run over the tests listed in
# examples/peer-suites/mtr-tests.txt and go-sql-driver/mysql's own tests,
# each directly against a private MariaDB and through mycached (with its
# cache, and --passthrough), and fails if a test passes directly but not
# through mycached; test-mtr and test-driver run one suite each. Output and
# logs: peer-out/ (see examples/peer-suites/README.md). `make test` runs a
# short slice of both (examples/peer-suites/slice.txt).
.PHONY: test-peers test-mtr test-driver
test-peers: deps
	examples/peer-suites/run.sh all

test-mtr: deps
	examples/peer-suites/run.sh mtr

test-driver: deps
	examples/peer-suites/run.sh driver
