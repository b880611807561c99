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
	'nginx-light=command -v nginx || test -x /usr/sbin/nginx'

.PHONY: deps test lint build

# deps installs the missing packages when run as root on Debian; otherwise
# it lists them and carries on, and the tests that need them fail clearly.
deps:
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

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

lint:
	@unformatted=$$(gofmt -l .)
	if [ -n "$$unformatted" ]; then
		echo "gofmt needed on:" >&2; echo "$$unformatted" >&2; exit 1
	fi
	$(GO) vet ./...
	if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "lint: staticcheck not installed, skipped"; fi

build:
	$(GO) build -o bin/ ./cmd/...
