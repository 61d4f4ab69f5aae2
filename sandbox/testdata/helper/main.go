// Command helper is a sandbox helper and nothing else: the exec fuzzer
// (fuzz_test.go) builds it without the race detector, whose start-up cost
// would otherwise be paid twice by every script it runs.
package main

import (
	"fmt"
	"os"

	"github.com/tollgate-dev/tollgate/sandbox"
)

func main() {
	sandbox.Main()
	fmt.Fprintln(os.Stderr, "helper: only a sandbox helper")
	os.Exit(2)
}
