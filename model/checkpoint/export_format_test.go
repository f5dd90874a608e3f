package checkpoint_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/checkpoint/stories260k"
)

// Export writes the built-in model back as llama2.c's own file (legacy),
// as runq.c's version 2 with the group size that divides its widths, and
// refuses a format it does not know.
func TestExport(t *testing.T) {
	ck, err := checkpoint.Open("", checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ck.Load()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	write, desc, err := checkpoint.Export(m, checkpoint.ExportOptions{Format: checkpoint.ExportLegacy})
	if err != nil || desc != "llama2.c legacy, float32" {
		t.Fatalf("legacy: %q, %v", desc, err)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	// The header and weights are the file's; the legacy format's unused
	// RoPE tables at the end (freq_cis_real, freq_cis_imag) are the
	// writer's own.
	c := m.Config
	tables := 2 * c.SeqLen * (c.Dim / c.NHeads / 2) * 4
	if n := len(stories260k.Checkpoint) - tables; b.Len() != len(stories260k.Checkpoint) || !bytes.Equal(b.Bytes()[:n], stories260k.Checkpoint[:n]) {
		t.Errorf("legacy export: %d bytes, not the embedded stories260K.bin's %d header and weight bytes", b.Len(), n)
	}
	write, desc, err = checkpoint.Export(m, checkpoint.ExportOptions{Format: checkpoint.ExportV2})
	if err != nil || desc != "llama2.c version 2, Q8_0 group size 4" {
		t.Fatalf("v2: %q, %v", desc, err)
	}
	b.Reset()
	if err := write(&b); err != nil || !bytes.HasPrefix(b.Bytes(), []byte{0x32, 0x34, 0x6b, 0x61, 2, 0, 0, 0}) {
		t.Errorf("v2 export: %v, header % x, want magic ak42 and version 2", err, b.Bytes()[:min(8, b.Len())])
	}
	if _, _, err := checkpoint.Export(m, checkpoint.ExportOptions{Format: "safetensors"}); err == nil || !strings.Contains(err.Error(), `"safetensors"`) {
		t.Errorf("unknown format: %v", err)
	}
}
