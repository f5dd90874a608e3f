package main

import (
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run executes the CLI and returns the process exit code: 0 on success,
// 1 when a command fails (its error printed as "infer: <error>"), 2 when
// a bug panicked — the panic is recovered here and reported the same way,
// so a user never sees a Go stack trace.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "infer: internal error: %v\n", r)
			code = 2
		}
	}()
	if err := Execute(args, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "infer: %v\n", err)
		return 1
	}
	return 0
}
