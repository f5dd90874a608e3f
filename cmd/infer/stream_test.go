package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// heavyStream runs the 100 MB measurement of the streaming commands
// (docs/formats.md records its figures): go test ./cmd/infer -run
// MemoryBounded -stream.heavy -v.
var heavyStream = flag.Bool("stream.heavy", false, "measure infer perplexity and tokenize on 100 MB of text")

// streamText writes n bytes of story-like text (words, punctuation, line
// breaks, now and then a non-ASCII word) to a file and returns its path.
func streamText(t *testing.T, n int) string {
	t.Helper()
	words := strings.Fields("Once upon a time there was a little girl named Lily She loved to play outside " +
		"in the park One day she saw a big red ball and said Mom can I have it? The sun was warm. café naïve 日本")
	p := filepath.Join(t.TempDir(), fmt.Sprintf("text-%d.txt", n))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for written := 0; written < n; {
		s := words[r.IntN(len(words))]
		switch k := r.IntN(40); {
		case k == 0:
			s += ".\n"
		case k == 1:
			s += ",\n\n"
		case k < 6:
			s += ", "
		default:
			s += " "
		}
		s = s[:min(len(s), n-written)]
		w.WriteString(s)
		written += len(s)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// peakRSS runs the CLI as a child process, its stdin read from the
// file stdin when not empty, and returns its peak resident set
// (ru_maxrss) in bytes and its stdout's last line.
func peakRSS(t *testing.T, stdin string, args ...string) (int64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var out tailWriter
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this platform")
	}
	lines := strings.Split(strings.TrimSpace(string(out.tail)), "\n")
	return ru.Maxrss << 10, lines[len(lines)-1] // Linux reports KiB
}

// tailWriter keeps the last 4 KiB written to it.
type tailWriter struct{ tail []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p...)
	if n := len(w.tail); n > 4<<10 {
		w.tail = append(w.tail[:0], w.tail[n-4<<10:]...)
	}
	return len(p), nil
}

// The streaming commands' memory is bounded by the window and the model,
// not the input: a text 16 times larger (100 times with -stream.heavy)
// runs in the same peak RSS within 50 MB, where reading the text whole
// took about 110 bytes per input byte (1.7 GB more for 16 MB).
func TestStreamingMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: tokenizes 21 MB in child processes")
	}
	models := sharedModels(t)
	tok := filepath.Join(models, "tok512.bin")
	// A tiny model over tok512's vocabulary, so that the perplexity run
	// measures the text's handling, not the forward pass.
	tiny := []string{"perplexity", "--checkpoint", "synthetic", "--tokenizer", tok, "--synthetic.vocab_size", "512", "--synthetic.dim", "8",
		"--synthetic.hidden_dim", "8", "--synthetic.n_layers", "1", "--synthetic.n_heads", "1",
		"--synthetic.n_kv_heads", "1", "--synthetic.seq_len", "512", "--ctx", "512", "--threads", "1"}
	cases := []struct {
		name         string
		args         []string
		stdin        bool
		small, large int
	}{
		// Scoring is the slow part: 2 MiB of text read whole already
		// took 200 MB more than 256 KiB.
		{"perplexity", tiny, false, 256 << 10, 2 << 20},
		{"tokenize", []string{"tokenize", "--tokenizer", tok}, true, 1 << 20, 16 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if *heavyStream {
				c.small, c.large = 1<<20, 100<<20
			}
			run := func(n int) (int64, string) {
				p := streamText(t, n)
				if c.stdin {
					return peakRSS(t, p, c.args...)
				}
				return peakRSS(t, "", append(c.args, p)...)
			}
			rs, _ := run(c.small)
			rl, last := run(c.large)
			t.Logf("%s: peak RSS %d MiB on %d KiB of text, %d MiB on %d KiB", c.name, rs>>20, c.small>>10, rl>>20, c.large>>10)
			if c.name == "perplexity" && !strings.HasPrefix(last, "Final estimate: PPL = ") {
				t.Errorf("last line %q", last)
			}
			if c.name == "tokenize" && strings.Trim(last, "0123456789 ") != "" {
				t.Errorf("the ids end in %.40q", last)
			}
			if grow := rl - rs; grow > 50<<20 {
				t.Errorf("peak RSS grew by %d MiB from %d to %d bytes of text (bound 50 MiB)", grow>>20, c.small, c.large)
			}
		})
	}
}
