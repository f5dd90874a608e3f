package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile/outfiletest"
	"github.com/stride-lm/stride/model/engine"
)

// The tests of this file each reproduce a way the CLI lost output,
// clobbered a file, crashed or accepted a meaningless value (issue 11),
// and check the guarantee that replaced it. Targets are FIFOs, symlinks
// and temporary files, never real devices; a full disk is a writer that
// fails; interrupts are real signals sent to a child process.

// TestExportOutputTargets: a FIFO is written through and stays a FIFO, a
// symlink stays a link and its target is replaced, a new file gets 0666
// minus the umask and a replaced one keeps its mode, a directory is
// refused. Before, each target became a fresh -rw------- regular file.
func TestExportOutputTargets(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	small := []string{"--checkpoint", "synthetic", "--synthetic.seq_len", "64"}
	export := func(out string) (int, string) {
		code, _, errs := cli(t, append([]string{"export", "--out", out}, small...)...)
		return code, errs
	}
	plain := filepath.Join(dir, "plain.bin")
	if code, errs := export(plain); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	want, _ := os.ReadFile(plain)
	if m := outfiletest.Mode(t, plain); m != 0o644 {
		t.Errorf("new file under umask 022: %v, want -rw-r--r--", m)
	}
	os.Chmod(plain, 0o664)
	if code, errs := export(plain); code != 0 || outfiletest.Mode(t, plain) != 0o664 {
		t.Errorf("replaced file: exit %d %s, mode %v, want its old -rw-rw-r--", code, errs, outfiletest.Mode(t, plain))
	}

	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() { b, _ := os.ReadFile(fifo); got <- b }()
	if code, errs := export(fifo); code != 0 {
		t.Fatalf("export to a FIFO: exit %d %s", code, errs)
	}
	if b := <-got; string(b) != string(want) {
		t.Errorf("the FIFO's reader got %d bytes, want the %d of the checkpoint", len(b), len(want))
	}
	if m := outfiletest.Mode(t, fifo); m&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced by %v", m)
	}

	link := filepath.Join(dir, "link.bin")
	os.Symlink("plain.bin", link)
	os.WriteFile(plain, []byte("old"), 0o664)
	if code, errs := export(link); code != 0 {
		t.Fatalf("export to a symlink: %s", errs)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced by %v", st.Mode())
	}
	if b, _ := os.ReadFile(plain); string(b) != string(want) {
		t.Errorf("the symlink's target holds %d bytes, want %d", len(b), len(want))
	}

	if code, errs := export(dir); code != 1 || !strings.Contains(errs, "is a directory") {
		t.Errorf("export to a directory: exit %d %q", code, errs)
	}
	for _, e := range outfiletest.Entries(t, dir) {
		if strings.Contains(e, ".tmp") {
			t.Errorf("left behind: %s", e)
		}
	}
}

// TestExportInterruptLeavesNothing: SIGINT while export writes a large
// checkpoint exits 130 and leaves neither the target nor a temporary
// file (before, a big.bin.tmpNNN stayed behind).
func TestExportInterruptLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: synthesizes and writes a 300 MB checkpoint")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "big.bin")
	p := startCLI(t, nil, "export", "--checkpoint", "synthetic", "--out", out, "--synthetic.dim", "768", "--synthetic.hidden_dim", "2048",
		"--synthetic.n_layers", "8", "--synthetic.n_heads", "12", "--synthetic.n_kv_heads", "12",
		"--synthetic.vocab_size", "32000", "--synthetic.seq_len", "256")
	deadline := time.Now().Add(2 * time.Minute)
	for len(outfiletest.Entries(t, dir)) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.signal(syscall.SIGINT)
	code := p.wait(time.Minute)
	if code != exitInterrupted || !strings.Contains(p.err(), "interrupted") || strings.Contains(p.err(), "goroutine") {
		t.Fatalf("exit %d, stderr %q", code, p.err())
	}
	if got := outfiletest.Entries(t, dir); len(got) != 0 {
		t.Fatalf("an interrupted export left %v", got)
	}
}

