package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

// TestGenerateSpeculateGolden: --speculate ngram keeps stories260K's
// greedy output llama2.c's, token for token, on both paths, and the JSON
// line reports the drafts (INFER_SPECULATE turns it on as the flag does).
func TestGenerateSpeculateGolden(t *testing.T) {
	models := sharedModels(t)
	golden := readFields(t, filepath.Join(models, "golden", "stories260K.greedy.ids"))
	for _, path := range []string{"fused", "naive"} {
		args := []string{"generate", "--checkpoint", filepath.Join(models, "stories260K.bin"),
			"--tokenizer", filepath.Join(models, "tok512.bin"), "--temperature", "0", "--steps", "256", "--path", path,
			"--output", "json"}
		for _, how := range []string{"flag", "env"} {
			a := args
			if how == "flag" {
				a = append(a, "--speculate", "ngram", "--draft", "3", "--ngram-min", "2", "--ngram-max", "4")
			} else {
				t.Setenv("INFER_SPECULATE", "ngram")
			}
			code, out, errs := cli(t, a...)
			if code != 0 {
				t.Fatalf("%s/%s: exit %d: %s", path, how, code, errs)
			}
			var o seqOutput
			if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &o); err != nil {
				t.Fatalf("%s/%s: %v\n%s", path, how, err, out)
			}
			var ids []string
			for _, id := range o.IDs {
				ids = append(ids, strconv.Itoa(id))
			}
			if !slices.Equal(ids, golden) {
				t.Fatalf("%s/%s: ids differ from llama2.c with speculation:\n got %v\nwant %v", path, how, ids, golden)
			}
			if o.VerifySteps == 0 || o.DraftTokens < o.VerifySteps || o.AcceptedTokens == 0 || o.AcceptedTokens > o.DraftTokens {
				t.Fatalf("%s/%s: speculation counts %+v", path, how, o)
			}
			if how == "flag" && o.DraftTokens > 3*o.VerifySteps {
				t.Fatalf("%s: --draft 3 drafted %d tokens in %d verify steps", path, o.DraftTokens, o.VerifySteps)
			}
		}
		t.Setenv("INFER_SPECULATE", "off")
	}
}

// TestSpeculateFlagsValidated: bad speculation settings are one clear
// error line and exit status 1.
func TestSpeculateFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--speculate", "eagle"}, "speculate"},
		{[]string{"--speculate", "ngram", "--draft", "0"}, "draft"},
		{[]string{"--speculate", "ngram", "--ngram-min", "3", "--ngram-max", "2"}, "ngram_max 2 is less than ngram_min 3"},
		{[]string{"--ngram-max", "65"}, "ngram_max"},
		{[]string{"--speculate", "ngram", "--draft-cost", "-0.5"}, "draft_cost"},
		{[]string{"--speculate", "ngram", "--draft-cost", "65"}, "draft_cost"},
		{[]string{"--speculate", "ngram", "--draft-cost", "cheap"}, "--draft-cost"},
	} {
		code, _, errs := cli(t, append([]string{"generate", "--steps", "8"}, tc.args...)...)
		if code != 1 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("%v: exit %d, stderr %q (want one line naming %q)", tc.args, code, errs, tc.want)
		}
	}
}

// TestDraftCostFlag: --draft-cost reaches the adaptive rule. Priced at
// the maximum, no draft ever pays and none is made; priced near zero, the
// same greedy run drafts and accepts; the ids are run.c's either way.
func TestDraftCostFlag(t *testing.T) {
	models := sharedModels(t)
	golden := readFields(t, filepath.Join(models, "golden", "stories260K.greedy.ids"))
	var counts []seqOutput
	for _, cost := range []string{"64", "0.01"} {
		code, out, errs := cli(t, "generate", "--checkpoint", filepath.Join(models, "stories260K.bin"),
			"--tokenizer", filepath.Join(models, "tok512.bin"), "--temperature", "0", "--steps", "256",
			"--speculate", "ngram", "--draft-cost", cost, "--output", "json")
		if code != 0 {
			t.Fatalf("--draft-cost %s: exit %d: %s", cost, code, errs)
		}
		var o seqOutput
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &o); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var ids []string
		for _, id := range o.IDs {
			ids = append(ids, strconv.Itoa(id))
		}
		if !slices.Equal(ids, golden) {
			t.Fatalf("--draft-cost %s: ids differ from llama2.c", cost)
		}
		counts = append(counts, o)
	}
	if counts[0].DraftTokens != 0 || counts[1].AcceptedTokens == 0 {
		t.Fatalf("--draft-cost 64 drafted %d tokens; --draft-cost 0.01 accepted %d", counts[0].DraftTokens, counts[1].AcceptedTokens)
	}
}

// TestSpeculativeSampledMatchesRunC: sampled stories with speculation
// are run.c's own sampled stories, byte for byte: the six runs recorded in
// stories260K.sampled-text.txt (run.c -t 1.0 -p 0.9, seeds 101-106, 450
// steps), with drafts priced low enough that many are tested. Rejected
// drafts cost no extra coin, so the coins fall as they did in run.c.
func TestSpeculativeSampledMatchesRunC(t *testing.T) {
	models := sharedModels(t)
	raw, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.sampled-text.txt"))
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.Split(string(raw), "\n\n")
	accepted, drafted := 0, 0
	for i, seed := range []string{"101", "102", "103", "104", "105", "106"} {
		code, out, errs := cli(t, "generate", "--checkpoint", filepath.Join(models, "stories260K.bin"),
			"--tokenizer", filepath.Join(models, "tok512.bin"), "--temperature", "1.0", "--topp", "0.9",
			"--seed", seed, "--steps", "450", "--speculate", "ngram", "--draft-cost", "0.01", "--output", "json")
		if code != 0 {
			t.Fatalf("seed %s: exit %d: %s", seed, code, errs)
		}
		var o seqOutput
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &o); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if strings.TrimSpace(o.Text) != strings.TrimSpace(runs[i]) {
			t.Fatalf("seed %s: text differs from run.c's:\n got %q\nwant %q", seed, o.Text, runs[i])
		}
		accepted += o.AcceptedTokens
		drafted += o.DraftTokens
	}
	if accepted == 0 || accepted == drafted {
		t.Fatalf("%d of %d drafts accepted: both outcomes of verification must occur", accepted, drafted)
	}
	t.Logf("%d of %d drafts accepted", accepted, drafted)
}

