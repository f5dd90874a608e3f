package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/mapfile"
)

func tiny(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.Synthesize(model.Config{Dim: 16, HiddenDim: 24, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 300,
		SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenByMagicNotExtension: the format comes from the bytes. A
// llama2.c file named .gguf is a llama2.c checkpoint, a file that starts
// with "GGUF" is GGUF whatever its name.
func TestOpenByMagicNotExtension(t *testing.T) {
	m := tiny(t)
	var leg, v2 bytes.Buffer
	if err := llama2c.WriteLegacy(&leg, m); err != nil {
		t.Fatal(err)
	}
	if err := llama2c.WriteV2(&v2, m, 8); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]llama2c.Format{"legacy.gguf": llama2c.FormatLegacy, "v2.safetensors": llama2c.FormatV2} {
		data := leg.Bytes()
		if want == llama2c.FormatV2 {
			data = v2.Bytes()
		}
		src, err := OpenSource(write(t, name, data), model.LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, ok := src.(*llama2c.File)
		if !ok || f.Header().Format != want {
			t.Fatalf("%s: opened as %T, want a %v llama2c.File", name, src, want)
		}
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
	}
	gguf := append([]byte("GGUF"), make([]byte, 60)...)
	_, err := OpenSource(write(t, "model.bin", gguf), model.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "GGUF") {
		t.Fatalf("GGUF magic in a .bin: got %v", err)
	}
}

// TestLoad: Checkpoint.Load builds the model the file holds, mapped or
// read.
func TestLoad(t *testing.T) {
	m := tiny(t)
	var buf bytes.Buffer
	if err := llama2c.WriteLegacy(&buf, m); err != nil {
		t.Fatal(err)
	}
	path := write(t, "m.bin", buf.Bytes())
	for _, noMmap := range []bool{false, true} {
		ck, err := Open(path, Options{Load: model.LoadOptions{NoMmap: noMmap}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ck.Load()
		if err != nil {
			t.Fatal(err)
		}
		if got.Config != m.Config {
			t.Fatalf("config %+v, want %+v", got.Config, m.Config)
		}
		var again bytes.Buffer
		if err := llama2c.WriteLegacy(&again, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), buf.Bytes()) {
			t.Fatalf("noMmap=%v: loaded model writes back differently", noMmap)
		}
		if mapped, _ := got.MappedBytes(); (mapped == 0) != (noMmap || !mapfile.Supported) {
			t.Fatalf("noMmap=%v: %d bytes mapped", noMmap, mapped)
		}
		if err := got.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenRejects: what is not a checkpoint gets one line naming the path.
func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Logf("no FIFO case: %v", err)
		fifo = ""
	}
	cases := map[string]string{
		dir:                          "is a directory without config.json, so not a Hugging Face checkpoint",
		filepath.Join(dir, "absent"): "no such file",
		write(t, "junk.bin", []byte("this is not a checkpoint at all")): "invalid llama2.c legacy header",
		write(t, "empty.bin", nil):                                      "too short for a header",
	}
	if fifo != "" {
		cases[fifo] = "not a regular file (a named pipe)"
	}
	for path, want := range cases {
		_, err := OpenSource(path, model.LoadOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), "checkpoint "+path+": ") || !strings.Contains(err.Error(), want) ||
			strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: got %v, want one line naming it and saying %q", path, err, want)
		}
		if path == fifo && !errors.Is(err, mapfile.ErrNotRegular) {
			t.Fatalf("FIFO: %v does not wrap mapfile.ErrNotRegular", err)
		}
	}
}

// TestOpenGGUFByMagic: a GGUF file opens as a gguf.Source whatever its
// name, mapped or (NoMmap) read, and Load builds the model it holds.
func TestOpenGGUFByMagic(t *testing.T) {
	dir := os.Getenv("STRIDE_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared")
	}
	data, err := os.ReadFile(filepath.Join(dir, "models", "gguf", "stories260K-f32.gguf"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("skipping: shared fixture not available: %v", err)
	}
	p := write(t, "weights.bin", data)
	for _, noMmap := range []bool{false, true} {
		src, err := OpenSource(p, model.LoadOptions{NoMmap: noMmap})
		if err != nil {
			t.Fatal(err)
		}
		s, ok := src.(*gguf.Source)
		if !ok {
			t.Fatalf("opened as %T, want *gguf.Source", src)
		}
		if mapped := s.MappedBytes() > 0; mapped == noMmap {
			t.Errorf("NoMmap=%v: MappedBytes %d", noMmap, s.MappedBytes())
		}
		m, err := model.FromSource(src, model.LoadOptions{NoMmap: noMmap, AsStored: true})
		if err != nil {
			t.Fatal(err)
		}
		if c := m.Config; c.Dim != 64 || c.NLayers != 5 || c.NKVHeads != 4 || c.VocabSize != 512 {
			t.Errorf("config %+v", c)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
