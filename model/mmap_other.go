//go:build !unix

package model

import (
	"errors"
	"os"
)

// mmapSupported reports whether Load can map checkpoints on this
// platform: not here, so Load reads the file into memory (Read).
const mmapSupported = false

func mapFile(f *os.File, size int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile(data []byte) error { return nil }
