// Command archcheck keeps docs/architecture.md true. Run from the module
// root:
//
//	go run ./scripts/archcheck          # import rules: exit 1 on a violation
//	go run ./scripts/archcheck -sizes   # files over 600 lines, functions over 80 (report only)
//
// The import rules (rules.go) say, per package, which packages of the
// module and which outside modules it may import; `go list` supplies what
// each package (tests excluded) really imports. A package without a rule
// is a violation too, so a new package has to be placed in the graph.
// Packages marked planned may be missing. The same check runs in
// `go test ./...` (TestImportRules).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	sizes := flag.Bool("sizes", false, "report files over 600 lines and functions over 80 lines instead of checking imports (never fails)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "archcheck: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *sizes {
		rs, err := sizeReport(".")
		if err != nil {
			fmt.Fprintln(os.Stderr, "archcheck:", err)
			os.Exit(1)
		}
		printSizes(os.Stdout, rs)
		return
	}
	_, pkgs, err := listPackages(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "archcheck:", err)
		os.Exit(1)
	}
	if bad := checkImports(rules, pkgs); len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, "archcheck:", b)
		}
		os.Exit(1)
	}
	fmt.Printf("archcheck: %d packages follow the import rules\n", len(pkgs))
}
