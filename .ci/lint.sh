#!/usr/bin/env bash
# lint.sh runs the static checks of `make lint` (and so of `make test` and
# CI) on the Go module in the current directory: gofmt, go mod tidy, go vet
# and staticcheck. It runs them all, names each finding, and exits 1 if
# any check found something. GO names the go tool (default go) and
# STATICCHECK the staticcheck binary (default: staticcheck in GOBIN, or
# in GOPATH/bin; `make tools` installs it there).
set -uo pipefail

go=${GO:-go}
staticcheck=${STATICCHECK:-}
if [ -z "$staticcheck" ]; then
	bin=$($go env GOBIN)
	staticcheck=${bin:-$($go env GOPATH)/bin}/staticcheck
fi

failed=()

unformatted=$(gofmt -l .) || failed+=(gofmt)
if [ -n "$unformatted" ]; then
	echo "lint: gofmt -l: these files need gofmt -w:" >&2
	echo "$unformatted" >&2
	failed+=(gofmt)
fi

if ! $go mod tidy -diff >&2; then
	echo "lint: go.mod or go.sum is not tidy: run go mod tidy" >&2
	failed+=("go mod tidy")
fi

if ! $go vet ./...; then
	failed+=("go vet")
fi

if [ ! -x "$staticcheck" ]; then
	echo "lint: $staticcheck is missing: run make tools" >&2
	failed+=(staticcheck)
elif ! "$staticcheck" ./...; then
	failed+=(staticcheck)
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "lint: failed: ${failed[*]}" >&2
	exit 1
fi
