package main

import (
	"fmt"
	"io"
	"strings"
)

const usageHead = `Usage:
  mycached [flags]
  mycached check-policy FILE...

mycached speaks the MySQL protocol to clients, relays every statement to
MySQL or MariaDB, and caches the results of the reads its policy picks.
Point the application's DSN at --listen instead of at the database.

Sizes take a plain byte count or a unit, all powers of 1024: 512KiB, 64MB, 1G.
Durations take a unit: 50ms, 5s, 1m.
`

const usageYAML = `
Every flag may also be set in the YAML file named by --config; its keys are
the flag names without --, lists may be YAML lists or comma-separated, and a
flag on the command line wins over the file. For example:

  listen: 127.0.0.1:3307
  backend: 127.0.0.1:3306
  memcached: [127.0.0.1:11211, 127.0.0.1:11212]
  cache-memory: 512MiB
  default-ttl: 30s
  policy:
    - /etc/mycached/default.lua
    - /etc/mycached/app.lua
  admin: 127.0.0.1:9104
  tls-self-signed: true
  log-format: json

Memory: each client connection holds 256KiB of buffers (its own and its
backend connection's); while it sends a command, up to the packet limit
(the server's max_allowed_packet, within --max-packet; larger commands get
error 1153 and are never buffered); while a policy hook runs,
--policy-memory and twice the statement. Shared by all: --cache-memory,
--fill-memory for the responses of cacheable misses while they are filled
(twice each response, in 16KiB blocks, up to --max-result-bytes; what a
client does not read stays there until it does), at most 64MiB of
statement analyses, 32MiB of what the policy decided for each shape and
what each shape reads, 64MiB of entries on their way to memcached, about
10MiB for admission and 100MiB of generations. The worst case is the
shared part plus, per connection, 256KiB + the larger of the packet limit
and --policy-memory.

Signals: SIGHUP reloads the policy scripts; SIGTERM and SIGINT drain and exit.
Exit status: 0 on a clean stop, 1 when serving fails, 2 for bad configuration.
`

// writeUsage writes the --help text, listing every flag with its default.
func writeUsage(w io.Writer) {
	o := defaultOptions()
	defs := flagDefs(&o)

	width := 0
	for _, d := range defs {
		width = max(width, len(flagSyntax(d)))
	}
	var b strings.Builder
	b.WriteString(usageHead)
	group := ""
	for _, d := range defs {
		if d.group != group {
			group = d.group
			fmt.Fprintf(&b, "\n%s:\n", group)
		}
		fmt.Fprintf(&b, "  %-*s  %s%s\n", width, flagSyntax(d), d.usage, defaultNote(d))
	}
	b.WriteString(usageYAML)
	io.WriteString(w, b.String())
}

func flagSyntax(d flagDef) string {
	if d.arg == "" {
		return "--" + d.name
	}
	return "--" + d.name + " " + d.arg
}

func defaultNote(d flagDef) string {
	switch s := d.value.String(); {
	case s != "":
		return " (default " + s + ")"
	case d.unset != "":
		return " (default: " + d.unset + ")"
	}
	return " (default: none)"
}
