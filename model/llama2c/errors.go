package llama2c

import "fmt"

// Error is a problem with a llama2.c file: what the file was read as, its
// path, and what was wrong. Every error of this package's readers is one,
// so each message is one line that starts with the file:
// "checkpoint <path>: <problem>".
type Error struct {
	// Kind is what the file was read as: "checkpoint" or "tokenizer".
	Kind string
	Path string
	// Err is what was wrong, without the path.
	Err error
}

func (e *Error) Error() string { return e.Kind + " " + e.Path + ": " + e.Err.Error() }

// Unwrap returns what was wrong, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// checkpointError is the Error of a checkpoint at path.
func checkpointError(path string, err error) *Error {
	return &Error{Kind: "checkpoint", Path: path, Err: err}
}

// checkpointErrorf is checkpointError with a formatted problem.
func checkpointErrorf(path, format string, a ...any) *Error {
	return checkpointError(path, fmt.Errorf(format, a...))
}
