package main

import (
	"fmt"
	"os"
)

// checkPolicy is the "mycached check-policy FILE..." subcommand, which will
// load policy scripts and report their errors without starting the proxy.
// The name is reserved now so that scripts and packaging can rely on it; it
// does its work once the cachepolicy engine can be called from here.
func checkPolicy(args []string) int {
	_ = args
	fmt.Fprintln(os.Stderr, "check-policy: not available in this build")
	return 2
}
