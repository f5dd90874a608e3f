package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hfWithGenerationConfig copies the shared Hugging Face stories260K into
// a temporary directory beside a generation_config.json holding gen.
func hfWithGenerationConfig(t *testing.T, models, gen string) string {
	t.Helper()
	src := filepath.Join(models, "hf", "stories260K")
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(gen), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// generation_config.json's sampling settings are the defaults of the
// settings the user leaves unset (as transformers and vLLM apply them),
// and every flag the user gives wins: a run with the defaults gives the
// ids of the same run with those settings as flags on the directory
// without a generation_config.json.
func TestGenerationConfigSamplingDefaults(t *testing.T) {
	models := sharedModels(t)
	plain := filepath.Join(models, "hf", "stories260K")
	tok := filepath.Join(models, "tok512.bin")
	run := func(dir string, flags ...string) []int {
		t.Helper()
		args := append([]string{"generate", "--checkpoint", dir, "--tokenizer", tok, "--prompt", "Once upon a time",
			"--steps", "120", "--seed", "7", "--output", "ids"}, flags...)
		code, out, errs := cli(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return idsOf(t, out)
	}
	sampled := run(plain) // run.c's defaults: temperature 1, top-p 0.9
	greedy := run(plain, "--temperature", "0")
	if slices.Equal(sampled, greedy) {
		t.Fatal("seed 7 samples the greedy ids; the test cannot tell the defaults apart")
	}
	for _, c := range []struct {
		name, gen string
		flags     []string // the run on the directory without the file
		user      []string // flags given on the directory with it
	}{
		{"temperature 0 is greedy", `{"temperature": 0.0}`, []string{"--temperature", "0"}, nil},
		{"do_sample false is greedy", `{"do_sample": false, "temperature": 0.8}`, []string{"--temperature", "0"}, nil},
		{"top_k 1 keeps the argmax", `{"do_sample": true, "top_k": 1}`, []string{"--top-k", "1"}, nil},
		{"all of them", `{"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.3}`,
			[]string{"--temperature", "0.7", "--topp", "0.8", "--top-k", "20", "--min-p", "0.05", "--repeat-penalty", "1.3", "--repeat-last-n", "-1"}, nil},
		{"a flag wins", `{"temperature": 0.0, "top_k": 1}`, []string{"--temperature", "1", "--top-k", "0"}, []string{"--temperature", "1", "--top-k", "0"}},
		{"repeat_last_n set by the user", `{"repetition_penalty": 1.3}`, []string{"--repeat-penalty", "1.3", "--repeat-last-n", "8"}, []string{"--repeat-last-n", "8"}},
	} {
		want := run(plain, c.flags...)
		got := run(hfWithGenerationConfig(t, models, c.gen), c.user...)
		if !slices.Equal(got, want) {
			t.Errorf("%s: ids %v\nwant (flags %v) %v", c.name, got, c.flags, want)
		}
	}
	if !slices.Equal(run(hfWithGenerationConfig(t, models, `{"temperature": 0.0}`)), greedy) {
		t.Error("temperature 0 from generation_config.json is not greedy")
	}
	code, _, errs := cli(t, "generate", "--checkpoint", hfWithGenerationConfig(t, models, `{"top_p": 1.5}`), "--tokenizer", tok)
	if code != 1 || !strings.Contains(errs, "top_p 1.5") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("top_p 1.5: exit %d, %q; want one line naming it", code, errs)
	}
}