// failingWriter is a full disk: it takes limit bytes, then fails.
type failingWriter struct {
	limit, n int
	failed   bool
	after    int // writes attempted after the first failure
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.failed {
		w.after++
	}
	if w.n+len(p) > w.limit {
		w.failed = true
		k := w.limit - w.n
		w.n = w.limit
		return k, syscall.ENOSPC
	}
	w.n += len(p)
	return len(p), nil
}

// TestGenerateWriteFailures: generate into a full disk exits 1 with one
// line naming the failed write, in every format, and streamed text stops
// writing at the first failure (before, exit 0 with nothing written).
func TestGenerateWriteFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text", []string{"--prompt", "abc"}},
		{"ids", []string{"--prompt", "abc", "--output", "ids"}},
		{"json", []string{"--prompt", "a", "--prompt", "b", "--prompt", "c", "--output", "json"}},
		{"text of several", []string{"--prompt", "a", "--prompt", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{0, 5} {
				w := &failingWriter{limit: limit}
				var errb strings.Builder
				args := append([]string{"generate", "--steps", "200", "--temperature", "0"}, tc.args...)
				code := run(args, w, &errb)
				lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
				if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "writing standard output") ||
					!strings.Contains(lines[0], "no space left") {
					t.Fatalf("limit %d: exit %d, stderr %q", limit, code, errb.String())
				}
				if w.after > 0 {
					t.Fatalf("limit %d: %d writes after the first failure", limit, w.after)
				}
			}
		})
	}
}

// TestGenerateToDevFull: the real process with stdout on /dev/full exits
// 1 (the device is only opened for writing, as a shell redirection
// would; it is never a target to replace).
func TestGenerateToDevFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, format := range []string{"text", "ids", "json"} {
		p := startCLI(t, full, "generate", "--steps", "20", "--output", format)
		if code := p.wait(time.Minute); code != 1 || !strings.Contains(p.err(), "writing standard output") {
			t.Errorf("%s: exit %d, stderr %q", format, code, p.err())
		}
	}
}

// slowModel makes a synthetic model slow enough that a run is still
// going when the test interrupts it. Greedy, because a sampled sequence on random weights meets BOS after a
// few hundred tokens on average (1 in 259 per step), which can end the run
// before the signal arrives; greedy runs all 4096 steps (about 25 s on 2
// cores).
var slowModel = []string{"--checkpoint", "synthetic", "--temperature", "0", "--synthetic.dim", "256", "--synthetic.hidden_dim", "688", "--synthetic.n_layers", "8",
	"--synthetic.n_heads", "8", "--synthetic.n_kv_heads", "8", "--synthetic.seq_len", "4096", "--steps", "4096",
	"--num-blocks", "520"} // two full sequences' KV (130 MiB), not the default eight

// TestGenerateInterruptText: SIGINT during streamed text ends the line
// and exits 130 with the text so far kept (before, the process died).
func TestGenerateInterruptText(t *testing.T) {
	p := startCLI(t, nil, append([]string{"generate", "--prompt", "abc"}, slowModel...)...)
	p.waitFor("abc", false, time.Minute)
	p.signal(syscall.SIGINT)
	if code := p.wait(time.Minute); code != exitInterrupted || !strings.HasSuffix(p.out(), "\n") ||
		strings.TrimSpace(p.err()) != "infer: interrupted" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, p.out(), p.err())
	}
}

