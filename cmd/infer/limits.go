package main

import (
	"fmt"
	"io"
	"os"

	"github.com/stride-lm/stride/tensor"
)

// Every size a user or a file can choose is checked here before it is
// allocated, so a typo gets a one-line error instead of the Go runtime's
// "out of memory" and a stack trace.

// maxInputBytes caps what --prompts and standard input read (/dev/zero,
// or a log file given by mistake, must not exhaust memory), as
// configs.MaxFileBytes caps --config. A prompts file this large is
// already far beyond any model's context.
const maxInputBytes = 16 << 20

// maxThreads caps --threads: far above any machine's core count, far
// below the point where worker stacks alone exhaust memory.
const maxThreads = 1024

// readCapped reads a whole file of at most maxInputBytes; what names the
// file in errors ("prompts file", "dataset").
func readCapped(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if len(data) > maxInputBytes {
		return nil, fmt.Errorf("%s %s is larger than %s, the most it may be", what, path, tensor.FormatBytes(maxInputBytes))
	}
	return data, nil
}