// TestCompareSpeculate: compare --speculate ngram runs both paths with
// speculation, and their tokens stay identical.
func TestCompareSpeculate(t *testing.T) {
	models := sharedModels(t)
	code, out, errs := cli(t, "compare", "--checkpoint", filepath.Join(models, "stories260K.bin"),
		"--tokenizer", filepath.Join(models, "tok512.bin"), "--prompt", "Lily and Ben went to the park",
		"--temperature", "0", "--steps", "200", "--speculate", "ngram", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var points []engine.ComparePoint
	if err := json.Unmarshal([]byte(out), &points); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(points) != 1 || !points[0].TokensIdentical {
		t.Fatalf("paths disagree with speculation: %s", out)
	}
}

// TestBenchSpeculateRows: --speculate off,ngram gives one row per mode
// with the spec column; the ngram tg row reports its acceptance and
// tokens per step.
func TestBenchSpeculateRows(t *testing.T) {
	code, out, errs := cli(t, "bench", "--tests", "tg24", "--threads", "1", "--reps", "1",
		"--speculate", "off,ngram", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []engine.BenchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != 2 || rows[0].Spec != "off" || rows[1].Spec != "ngram" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].TokensPerStep != 0 || rows[1].TokensPerStep < 1 || rows[1].Mean <= 0 {
		t.Fatalf("rows %+v", rows)
	}
	code, out, errs = cli(t, "bench", "--tests", "tg16", "--threads", "1", "--reps", "1", "--speculate", "off,ngram")
	if code != 0 || !strings.Contains(out, "spec") || !strings.Contains(out, "tok/step") || !strings.Contains(out, "ngram") {
		t.Fatalf("exit %d (%s), table:\n%s", code, errs, out)
	}
	if code, _, errs = cli(t, "bench", "--tests", "tg16", "--speculate", "off,medusa"); code != 1 || !strings.Contains(errs, "medusa") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestBenchSpeculateAccepts: with --greedy the tg rows decode greedily,
// so the built-in stories260K's story, whose greedy text repeats itself
// after about 128 tokens (TestGenerateSpeculateGolden's golden ids), gets
// drafts accepted. Sampled at temperature 1, bench's only decoding before
// --greedy, it accepted none.
func TestBenchSpeculateAccepts(t *testing.T) {
	code, out, errs := cli(t, "bench", "--tests", "tg256", "--threads", "1", "--reps", "1",
		"--speculate", "ngram", "--greedy", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []engine.BenchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != 1 || rows[0].AcceptRate <= 0 || rows[0].TokensPerStep <= 1 {
		t.Fatalf("greedy tg256 with ngram accepted nothing: %+v", rows)
	}
}

// readFields reads a whitespace-separated file (a golden ids file).
func readFields(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(raw))
}

// TestLayoutShowsTokenHistoryWindows: infer layout shows the view the
// proposer searches, unfold(0, 3, 1) of an int32 token history: [22, 3]
// with strides [1, 1] over the history's storage, nothing copied.
func TestLayoutShowsTokenHistoryWindows(t *testing.T) {
	code, out, errs := cli(t, "layout", "h = empty(24, dtype=torch.int32); w = h.unfold(0, 3, 1); w[5]")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and 3 steps:\n%s", out)
	}
	for i, want := range [][]string{
		{"int32", "[24]", "[1]", "new", "0 B"},
		{".unfold(0, 3, 1)", "int32", "[22, 3]", "[1, 1]", "False", "shared(h)", "0 B"},
		{"[5]", "int32", "[3]", "5", "shared(h)", "0 B"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Fatalf("step %d lacks %q: %q", i+1, w, lines[i+1])
			}
		}
	}
}

// TestSpeculateFromConfigFile: the speculation keys work from a --config
// YAML file like the other keys (and a flag still overrides the file).
func TestSpeculateFromConfigFile(t *testing.T) {
	models := sharedModels(t)
	cfg := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(cfg, []byte("speculate: ngram\ndraft: 2\nngram_min: 2\nngram_max: 2\ntemperature: 0\nsteps: 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"generate", "--config", cfg, "--checkpoint", filepath.Join(models, "stories260K.bin"),
		"--tokenizer", filepath.Join(models, "tok512.bin"), "--prompt", "Lily and Ben went to the park", "--output", "json"}
	var on, off seqOutput
	for _, tc := range []struct {
		args []string
		o    *seqOutput
	}{{nil, &on}, {[]string{"--speculate", "off"}, &off}} {
		code, out, errs := cli(t, append(base, tc.args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), tc.o); err != nil {
			t.Fatal(err)
		}
	}
	if on.VerifySteps == 0 || on.DraftTokens > 2*on.VerifySteps || off.VerifySteps != 0 || !slices.Equal(on.IDs, off.IDs) {
		t.Fatalf("config speculation: on %d verify steps, %d drafted; off %d verify steps; same ids %v",
			on.VerifySteps, on.DraftTokens, off.VerifySteps, slices.Equal(on.IDs, off.IDs))
	}
}
