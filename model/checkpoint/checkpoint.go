// Package checkpoint opens a model checkpoint of any supported format,
// chosen by what the file is, never by its name: a directory is a Hugging
// Face checkpoint, a file that starts with "GGUF" is a GGUF file, and
// anything else is tried as a llama2.c checkpoint, the one format with no
// magic (its header's validation then says what is wrong with it). A new
// format adds one case to Open.
package checkpoint

import (
	"fmt"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/mapfile"
)

// Open opens the checkpoint at path as a model.Source. The path must be a
// regular file or a directory: it is opened non-blocking and fstat'ed, so
// a FIFO or a device is refused at once. opts.NoMmap makes formats read
// instead of mapping. Errors read "checkpoint <path>: <problem>".
func Open(path string, opts model.LoadOptions) (model.Source, error) {
	f, st, err := mapfile.Open(path, true)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("checkpoint %s: is a directory; Hugging Face checkpoint directories are not supported yet", path)
	}
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); n == len(magic) && string(magic[:]) == gguf.Magic {
		defer f.Close() // the mapping outlives the descriptor
		src, err := gguf.OpenSourceFile(f, path, opts)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return src, nil
	}
	src, err := llama2c.OpenFile(f, path, opts)
	if err != nil {
		return nil, err
	}
	return src, nil
}

// Load opens the checkpoint at path and builds its model
// (model.FromSource). The model owns the file: Model.Close releases it.
func Load(path string, opts model.LoadOptions) (*model.Model, error) {
	src, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	return model.FromSource(src, opts)
}
