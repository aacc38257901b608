// Command fedwarden is the Fedwarden CLI: it runs the control plane and the
// agent, and joins, inspects and repairs a federation.
package main

import (
	"os"

	"github.com/fedwarden/fedwarden/internal/cli/root"
)

func main() {
	os.Exit(root.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
