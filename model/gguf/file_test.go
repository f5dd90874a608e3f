package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// The stories260K GGUF was written by llama.cpp's converter from
// stories260K.bin, so the legacy file is an independent oracle for what
// the reader must find in it.
func TestOpenStories260K(t *testing.T) {
	path := sharedFile(t, "models/gguf/stories260K-f32.gguf")
	bin, err := os.ReadFile(sharedFile(t, "models/stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if s, err := f.String("general.architecture"); err != nil || s != "llama" {
		t.Errorf("general.architecture = %q, %v", s, err)
	}
	// The legacy header: dim, hidden_dim, n_layers, n_heads, n_kv_heads,
	// vocab_size, seq_len as int32.
	hdr := make([]int, 7)
	for i := range hdr {
		hdr[i] = int(int32(binary.LittleEndian.Uint32(bin[4*i:])))
	}
	for key, want := range map[string]int{
		"llama.embedding_length":        hdr[0],
		"llama.feed_forward_length":     hdr[1],
		"llama.block_count":             hdr[2],
		"llama.attention.head_count":    hdr[3],
		"llama.attention.head_count_kv": hdr[4],
		"llama.context_length":          hdr[6],
	} {
		got, err := f.Uint(key)
		if err != nil || int(got) != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 512 {
		t.Fatalf("tokens: %d, %v", len(tokens), err)
	}
	scores, err := f.Float32s("tokenizer.ggml.scores")
	if err != nil || len(scores) != 512 {
		t.Fatalf("scores: %d, %v", len(scores), err)
	}
	if _, err := f.Int32s("tokenizer.ggml.token_type"); err != nil {
		t.Error(err)
	}
	if _, err := f.String("llama.embedding_length"); err == nil || !strings.Contains(err.Error(), "uint32, not string") {
		t.Errorf("type mismatch error = %v", err)
	}
	if _, err := f.Uint("no.such.key"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key error = %v, want ErrNotFound", err)
	}

	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if emb.Type != kernels.TypeF32 || !reflect.DeepEqual(emb.Shape, []int{512, 64}) || !reflect.DeepEqual(emb.Ne, []uint64{64, 512}) {
		t.Fatalf("token_embd: %s %v (ne %v)", emb.Type, emb.Shape, emb.Ne)
	}
	data, err := f.Data(emb)
	if err != nil {
		t.Fatal(err)
	}
	// The legacy file's embedding table follows its 28-byte header.
	if !bytes.Equal(data, bin[28:28+512*64*4]) {
		t.Error("token_embd.weight bytes differ from the embedding table of stories260K.bin")
	}
	if cap(data) != len(data) {
		t.Errorf("tensor view has capacity %d beyond its %d bytes", cap(data), len(data))
	}
	// Zero copy: the view lies inside the mapping.
	if &data[0] != &f.data[f.DataOffset+emb.Offset] {
		t.Error("tensor data is not a view of the mapping")
	}
	q, _ := f.Tensor("blk.0.attn_q.weight")
	k, _ := f.Tensor("blk.0.attn_k.weight")
	if !reflect.DeepEqual(q.Shape, []int{64, 64}) || !reflect.DeepEqual(k.Shape, []int{32, 64}) {
		t.Errorf("attn_q %v, attn_k %v; want [64 64], [32 64] (GQA 8/4 heads)", q.Shape, k.Shape)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Data(emb); err == nil {
		t.Error("Data after Close succeeded")
	}
}

// Rewriting a file the reader parsed gives back llama.cpp's bytes
// exactly: the header, metadata, tensor infos, padding and data of every
// reference file, including the quantized and vocab-only ones.
func TestRewriteReferenceFilesBitForBit(t *testing.T) {
	var paths []string
	for _, rel := range []string{
		"models/gguf/stories260K-f32.gguf", "models/gguf/stories260K-q8_0.gguf",
		"models/gguf/synthetic-k256-q4_k_m.gguf", "models/gguf/synthetic-k256-q4_0.gguf",
		"tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf", "tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf",
		"tokenizers/llama.cpp-vocab/ggml-vocab-starcoder.gguf",
	} {
		paths = append(paths, sharedFile(t, rel))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(orig, p)
			if err != nil {
				t.Fatal(err)
			}
			var ts []WriterTensor
			for _, ti := range f.Tensors {
				d, err := f.Data(ti)
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, WriterTensor{Name: ti.Name, Type: ti.Type, Shape: ti.Shape, Data: d})
			}
			var buf bytes.Buffer
			if err := Write(&buf, f.Metadata, ts); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			if !bytes.Equal(got, orig) {
				i := 0
				for i < len(got) && i < len(orig) && got[i] == orig[i] {
					i++
				}
				t.Fatalf("rewrite differs from the original at byte %d (lengths %d, %d)", i, len(got), len(orig))
			}
		})
	}
}
