package llama2c

import (
	"io"

	"github.com/stride-lm/stride/model"
)

// opened remembers the File behind each model load() built, so tests can
// look at its mapping.
var opened = map[*model.Model]*File{}

// read builds the model of a checkpoint held by r, as Read did before
// the formats left package model.
func read(r io.ReaderAt, size int64, name string, opts model.LoadOptions) (*model.Model, error) {
	f, err := NewReader(r, size, name)
	if err != nil {
		return nil, err
	}
	return model.FromSource(f, opts)
}

// load opens path (mapped unless opts.NoMmap) and builds its model.
func load(path string, opts model.LoadOptions) (*model.Model, error) {
	f, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	m, err := model.FromSource(f, opts)
	if err != nil {
		return nil, err
	}
	opened[m] = f
	return m, nil
}

// stories15MShape is the stories15M configuration.
func stories15MShape() model.Config {
	return model.Config{Dim: 288, HiddenDim: 768, NLayers: 6, NHeads: 6, NKVHeads: 6, VocabSize: 32000, SeqLen: 256,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
}
