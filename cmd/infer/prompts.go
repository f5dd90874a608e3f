package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// prompt is one prompt to run and where it came from, so an error can
// point at it: "prompt 2" (the second --prompt), or "prompts.txt line 3".
type prompt struct {
	text  string
	where string
}

// promptList returns the prompts to run: the prompt key (repeated
// --prompt flags, INFER_PROMPT, or a string or list in the config file),
// else the lines of the prompts file, else one empty prompt. Setting both
// is an error: neither silently wins.
func promptList(a *app) ([]prompt, error) {
	texts, path := a.getStrings("prompt"), a.getPath("prompts")
	if len(texts) > 0 && path != "" {
		return nil, fmt.Errorf("--prompt (from %s) and --prompts (from %s) are both set; give one of them",
			a.source("prompt"), a.source("prompts"))
	}
	if path != "" {
		return readPromptsFile(path)
	}
	if len(texts) == 0 {
		texts = []string{""}
	}
	out := make([]prompt, len(texts))
	for i, t := range texts {
		out[i] = prompt{t, fmt.Sprintf("prompt %d", i+1)}
	}
	return out, nil
}

// readPromptsFile returns the non-blank lines of a prompts file (at most
// maxInputBytes), each named by its line number in the file.
func readPromptsFile(path string) ([]prompt, error) {
	raw, err := readCapped(path, "prompts file")
	if err != nil {
		return nil, err
	}
	var out []prompt
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) != "" {
			out = append(out, prompt{line, fmt.Sprintf("%s line %d", filepath.Base(path), i+1)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("prompts file %s has no prompts", path)
	}
	return out, nil
}

// encodePrompt returns p's ids (BOS first), or an error naming p when it
// is longer than seqLen. A text that is certainly too long is refused
// before it is encoded, from its byte length: every token but BOS stands
// for at most maxPieceBytes bytes of the text, so it needs at least
// 1 + ⌈len/maxPieceBytes⌉ tokens.
func (lm *loadedModel) encodePrompt(p prompt, seqLen int) ([]int, error) {
	if n := 1 + (len(p.text)+lm.maxPieceBytes()-1)/lm.maxPieceBytes(); n > seqLen {
		return nil, fmt.Errorf("%s: its %d bytes are at least %d tokens (no token is longer than %d bytes), longer than seq_len %d",
			p.where, len(p.text), n, lm.maxPieceBytes(), seqLen)
	}
	ids, err := lm.codec.Encode(p.text, lm.addBOS(), false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.where, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s is empty and the tokenizer adds no BOS: there is nothing to start from", p.where)
	}
	if len(ids) > seqLen {
		return nil, fmt.Errorf("%s is %d tokens, longer than seq_len %d", p.where, len(ids), seqLen)
	}
	return ids, nil
}

// addBOS reports whether prompts start with BOS: always for llama2.c's
// tokenizer (run.c does), else as the tokenizer's file says (a GGUF's
// tokenizer.ggml.add_bos_token, tokenizer_config.json's add_bos_token):
// Qwen's, for one, adds none, and feeding it a BOS would change its output.
func (lm *loadedModel) addBOS() bool {
	if t, ok := lm.codec.(interface {
		BOS() int
		AddBOS() bool
	}); ok {
		return t.AddBOS() && t.BOS() >= 0
	}
	return true
}

// maxPieceBytes is the longest text any token decodes to (at least 1),
// computed once per model.
func (lm *loadedModel) maxPieceBytes() int {
	if lm.maxPiece == 0 {
		lm.maxPiece = 1
		for id := 0; id < lm.codec.VocabSize(); id++ {
			// prev 0 is not BOS: the piece keeps its leading space.
			lm.maxPiece = max(lm.maxPiece, len(lm.codec.Decode(0, id)))
		}
	}
	return lm.maxPiece
}

// requestsFor encodes every prompt; a prompt that fails gets its error
// instead of ids.
func (lm *loadedModel) requestsFor(ps []prompt) (ids [][]int, errs []error) {
	ids, errs = make([][]int, len(ps)), make([]error, len(ps))
	for i, p := range ps {
		ids[i], errs[i] = lm.encodePrompt(p, lm.m.Config.SeqLen)
	}
	return ids, errs
}
