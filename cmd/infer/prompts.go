package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/stride-lm/stride/model/tokenizer"
)

// prompt is one prompt to run and where it came from, so an error can
// point at it: "prompt 2" (the second --prompt), or "prompts.txt line 3".
type prompt struct {
	text  string
	where string
}

// promptList returns the prompts to run, from exactly one source: the
// positional words (joined by spaces: one prompt), the prompt key
// (repeated --prompt/-p flags, INFER_PROMPT, or a string or list in the
// config file), the prompt_file key (-f: the whole file is one prompt),
// or the lines of the prompts file. "-" for -p, -f or --prompts reads
// standard input. With none of them, standard input is the prompt when
// it is not a terminal; an empty one (or none) is one empty prompt.
// Setting two sources is an error: neither silently wins.
func promptList(a *app, in io.Reader, args []string) ([]prompt, error) {
	texts, path, file := a.cfg.Strings("prompt"), a.cfg.Path("prompts"), a.cfg.Path("prompt_file")
	var set []string
	if len(args) > 0 {
		set = append(set, "a positional prompt")
	}
	for _, k := range []struct {
		flag, key string
		on        bool
	}{{"--prompt", "prompt", len(texts) > 0}, {"--file", "prompt_file", file != ""}, {"--prompts", "prompts", path != ""}} {
		if k.on {
			set = append(set, fmt.Sprintf("%s (from %s)", k.flag, a.cfg.Source(k.key)))
		}
	}
	if len(set) > 1 {
		return nil, fmt.Errorf("%s are both set; give one of them", strings.Join(set, " and "))
	}
	switch {
	case len(args) > 0:
		return []prompt{{strings.Join(args, " "), "the prompt"}}, nil
	case path == "-":
		text, err := readStdin(in)
		if err != nil {
			return nil, err
		}
		return promptLines(text, "stdin")
	case path != "":
		return readPromptsFile(path)
	case file != "":
		text, err := readPromptFile(in, file)
		return []prompt{{text, "prompt file"}}, err
	case len(texts) == 0 && !stdinTerminal(in):
		text, err := readStdin(in)
		return []prompt{{trimNewline(text), "stdin"}}, err
	case len(texts) == 0:
		texts = []string{""}
	}
	out := make([]prompt, len(texts))
	for i, t := range texts {
		if t == "-" {
			text, err := readStdin(in)
			if err != nil {
				return nil, err
			}
			t = trimNewline(text)
		}
		out[i] = prompt{t, fmt.Sprintf("prompt %d", i+1)}
	}
	return out, nil
}

// readPromptFile is -f: a whole file (or stdin for "-") as one prompt,
// its final newline dropped as llama.cpp drops it.
func readPromptFile(in io.Reader, path string) (string, error) {
	if path == "-" {
		text, err := readStdin(in)
		return trimNewline(text), err
	}
	raw, err := readCapped(path, "prompt file")
	return trimNewline(string(raw)), err
}

// trimNewline drops one final line ending: "echo text |" gives "text".
func trimNewline(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// readPromptsFile returns the non-blank lines of a prompts file (at most
// maxInputBytes), each named by its line number in the file.
func readPromptsFile(path string) ([]prompt, error) {
	raw, err := readCapped(path, "prompts file")
	if err != nil {
		return nil, err
	}
	return promptLines(string(raw), filepath.Base(path))
}

// promptLines returns the non-blank lines of text, each named by its
// line number in name.
func promptLines(text, name string) ([]prompt, error) {
	var out []prompt
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) != "" {
			out = append(out, prompt{line, fmt.Sprintf("%s line %d", name, i+1)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("prompts file %s has no prompts", name)
	}
	return out, nil
}

// encodePrompt returns p's ids (tokenizer.PromptEncoder: BOS first when
// the tokenizer adds it, and a text certainly too long refused before it
// is encoded), or an error naming p and the limit it exceeds.
func (lm *loadedModel) encodePrompt(p prompt, seqLen int) ([]int, error) {
	if lm.enc == nil {
		lm.enc = tokenizer.NewPromptEncoder(lm.codec, lm.addBOS())
	}
	ids, err := lm.enc.Encode(p.text, seqLen)
	limit := fmt.Sprintf("seq_len %d", seqLen)
	if seqLen < lm.m.Config.SeqLen {
		limit = fmt.Sprintf("the context of %d positions (--ctx-size)", seqLen)
	}
	var long *tokenizer.PromptLengthError
	switch {
	case errors.As(err, &long) && long.Estimated:
		return nil, fmt.Errorf("%s: its %d bytes are at least %d tokens (no token is longer than %d bytes), longer than %s",
			p.where, long.Bytes, long.Tokens, long.MaxPiece, limit)
	case errors.As(err, &long):
		return nil, fmt.Errorf("%s is %d tokens, longer than %s", p.where, long.Tokens, limit)
	case errors.Is(err, tokenizer.ErrNothingToStart):
		return nil, fmt.Errorf("%s is empty and the tokenizer adds no BOS: there is nothing to start from", p.where)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", p.where, err)
	}
	return ids, nil
}

// addBOS reports whether prompts start with BOS (checkpoint.Generation's
// AddBOS): always for llama2.c's tokenizer (run.c does), else as the
// tokenizer's file says (a GGUF's tokenizer.ggml.add_bos_token,
// tokenizer_config.json's add_bos_token): Qwen's, for one, adds none, and
// feeding it a BOS would change its output.
func (lm *loadedModel) addBOS() bool { return lm.gen.AddBOS }

// requestsFor encodes every prompt for a context of ctx positions; a
// prompt that fails gets its error instead of ids.
func (lm *loadedModel) requestsFor(ps []prompt, ctx int) (ids [][]int, errs []error) {
	ids, errs = make([][]int, len(ps)), make([]error, len(ps))
	for i, p := range ps {
		ids[i], errs[i] = lm.encodePrompt(p, ctx)
	}
	return ids, errs
}
