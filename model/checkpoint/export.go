package checkpoint

import (
	"fmt"
	"io"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/llama2c"
)

// The formats Export writes (ExportOptions.Format).
const (
	// ExportLegacy is llama2.c's float32 checkpoint, the one run.c reads.
	ExportLegacy = "legacy"
	// ExportV2 is llama2.c export.py's version 2 (Q8_0 weight matrices,
	// float32 norms), the one runq.c reads.
	ExportV2 = "v2"
	// ExportGGUF is a GGUF file (version 3) that llama.cpp loads.
	ExportGGUF = "gguf"
)

// ExportOptions say what Export writes.
type ExportOptions struct {
	// Format is ExportLegacy, ExportV2 or ExportGGUF.
	Format string
	// GroupSize is ExportV2's Q8_0 group size; 0 picks
	// model.Q8GroupSize's (64, halved until it divides dim and hidden_dim).
	GroupSize int
	// GGUF is ExportGGUF's weight type and vocabulary (GGUFVocab sets
	// the vocabulary a checkpoint or tokenizer file gives).
	GGUF gguf.ExportOptions
}

// Export returns the writer of m as a checkpoint of opts.Format, and the
// format's description for a report ("llama2.c version 2, Q8_0 group
// size 4"), so that a converter knows what it writes before it starts.
func Export(m *model.Model, opts ExportOptions) (write func(io.Writer) error, desc string, err error) {
	switch opts.Format {
	case ExportLegacy:
		return func(w io.Writer) error { return llama2c.WriteLegacy(w, m) }, "llama2.c legacy, float32", nil
	case ExportV2:
		gs := opts.GroupSize
		if gs == 0 {
			gs = model.Q8GroupSize(m.Config, 0)
		}
		return func(w io.Writer) error { return llama2c.WriteV2(w, m, gs) },
			fmt.Sprintf("llama2.c version 2, Q8_0 group size %d", gs), nil
	case ExportGGUF:
		return func(w io.Writer) error { return gguf.WriteModel(w, m, opts.GGUF) }, "GGUF, " + opts.GGUF.Type.String(), nil
	}
	return nil, "", fmt.Errorf("export: format %q is not one of %s, %s or %s", opts.Format, ExportLegacy, ExportV2, ExportGGUF)
}
