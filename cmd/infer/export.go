package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/gguf"
)

func init() {
	registerKeys(
		configs.Key{Name: "export.out", Kind: configs.Path, Default: "", Help: "file infer export writes"},
		configs.Key{Name: "export.format", Kind: configs.String, Default: "legacy", Allowed: []string{"legacy", "v2", "gguf"},
			Help: "checkpoint format: legacy (float32, run.c), v2 (Q8_0, runq.c) or gguf (llama.cpp)"},
		configs.Key{Name: "export.type", Kind: configs.String, Default: "f32", Allowed: []string{"f32", "f16", "q8_0", "q4_1", "q5_0", "q5_1"},
			Help: "gguf weight type: f32, f16, or a ggml block type of 32 weights: q8_0, q4_1, q5_0 or q5_1"},
		configs.Key{Name: "export.group_size", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0),
			Help: "v2 Q8_0 group size; 0 = 64, halved until it divides dim and hidden_dim"},
	)
	register(newExportCmd)
}

func newExportCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the model as a llama2.c checkpoint (legacy float32 or version-2 Q8_0)",
		Long: `export writes the model (a loaded checkpoint, the built-in stories260K
without --checkpoint, or with --checkpoint synthetic the synthetic model of the
synthetic.* keys) as a llama2.c checkpoint that both llama2.c and Stride read.

--format legacy (the default) is the float32 format run.c reads: the fused QKV
weight is split back into wq, wk and wv, half-precision weights are widened to
float32 (exactly), Q8_0 weights (from a v2 checkpoint) are dequantized.

--format v2 is export.py's version 2, the format runq.c reads: float32 norms,
and every weight matrix as int8 values with one float32 scale per
--group-size weights (scale = max|w|/127, q = round(w/scale)): about a
quarter of the float32 size. The group size must divide dim and hidden_dim so
that no group straddles two rows; 0 picks 64 and halves it until it does
(stories260K, hidden_dim 172, gets 4). A v2 checkpoint re-exported with its
own group size is copied byte for byte.

--format gguf writes a GGUF file (version 3) that llama.cpp loads, with
--type f32, f16, q8_0, q4_1, q5_0 or q5_1 weight matrices (the block types as
llama-quantize makes them with no importance matrix, with its F16 fallback
for rows that are not whole blocks of 32; norms stay F32) and the vocabulary of --tokenizer (a llama2.c tokenizer.bin, or a GGUF
whose tokenizer.* keys are copied as they are: merges, pre-tokenizer and
special token ids included) or of the GGUF being re-exported. stories260K.bin with tok512.bin as f32 is, byte for
byte, the file llama.cpp's llama-convert-llama2c-to-ggml writes.


A regular file (or a new path) at --out is written to a temporary file beside
it, fsynced and renamed at the end, so a failed or interrupted export never
leaves a truncated checkpoint or a temporary file behind; a symlink is
followed to the file it names. A new file gets mode 0666 minus the umask, a
replaced one keeps its mode. A FIFO or character device (/dev/stdout) is
written through; a directory, socket or block device is refused.`,
		Example: `  infer export --out tiny.bin
  infer export --checkpoint stories15M.bin --format v2 --out stories15M-q80.bin
  infer export --synthetic.dim 288 --synthetic.hidden_dim 768 --synthetic.n_layers 6 \
      --synthetic.n_heads 6 --synthetic.n_kv_heads 6 --synthetic.vocab_size 32000 \
      --synthetic.seq_len 256 --out stories15M-shape.bin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runExport(a, cmd) },
	}
	a.flag(cmd, "checkpoint", "checkpoint", "checkpoint to re-export; empty = the built-in stories260K; synthetic = the synthetic model")
	a.flag(cmd, "out", "export.out", "output file")
	a.flag(cmd, "format", "export.format", "checkpoint format")
	a.flag(cmd, "group-size", "export.group_size", "Q8_0 group size of --format v2; 0 = auto")
	a.flag(cmd, "type", "export.type", "weight type of --format gguf")
	a.flag(cmd, "tokenizer", "tokenizer", "llama2.c tokenizer.bin, or a GGUF whose tokenizer to copy, to embed in a GGUF")
	syntheticFlags(a, cmd)
	return cmd
}

// runExport checks that --group-size and --type go with their --format,
// loads the model, writes it to --out and reports its size and shape.
func runExport(a *app, cmd *cobra.Command) error {
	out := a.cfg.Path("export.out")
	if out == "" {
		return fmt.Errorf("export: --out FILE is required")
	}
	format, gs := a.cfg.String("export.format"), a.cfg.Int("export.group_size")
	if format != "v2" && gs != 0 {
		return fmt.Errorf("export: --group-size applies to --format v2 only")
	}
	if format != "gguf" && a.cfg.String("export.type") != "f32" {
		return fmt.Errorf("export: --type applies to --format gguf only")
	}
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close()
	desc, write, err := checkpointWriter(a, lm, format, gs)
	if err != nil {
		return err
	}
	if bar := newProgress(cmd.ErrOrStderr(), "export "+out, 0); bar != nil {
		bar.bytes = true
		defer bar.done()
		write = withProgress(write, bar)
	}
	size, err := writeCheckpoint(cmd.Context(), out, write)
	if err != nil {
		return err
	}
	c := lm.m.Config
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s, %d bytes): dim %d, hidden %d, %d layers, %d heads, %d kv heads, vocab %d, seq_len %d (%d params)\n",
		out, desc, size, c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen, c.Params())
	return err
}

// checkpointWriter returns the writer of lm in format (legacy, v2 with
// Q8_0 group size gs, or gguf: checkpoint.Export) and the format's
// description for the report.
func checkpointWriter(a *app, lm *loadedModel, format string, gs int) (string, func(io.Writer) error, error) {
	opts := checkpoint.ExportOptions{Format: format, GroupSize: gs}
	if format == checkpoint.ExportGGUF {
		var err error
		if opts.GGUF, err = ggufExportOptions(a, lm); err != nil {
			return "", nil, err
		}
	}
	write, desc, err := checkpoint.Export(lm.m, opts)
	return desc, write, err
}

// withProgress wraps write so that the bytes it writes advance bar; the
// buffer in between updates the bar once a MiB, not on every small write.
func withProgress(write func(io.Writer) error, bar *progress) func(io.Writer) error {
	return func(w io.Writer) error {
		pw := bufio.NewWriterSize(&progressWriter{w: w, p: bar}, 1<<20)
		if err := write(pw); err != nil {
			return err
		}
		return pw.Flush()
	}
}

// ggufExportOptions reads --type and finds the vocabulary to embed
// (checkpoint.GGUFVocab): the --tokenizer file's, else the GGUF
// checkpoint's own.
func ggufExportOptions(a *app, lm *loadedModel) (gguf.ExportOptions, error) {
	typ, ok := gguf.ExportType(a.cfg.String("export.type"))
	if !ok {
		return gguf.ExportOptions{}, fmt.Errorf("export: --type %q is not one of f32, f16, q8_0, q4_1, q5_0 or q5_1", a.cfg.String("export.type"))
	}
	opts := gguf.ExportOptions{Type: typ}
	err := checkpoint.GGUFVocab(&opts, a.cfg.Path("tokenizer"), a.cfg.Path("checkpoint"), lm.codec, lm.m.Config.VocabSize)
	return opts, err
}

// writeCheckpoint runs write into path through package outfile (a
// temporary file renamed over a regular target once complete, or written
// through to a FIFO or device) and returns the bytes written. On any
// error, an interrupt included, the temporary file is removed.
func writeCheckpoint(ctx context.Context, path string, write func(io.Writer) error) (int64, error) {
	f, err := outfile.Create(ctx, path)
	if err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	defer f.Abort()
	cw := &countingWriter{w: f}
	w := bufio.NewWriterSize(cw, 1<<20)
	if err := write(w); err != nil {
		return 0, fmt.Errorf("export %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("export %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return 0, fmt.Errorf("export %s: %w", path, err)
	}
	return cw.n, nil
}

// countingWriter counts the bytes that reached w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
