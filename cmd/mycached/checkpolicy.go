package main

import (
	"fmt"
	"io"

	"github.com/mycached/mycached/cachepolicy"
)

// checkPolicy is "mycached check-policy FILE...": it compiles each script,
// runs it against sample statements and prints the decisions, for CI and
// for editing. It exits 0 when every script loads, and 2 otherwise.
func checkPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: mycached check-policy FILE...")
		return 2
	}
	status := 0
	for _, f := range args {
		out, err := cachepolicy.Check(f, nil)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			status = 2
			continue
		}
		fmt.Fprintf(stdout, "%s:\n%s", f, out)
	}
	return status
}
