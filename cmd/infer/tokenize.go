package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/tokenizer"
)

func init() {
	registerKeys(
		configs.Key{Name: "tokenize.output", Kind: configs.String, Default: "ids", Allowed: []string{"ids", "json"}, Help: "output of infer tokenize"},
		configs.Key{Name: "tokenize.no_bos", Kind: configs.Bool, Default: false, Help: "leave out the BOS id the tokenizer would add"},
		configs.Key{Name: "tokenize.parse_special", Kind: configs.Bool, Default: false, Help: "match control tokens written in the text as their ids; with --detokenize, print them"},
		configs.Key{Name: "tokenize.detokenize", Kind: configs.Bool, Default: false, Help: "read ids and print their text"},
	)
	register(newTokenizeCmd)
}

func newTokenizeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokenize [TEXT]",
		Short: "Print the token ids of a text (or, with --detokenize, the text of ids)",
		Long: `tokenize runs a model's tokenizer alone, like llama.cpp's llama-tokenize.

The tokenizer comes from --tokenizer FILE or from the --checkpoint FILE:
  - a GGUF file (any: a model or a vocab-only file), by its magic;
  - a Hugging Face tokenizer.json (or a directory holding one), with the
    tokenizer_config.json beside it when present;
  - otherwise a llama2.c tokenizer.bin, which has no magic.
--tokenizer wins when both are given; a llama2.c checkpoint carries no
tokenizer, so it needs --tokenizer.

The text is the argument, or with no argument all of stdin, read verbatim
(no newline stripped) and tokenized a window at a time, with the ids of
the whole text, so memory does not grow with its length (a stretch of
16 MiB with no line break or space to cut at is refused). The ids are
printed space-separated on one line;
--output json prints {"ids": [...], "pieces": [...]} with the pieces as the
vocabulary stores them ("▁", "Ġ" included).

BOS is added when the tokenizer asks for it (llama2.c: always; GGUF:
tokenizer.ggml.add_bos_token; tokenizer.json: its post-processor or
add_bos_token), and --no-bos leaves it out; EOS likewise follows the file.
Special tokens written in the text (<|eot_id|>, <s>) are plain text unless
--parse-special.

--detokenize reads ids instead (the argument or stdin, separated by spaces,
commas or newlines, brackets allowed) and prints their text and a newline.
Control tokens print as "" unless --parse-special.`,
		Example: `  infer tokenize --tokenizer tok512.bin "Once upon a time"
  infer tokenize --checkpoint model.gguf --output json "Hello world"
  echo -n "Hi" | infer tokenize --tokenizer tokenizer.json --no-bos
  infer tokenize --tokenizer tok512.bin --detokenize "1 403 407 261 378"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTokenize(a, cmd, args) },
	}
	a.flag(cmd, "checkpoint", "checkpoint", "checkpoint whose tokenizer to use (GGUF or model directory)")
	a.flag(cmd, "tokenizer", "tokenizer", "tokenizer file: GGUF, tokenizer.json or llama2.c tokenizer.bin")
	a.flag(cmd, "output", "tokenize.output", "output format")
	a.flag(cmd, "no-bos", "tokenize.no_bos", "leave out BOS")
	a.flag(cmd, "parse-special", "tokenize.parse_special", "parse special tokens in the text")
	a.flag(cmd, "detokenize", "tokenize.detokenize", "ids in, text out")
	return cmd
}

func runTokenize(a *app, cmd *cobra.Command, args []string) error {
	tk, err := tokenizerFor(a.cfg.Path("tokenizer"), a.cfg.Path("checkpoint"))
	if err != nil {
		return err
	}
	parseSpecial := a.cfg.Bool("tokenize.parse_special")
	if a.cfg.Bool("tokenize.detokenize") {
		return detokenize(cmd, args, tk, parseSpecial)
	}
	var in io.Reader = cmd.InOrStdin()
	if len(args) == 1 {
		in = strings.NewReader(args[0])
	}
	// The text is tokenized a window at a time and the ids written as
	// they come, so a corpus of any size runs in bounded memory.
	ids := tk.NewStream(closedIsEmpty{in}, tokenizer.EncodeOptions{
		BOS: tk.AddBOS() && !a.cfg.Bool("tokenize.no_bos"), EOS: tk.AddEOS(), ParseSpecial: parseSpecial})
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	if a.cfg.String("tokenize.output") == "json" {
		err = writeTokensJSON(out, ids, tk)
	} else {
		err = writeTokenIDs(out, ids)
	}
	if err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

// detokenize prints the text of the ids in the argument or stdin.
func detokenize(cmd *cobra.Command, args []string, tk *tokenizer.Tokenizer, parseSpecial bool) error {
	var input string
	if len(args) == 1 {
		input = args[0]
	} else {
		var err error
		if input, err = readStdin(cmd.InOrStdin()); err != nil {
			return err
		}
	}
	ids, err := tokenizer.ParseIDs(input, tk.VocabSize())
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(cmd.OutOrStdout(), tk.DecodeAll(ids, parseSpecial)); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

// writeTokenIDs writes the stream's ids space-separated on one line, as
// writeIDs does for a slice.
func writeTokenIDs(w *bufio.Writer, s *tokenizer.Stream) error {
	n := 0
	err := eachPart(s, func(ids []int) error {
		for _, id := range ids {
			if n > 0 {
				w.WriteByte(' ')
			}
			w.WriteString(strconv.Itoa(id))
			n++
		}
		return outputErr(w)
	})
	if err != nil {
		return err
	}
	return w.WriteByte('\n')
}

// outputErr is the error of an earlier write to w, if any, so that a
// closed or full stdout stops the tokenizing at the next part.
func outputErr(w *bufio.Writer) error {
	if _, err := w.Write(nil); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

// eachPart calls f with each part of the stream's ids.
func eachPart(s *tokenizer.Stream, f func([]int) error) error {
	for {
		ids, err := s.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(ids); err != nil {
			return err
		}
	}
}

// tokenizerFor opens the tokenizer of infer tokenize: tokPath if given,
// else the one the checkpoint carries.
func tokenizerFor(tokPath, ckpt string) (*tokenizer.Tokenizer, error) {
	switch {
	case tokPath != "":
		return checkpoint.OpenTokenizer(tokPath)
	case ckpt == "":
		return nil, errors.New("tokenize needs --tokenizer FILE or --checkpoint FILE")
	}
	tk, err := checkpoint.TokenizerOf(ckpt)
	if errors.Is(err, checkpoint.ErrNoTokenizer) {
		return nil, fmt.Errorf("%w: give --tokenizer tokenizer.bin", err)
	}
	return tk, err
}
