package main

import (
	"fmt"
	"io"
	"os"

	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/tensor"
)

// isGGUF reports whether the file at path starts with GGUF's magic. The
// format is told by content, never by the file name.
func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false
	}
	return string(magic[:]) == gguf.Magic
}

// loadGGUF opens a GGUF checkpoint into lm. The weights run as stored
// (--weights f32, the default, converts nothing); other dtypes are not yet
// converted from a GGUF.
func loadGGUF(lm *loadedModel, path string, wdt tensor.DType) error {
	if wdt != tensor.F32 {
		return fmt.Errorf("gguf: %s: --weights %v: a GGUF runs with its stored types for now (use --weights f32)", path, wdt)
	}
	s, err := gguf.OpenSource(path)
	if err != nil {
		return err
	}
	m, err := s.Model()
	if err != nil {
		s.Close()
		return err
	}
	lm.m, lm.name, lm.gguf, lm.stop = m, path, s, s.StopTokens()
	return nil
}
