package model_test

import (
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
)

// The internal tests load checkpoints through model.Load (load_test.go),
// which this installs: an external test package may import a package that
// imports model.
func init() { model.SetTestLoad(checkpoint.Load) }
