package model_test

import (
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
)

// The internal tests load checkpoints through model.Load (load_test.go),
// which this installs: an external test package may import a package that
// imports model.
func init() { model.SetTestLoad(load) }

// load opens the checkpoint at path and builds its model.
func load(path string, opts model.LoadOptions) (*model.Model, error) {
	ck, err := checkpoint.Open(path, checkpoint.Options{Load: opts})
	if err != nil {
		return nil, err
	}
	m, err := ck.Load()
	if err != nil {
		ck.Close()
	}
	return m, err
}
