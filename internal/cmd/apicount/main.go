// Command apicount counts the exported identifiers of tollgate's public
// API: the non-test Go files of every package outside internal/ and cmd/
// (and outside testdata, hidden directories and programs: package main).
// Each is counted once per package, whatever the build tags of its file.
// The total is what a caller can name at a package's level or call:
//
//   - types, funcs, and package-level consts and vars with an exported name;
//   - methods with an exported name on an exported type;
//   - the exported methods of exported interface types (an embedded
//     interface counts once, by its name).
//
// The exported fields of exported struct types are reported beside it, and
// counted in the total with -fields.
//
//	go run ./internal/cmd/apicount [-fields] [-list] [DIR]
//
// It prints the total and the count of each kind; -list prints every
// identifier counted, one a line, as "KIND pkg.Name" (methods and fields as
// pkg.Type.Name).
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

func main() {
	fields := flag.Bool("fields", false, "count the exported fields of exported struct types in the total")
	list := flag.Bool("list", false, "print every identifier counted")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	c, err := countDir(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	counted := []string{kindType, kindFunc, kindMethod, kindIface, kindConst, kindVar}
	if *fields {
		counted = append(counted, kindField)
	}
	fmt.Printf("%d exported identifiers\n", c.Total(counted...))
	for _, k := range kinds {
		fmt.Printf("  %-18s %d\n", k, len(c[k]))
	}
	if *list {
		for _, k := range counted {
			ids := make([]string, 0, len(c[k]))
			for id := range c[k] {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				fmt.Printf("%s %s\n", strings.ReplaceAll(k, " ", "-"), id)
			}
		}
	}
}
