package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/model"
)

func init() {
	registerKeys(configKey{Name: "export.out", Kind: kindPath, Default: "", Help: "file infer export writes"})
	register(newExportCmd)
}

func newExportCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the model as a llama2.c legacy checkpoint",
		Long: `export writes the model (a loaded checkpoint, or the synthetic model of the
synthetic.* keys) in llama2.c's legacy format, which run.c and Stride both
read: the fused QKV weight is split back into wq, wk and wv, half-precision
weights are widened to float32. Use it to hand the very same weights to
another engine, or to make benchmark models of a real model's shape.

The file is written to a temporary name beside --out and renamed at the
end, so a failed export never leaves a truncated checkpoint behind.`,
		Example: `  infer export --out tiny.bin
  infer export --synthetic.dim 288 --synthetic.hidden_dim 768 --synthetic.n_layers 6 \
      --synthetic.n_heads 6 --synthetic.n_kv_heads 6 --synthetic.vocab_size 32000 \
      --synthetic.seq_len 256 --out stories15M-shape.bin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := a.getPath("export.out")
			if out == "" {
				return fmt.Errorf("export: --out FILE is required")
			}
			lm, err := loadModel(a)
			if err != nil {
				return err
			}
			if err := writeCheckpoint(out, lm.m); err != nil {
				return err
			}
			c := lm.m.Config
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: dim %d, hidden %d, %d layers, %d heads, %d kv heads, vocab %d, seq_len %d (%d params)\n",
				out, c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen, c.Params())
			return nil
		},
	}
	a.flag(cmd, "checkpoint", "checkpoint", "llama2.c checkpoint to re-export; empty = the synthetic model")
	a.flag(cmd, "out", "export.out", "output file")
	syntheticFlags(a, cmd)
	return cmd
}

// writeCheckpoint writes m to path atomically (temp file + rename).
func writeCheckpoint(path string, m *model.Model) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err = model.WriteLegacy(w, m); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return nil
}
