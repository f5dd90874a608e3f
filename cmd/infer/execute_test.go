package main

import (
	"context"
	"io"
)

// The in-process entry points of the tests: the CLI without signal
// handling or a context.

// run executes the CLI without signal handling (tests call it in
// process) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// Execute runs the CLI with args (without the program name), writing to
// stdout and stderr. It returns the error to report; it does not exit.
func Execute(args []string, stdout, stderr io.Writer) error {
	return ExecuteContext(context.Background(), args, stdout, stderr)
}

// executeWith is Execute with a registry of the test's own commands.
func executeWith(reg *registry, args []string, stdout, stderr io.Writer) error {
	return executeWithContext(context.Background(), reg, args, stdout, stderr)
}