// TestGenerateInterruptJSON: with --output json each sequence's line is
// printed as soon as it finishes, with its finish_reason; SIGTERM prints
// the others' partial results, marked interrupted, and exits 130.
func TestGenerateInterruptJSON(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "prompts.txt")
	os.WriteFile(pf, []byte("a\nb\nc\n"), 0o644)
	// --max-batch 1 runs the prompts one after another: the first line
	// arrives while the others still run (proof that lines stream), and
	// the signal sent then interrupts them.
	p := startCLI(t, nil, append([]string{"generate", "--prompts", pf, "--output", "json", "--max-batch", "1",
		"--temperature", "0.8", "--seed", "5", "--checkpoint", "synthetic", "--synthetic.seq_len", "4096"},
		"--steps", "300", "--synthetic.dim", "256", "--synthetic.hidden_dim", "688", "--synthetic.n_layers", "8",
		"--synthetic.n_heads", "8", "--synthetic.n_kv_heads", "8", "--num-blocks", "20", "--block-size", "16")...)
	p.waitFor("\n", false, 2*time.Minute)
	p.signal(syscall.SIGTERM)
	code := p.wait(time.Minute)
	lines := strings.Split(strings.TrimSpace(p.out()), "\n")
	if code != exitInterrupted && code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, p.err())
	}
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %d: %q", len(lines), p.out())
	}
	seen := map[int]string{}
	for _, l := range lines {
		var o seqOutput
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		seen[o.Seq] = o.FinishReason
	}
	if len(seen) != 3 || seen[0] == "" {
		t.Fatalf("sequences and finish reasons: %v", seen)
	}
	if code == exitInterrupted && seen[2] != "interrupted" {
		t.Fatalf("interrupted run: the last sequence finished as %q", seen[2])
	}
}

// TestGenerateInterruptIDs: SIGINT during a multi-prompt --output ids run
// prints one line per sequence and exits 130 (before, all were lost).
func TestGenerateInterruptIDs(t *testing.T) {
	p := startCLI(t, nil, append([]string{"generate", "--prompt", "abc", "--prompt", "xyz", "--output", "ids"}, slowModel...)...)
	time.Sleep(1500 * time.Millisecond)
	p.signal(syscall.SIGINT)
	code := p.wait(time.Minute)
	if code != exitInterrupted || strings.Count(p.out(), "\n") != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, p.out(), p.err())
	}
}

// TestSecondSignalExitsAtOnce: the first signal cancels, the second
// calls the immediate exit.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	ch := make(chan os.Signal, 2)
	cancelled, exited := make(chan bool, 1), make(chan bool, 1)
	go watchSignals(ch, func() { cancelled <- true }, func() { exited <- true })
	ch <- syscall.SIGINT
	<-cancelled
	select {
	case <-exited:
		t.Fatal("exited on the first signal")
	case <-time.After(20 * time.Millisecond):
	}
	ch <- syscall.SIGTERM
	<-exited
}

// TestCompareSweepKeepsRows: SIGINT after the first sweep point prints
// the points measured and exits 130 (an interrupt is seen between
// points, or after the last); a chart path that cannot be written fails
// at once, before any measuring (before, the sweep ran and then exited 1
// without its table).
func TestCompareSweepKeepsRows(t *testing.T) {
	p := startCLI(t, nil, "compare", "--checkpoint", "synthetic", "--contexts", "8,1000", "--decode", "4")
	p.waitFor("compare: context 8 measured", true, 2*time.Minute)
	p.signal(syscall.SIGINT)
	code := p.wait(2 * time.Minute)
	if code != exitInterrupted || !strings.Contains(p.out(), "context 8") || !strings.Contains(p.out(), "tokens identical") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, p.out(), p.err())
	}
	code, out, errs := cli(t, "compare", "--checkpoint", "synthetic", "--contexts", "8,16", "--plot", "/nonexistent-dir/x.png")
	if code != 1 || !strings.Contains(errs, "/nonexistent-dir/x.png") || strings.Contains(errs, ".tmp") || out != "" {
		t.Fatalf("unwritable plot: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestBenchKeepsRows: SIGINT after the warm-up prints the rows measured
// so far (or none, with exit 130) instead of losing them.
func TestBenchKeepsRows(t *testing.T) {
	p := startCLI(t, nil, "bench", "--tests", "tg64", "--reps", "1000", "--checkpoint", "synthetic", "--synthetic.seq_len", "256")
	p.waitFor("bench: round 1 of 1000 done", true, 2*time.Minute)
	p.signal(syscall.SIGINT)
	code := p.wait(time.Minute)
	if code != exitInterrupted || !strings.Contains(p.out(), "tg64") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, p.out(), p.err())
	}
}

