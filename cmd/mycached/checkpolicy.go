package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/mycached/mycached/cachepolicy"
)

// checkPolicy is "mycached check-policy FILE...": it compiles each script,
// runs it against sample statements and prints the decisions, for CI and
// for editing. It exits 0 when every script loads and its hooks run
// without failing on the samples, 1 when a hook failed (an error, its
// deadline or memory budget, a malformed result), and 2 when a script
// does not load.
func checkPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: mycached check-policy FILE...")
		return 2
	}
	status := 0
	for _, f := range args {
		out, err := cachepolicy.Check(f, nil)
		var hf *cachepolicy.HookFailures
		switch {
		case errors.As(err, &hf):
			fmt.Fprintf(stdout, "%s:\n%s", f, out)
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			status = max(status, 1)
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			status = 2
		default:
			fmt.Fprintf(stdout, "%s:\n%s", f, out)
		}
	}
	return status
}
