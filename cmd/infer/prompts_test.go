package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
)

// FuzzReadPromptsFile: any file gives either an error or prompts that are
// non-blank lines of the file, each named by its true line number.
func FuzzReadPromptsFile(f *testing.F) {
	for _, s := range []string{"a\nb\n", "\n\n x\r\n", "", "\r\n\r\n", "one", "a\n\n\nb\r\nc"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(dir, "p.txt")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ps, err := readPromptsFile(p)
		if err != nil {
			if strings.TrimSpace(text) != "" {
				t.Fatalf("%q: %v", text, err)
			}
			return
		}
		lines := strings.Split(text, "\n")
		for _, pr := range ps {
			var n int
			if _, err := fmt.Sscanf(pr.where, "p.txt line %d", &n); err != nil || n < 1 || n > len(lines) {
				t.Fatalf("%q: prompt named %q", text, pr.where)
			}
			if want := strings.TrimSuffix(lines[n-1], "\r"); pr.text != want || strings.TrimSpace(pr.text) == "" {
				t.Fatalf("%q: %s is %q, want %q", text, pr.where, pr.text, want)
			}
		}
	})
}

// bosCodec encodes each byte as its own id and adds BOS (id 1) only when
// asked, reporting addBOS as a GGUF or tokenizer.json tokenizer would.
type bosCodec struct{ addBOS bool }

func (c bosCodec) Encode(text string, bos, eos bool) ([]int, error) {
	var ids []int
	if bos {
		ids = append(ids, 1)
	}
	for i := 0; i < len(text); i++ {
		ids = append(ids, 3+int(text[i]))
	}
	return ids, nil
}
func (bosCodec) Decode(prev, tok int) string { return string(rune(tok - 3)) }
func (bosCodec) VocabSize() int              { return 259 }
func (bosCodec) BOS() int                    { return 1 }
func (bosCodec) EOS() int                    { return 2 }
func (c bosCodec) AddBOS() bool              { return c.addBOS }

// TestEncodePromptFollowsAddBOS: a prompt starts with BOS exactly when the
// tokenizer's file says so (Qwen's adds none), and an empty prompt with no
// BOS to start from is refused by name instead of reaching the engine.
func TestEncodePromptFollowsAddBOS(t *testing.T) {
	for _, add := range []bool{true, false} {
		lm := &loadedModel{m: &model.Model{Config: model.Config{SeqLen: 16}}, codec: bosCodec{addBOS: add}, gen: checkpoint.Generation{BOS: 1, AddBOS: add}}
		ids, err := lm.encodePrompt(prompt{text: "ab", where: "prompt 1"}, 16)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids[0] == 1; got != add || len(ids) != 2+map[bool]int{true: 1}[add] {
			t.Errorf("add_bos %v: ids %v", add, ids)
		}
	}
	lm := &loadedModel{m: &model.Model{Config: model.Config{SeqLen: 16}}, codec: bosCodec{}, gen: checkpoint.Generation{BOS: 1}}
	if _, err := lm.encodePrompt(prompt{text: "", where: "prompt 1"}, 16); err == nil || !strings.Contains(err.Error(), "prompt 1 is empty") {
		t.Errorf("empty prompt without BOS: %v", err)
	}
}