// TestValidation: meaningless values are one-line errors naming the key
// and, for a number, its range; nothing silently falls back.
func TestValidation(t *testing.T) {
	dir := t.TempDir()
	nanYAML := filepath.Join(dir, "nan.yaml")
	os.WriteFile(nanYAML, []byte("temperature: .nan\n"), 0o644)
	pf := filepath.Join(dir, "p.txt")
	os.WriteFile(pf, []byte("ok\n\n"+strings.Repeat("z", 3000)+"\n"), 0o644)
	for _, tc := range []struct {
		name string
		env  [2]string
		args []string
		want []string
	}{
		{"NaN temperature flag", [2]string{}, []string{"generate", "--temperature", "NaN"}, []string{`"temperature"`, "not a finite number"}},
		{"NaN temperature env", [2]string{"INFER_TEMPERATURE", "NaN"}, []string{"generate"}, []string{"env INFER_TEMPERATURE", "finite"}},
		{"NaN temperature YAML", [2]string{}, []string{"generate", "--config", nanYAML}, []string{"temperature", "finite"}},
		{"Inf temperature", [2]string{}, []string{"generate", "--temperature", "+Inf"}, []string{"temperature", "finite"}},
		{"NaN topp", [2]string{}, []string{"generate", "--topp", "NaN"}, []string{"topp", "finite"}},
		{"topp above 1", [2]string{}, []string{"generate", "--topp", "2"}, []string{"topp", "in [0, 1]", "got 2"}},
		{"negative topp", [2]string{}, []string{"generate", "--topp", "-0.5"}, []string{"topp", "in [0, 1]"}},
		{"negative steps", [2]string{}, []string{"generate", "--steps", "-5"}, []string{"steps", "≥ 0", "got -5"}},
		{"NaN bandwidth", [2]string{}, []string{"coalesce", "--bandwidth", "NaN"}, []string{"coalesce.bandwidth", "finite"}},
		{"zero bandwidth", [2]string{}, []string{"coalesce", "--bandwidth", "0"}, []string{"coalesce.bandwidth", "> 0"}},
		{"kv-memory below a block", [2]string{}, []string{"generate", "--kv-memory", "0.5"}, []string{"kv_memory", "smaller than one KV block"}},
		{"trace block size 0", [2]string{}, []string{"trace", "--block-size", "0"}, []string{"trace.block_size", "≥ 1"}},
		{"prompt and prompts", [2]string{}, []string{"generate", "--prompt", "Lily", "--prompts", pf}, []string{"--prompt (from flag --prompt)", "--prompts (from flag --prompts)"}},
		{"prompt named by file line", [2]string{}, []string{"generate", "--checkpoint", "synthetic", "--prompts", pf, "--output", "json", "--steps", "10"}, []string{"p.txt line 3", "seq_len 2048"}},
		{"too many threads", [2]string{}, []string{"generate", "--threads", "10000000000"}, []string{"threads", "in [0, 1024]"}},
		{"bench threads", [2]string{}, []string{"bench", "--threads", "1,5000"}, []string{"--threads", "1024"}},
		{"meta trace overflow", [2]string{}, []string{"trace", "--meta", "--seq", "1099511627776", "--batch", "1099511627776"}, []string{"trace:"}},
		{"config /dev/zero", [2]string{}, []string{"generate", "--config", "/dev/zero"}, []string{"/dev/zero", "larger than 16.0 MiB"}},
		{"prompts /dev/zero", [2]string{}, []string{"generate", "--prompts", "/dev/zero"}, []string{"/dev/zero", "larger than 16.0 MiB"}},
		{"num-blocks beyond memory", [2]string{}, []string{"generate", "--num-blocks", "134217727"}, []string{"KV cache pool", "physical memory"}},
		{"synthetic model beyond memory", [2]string{}, []string{"generate", "--checkpoint", "synthetic", "--synthetic.dim", "65536", "--synthetic.hidden_dim", "65536",
			"--synthetic.n_layers", "64", "--synthetic.n_heads", "64", "--synthetic.n_kv_heads", "64"}, []string{"synthetic model's weights", "physical memory"}},
		{"prompt certainly too long", [2]string{}, []string{"generate", "--checkpoint", "synthetic", "--prompt", strings.Repeat("a", 300000)}, []string{"prompt 1", "300000 bytes are at least", "seq_len 2048"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			code, _, errs := cli(t, tc.args...)
			if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") > 1 || strings.Contains(errs, "goroutine") {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

// TestKVMemoryBeyondPhysical: a KV budget of twice the machine's memory
// is an error naming both sizes, before anything is allocated (before,
// 400GiB died with "out of memory" and a stack trace).
func TestKVMemoryBeyondPhysical(t *testing.T) {
	phys, err := engine.PhysicalMemory()
	if err != nil {
		t.Skip(err)
	}
	budget := fmt.Sprintf("%dGiB", 2*phys>>30+1)
	code, _, errs := cli(t, "generate", "--kv-memory", budget, "--steps", "4")
	if code != 1 || !strings.Contains(errs, "physical memory") || strings.Contains(errs, "goroutine") {
		t.Fatalf("--kv-memory %s: exit %d, stderr %q", budget, code, errs)
	}
}

// TestEveryCommandChecksStdout: each command, writing into a full disk,
// exits 1 with one line naming the failed write (layout, trace, compare,
// bench and coalesce reported it before; generate, export and --help did
// not).
func TestEveryCommandChecksStdout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.bin")
	for _, args := range [][]string{
		{"--help"},
		{"generate", "--help"},
		{"generate", "--steps", "8", "--output", "json"},
		{"export", "--out", out, "--checkpoint", "synthetic", "--synthetic.seq_len", "64"},
		{"layout", "empty(2,3).t()"},
		{"trace", "--meta", "--output", "json"},
		{"trace", "--meta"},
		{"compare", "--steps", "8", "--output", "markdown"},
		{"bench", "--tests", "tg4", "--reps", "1", "--output", "markdown"},
		{"coalesce", "--output", "json"},
	} {
		var errb strings.Builder
		code := run(args, &failingWriter{limit: 3}, &errb)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		last := lines[len(lines)-1]
		if code != 1 || !strings.Contains(last, "writing standard output") || strings.Contains(errb.String(), "goroutine") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

// TestStderrFailureFails: a failed write to stderr (the tok/s line) is
// exit 1 too, though there is nowhere left to say why.
func TestStderrFailureFails(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"generate", "--steps", "8", "--temperature", "0"}, &out, &failingWriter{}); code != 1 || out.Len() == 0 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

// TestExportFullDisk: on a full file system (a 100 KiB tmpfs; root only)
// export exits 1 naming the target and the error, leaves no temporary
// file and keeps the old target.
func TestExportFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=100k"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	out := filepath.Join(dir, "x.bin")
	os.WriteFile(out, []byte("old"), 0o644)
	code, _, errs := cli(t, "export", "--out", out)
	if code != 1 || !strings.Contains(errs, "no space left on device") || !strings.Contains(errs, out+":") || strings.Contains(errs, ".tmp") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if got := outfiletest.Entries(t, dir); len(got) != 1 {
		t.Fatalf("left behind: %v", got)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Fatalf("the old target holds %q", b)
	}
}

// TestGenerateJSONFullDisk: --output json of 8 prompts redirected to a
// file on a full file system (a 4 KiB tmpfs; root only) exits 1 (before:
// a file cut mid-record and exit 0).
func TestGenerateJSONFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4k"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	f, err := os.Create(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args := []string{"generate", "--output", "json", "--steps", "256", "--temperature", "0"}
	for i := 0; i < 8; i++ {
		args = append(args, "--prompt", fmt.Sprintf("prompt %d", i))
	}
	p := startCLI(t, f, args...)
	if code := p.wait(time.Minute); code != 1 || !strings.Contains(p.err(), "no space left on device") {
		t.Fatalf("exit %d, stderr %q", code, p.err())
	}
}
