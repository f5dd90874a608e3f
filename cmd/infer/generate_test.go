package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGenerateGoldenText: `infer generate` on stories260K at temperature 0
// prints exactly what llama2.c's run printed (stdout), on both paths.
func TestGenerateGoldenText(t *testing.T) {
	models := sharedModels(t)
	want, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"fused", "naive"} {
		args := []string{"generate", "--checkpoint", filepath.Join(models, "stories260K.bin"),
			"--tokenizer", filepath.Join(models, "tok512.bin"), "--temperature", "0", "--steps", "256", "--path", path}
		code, out, errs := cli(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errs)
		}
		if out != string(want) {
			t.Fatalf("%s: text differs from llama2.c:\n got %q\nwant %q", path, out, want)
		}
		if !strings.Contains(errs, "achieved tok/s:") {
			t.Fatalf("%s: no tok/s line on stderr: %q", path, errs)
		}
		code, out, errs = cli(t, append(args, "--output", "ids")...)
		if code != 0 || strings.Join(strings.Fields(out), " ") != strings.Join(strings.Fields(string(wantIDs)), " ") {
			t.Fatalf("%s: ids differ (exit %d, %s):\n got %s\nwant %s", path, code, errs, out, wantIDs)
		}
	}
}

// TestGenerateConfigAndEnvPrecedence: configs/stories260k.yaml sets
// temperature 0 and 256 steps; INFER_STEPS overrides the file and --steps
// the environment. The model files are the ones sharedModels located
// (flags beat the ../../shared paths written in the file), and the ids
// are llama2.c's greedy ones, so temperature 0 did come from the file.
func TestGenerateConfigAndEnvPrecedence(t *testing.T) {
	models := sharedModels(t)
	golden, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(golden))
	cfg := filepath.Join("..", "..", "configs", "stories260k.yaml")
	base := []string{"generate", "--config", cfg, "--output", "ids",
		"--checkpoint", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin")}
	t.Setenv("INFER_STEPS", "20")
	code, out, errs := cli(t, base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := strings.Fields(out); !slices.Equal(got, want[:20]) {
		t.Fatalf("INFER_STEPS=20 gave %v, want llama2.c's first 20 greedy ids %v", got, want[:20])
	}
	code, out, errs = cli(t, append(base, "--steps", "7")...)
	if got := strings.Fields(out); code != 0 || !slices.Equal(got, want[:7]) {
		t.Fatalf("--steps 7: exit %d (%s), got %v, want %v", code, errs, got, want[:7])
	}
}

func TestGenerateSeveralPromptsJSON(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "prompts.txt")
	if err := os.WriteFile(pf, []byte("abc\n\nhello there\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "generate", "--prompts", pf, "--steps", "24", "--temperature", "0.7",
		"--seed", "5", "--output", "json", "--num-blocks", "6", "--block-size", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %d: %s", len(lines), out)
	}
	for i, line := range lines {
		var o seqOutput
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatal(err)
		}
		// 24 ids, or fewer when the sequence sampled BOS (run.c stops there).
		if o.Seq != i || len(o.IDs) == 0 || len(o.IDs) > 24 || o.Error != "" {
			t.Fatalf("line %d: %+v", i, o)
		}
	}
	// Alone, each prompt gives the same ids as inside the batch.
	for i, p := range []string{"abc", "hello there", "x"} {
		code, single, errs := cli(t, "generate", "--prompt", p, "--steps", "24", "--temperature", "0.7",
			"--seed", "5", "--output", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var a, b seqOutput
		json.Unmarshal([]byte(single), &a)
		json.Unmarshal([]byte(lines[i]), &b)
		if !slices.Equal(a.IDs, b.IDs) {
			t.Fatalf("prompt %q: alone %v, batched %v", p, a.IDs, b.IDs)
		}
	}
}

func TestGenerateBadInput(t *testing.T) {
	dir := t.TempDir()
	trunc := filepath.Join(dir, "trunc.bin")
	os.WriteFile(trunc, []byte{1, 2, 3}, 0o644)
	cfgBad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfgBad, []byte("stepz: 3\n"), 0o644)
	cfgType := filepath.Join(dir, "type.yaml")
	os.WriteFile(cfgType, []byte("steps: many\n"), 0o644)
	long := strings.Repeat("a", 3000)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"truncated checkpoint", []string{"generate", "--checkpoint", trunc}, "trunc.bin"},
		{"missing checkpoint", []string{"generate", "--checkpoint", filepath.Join(dir, "nope.bin")}, "nope.bin"},
		{"unknown config key", []string{"generate", "--config", cfgBad}, "stepz"},
		{"wrong type", []string{"generate", "--config", cfgType}, "steps"},
		{"bad path", []string{"generate", "--path", "fast"}, "path"},
		{"negative temperature", []string{"generate", "--temperature", "-1"}, "temperature"},
		{"prompt longer than seq_len", []string{"generate", "--prompt", long}, "seq_len"},
		{"bad kv memory", []string{"generate", "--kv-memory", "lots"}, "kv_memory"},
		{"pool too small", []string{"generate", "--num-blocks", "1", "--block-size", "4", "--steps", "64"}, "pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, tc.args...)
			if code != 1 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "goroutine") {
				t.Fatalf("exit %d, stderr %q: want exit 1 and an error naming %q", code, errs, tc.want)
			}
		})
	}
}

func TestGenerateClampsSteps(t *testing.T) {
	code, out, errs := cli(t, "generate", "--checkpoint", "synthetic", "--steps", "5000", "--output", "ids", "--temperature", "0")
	if code != 0 || !strings.Contains(errs, "clamped to 2048") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if n := len(strings.Fields(out)); n == 0 || n > 2048 {
		t.Fatalf("%d ids", n)
	}
}

// TestGeneratePromptListInConfig: the prompt key takes a YAML list, and a
// list of non-strings is an error naming the key.
func TestGeneratePromptListInConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("prompt:\n  - abc\n  - hello\nsteps: 10\ntemperature: 0\n"), 0o644)
	code, out, errs := cli(t, "generate", "--config", good, "--output", "json")
	if code != 0 || len(strings.Split(strings.TrimSpace(out), "\n")) != 2 {
		t.Fatalf("exit %d (%s): want two sequences, got %q", code, errs, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("prompt:\n  - abc\n  - 3\n"), 0o644)
	code, _, errs = cli(t, "generate", "--config", bad)
	if code != 1 || !strings.Contains(errs, `"prompt"`) {
		t.Fatalf("exit %d: %q", code, errs)
	}
}
