package tokenizer

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// withNormalizer is a minimal tokenizer.json with the given normalizer
// and pre-tokenizer JSON.
func withNormalizer(norm, pre string) []byte {
	return []byte(fmt.Sprintf(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "▁": 2}, "merges": []},
 "normalizer": %s, "pre_tokenizer": %s}`, norm, pre))
}

func replaceChain(n int, pattern, content string) string {
	steps := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf(`{"type": "Replace", "pattern": {"String": %q}, "content": %q}`, pattern, content)
	}
	return `{"type": "Sequence", "normalizers": [` + strings.Join(steps, ",") + `]}`
}

// Issue 25 row 5: a normalizer chain that would grow the text without
// bound, an empty or huge pattern, and too many steps are refused when
// the file is read, naming the cap.
func TestJSONNormalizerBounds(t *testing.T) {
	huge := strings.Repeat("a", maxJSONPattern+1)
	for _, c := range []struct {
		name, norm, pre, want string
	}{
		{"doubling chain", replaceChain(30, "a", "aa"), "null", "more than 64 times longer"},
		{"one huge growth", replaceChain(1, "a", strings.Repeat("b", 100)), "null", "more than 64 times longer"},
		{"empty pattern", replaceChain(1, "", "a"), "null", "empty pattern"},
		{"huge content", replaceChain(1, "a", huge), "null", "longer than 4096 bytes"},
		{"huge prepend", `{"type": "Prepend", "prepend": "` + huge + `"}`, "null", "Prepend of 4097 bytes"},
		{"too many steps", replaceChain(maxJSONSteps+1, "a", "b"), "null", "257 normalizer steps"},
		{"huge split regex", "null", `{"type": "Split", "pattern": {"Regex": "` + huge + `"}, "behavior": "Isolated"}`, "Split pattern is 4097 bytes"},
		{"huge split string", "null", `{"type": "Split", "pattern": {"String": "` + huge + `"}, "behavior": "Isolated"}`, "Split pattern is 4097 bytes"},
		{"huge metaspace", "null", `{"type": "Metaspace", "replacement": "` + huge + `"}`, "Metaspace replacement is 4097 bytes"},
		{"wrong-typed added token flag", "null", "null", "normalized"},
	} {
		tj := withNormalizer(c.norm, c.pre)
		if c.name == "wrong-typed added token flag" {
			tj = []byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1, "content": "<x>", "normalized": "yes"}]}`)
		}
		_, err := FromJSON(tj, nil, "hostile.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "tokenizer hostile.json: ") {
			t.Errorf("%s: %v, want an error naming the file and containing %q", c.name, err, c.want)
		}
	}
	// What real files do stays accepted: Llama 2's Prepend + Replace,
	// a Metaspace, and a chain that does not grow the text.
	for _, tj := range [][]byte{
		[]byte(tinyJSON),
		withNormalizer(replaceChain(200, "a", "b"), `{"type": "Metaspace", "replacement": "▁"}`),
		withNormalizer(`{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}`, "null"),
	} {
		if _, err := FromJSON(tj, nil, "ok.json"); err != nil {
			t.Errorf("a bounded pipeline is refused: %v", err)
		}
	}
}

// The accepted worst case really is proportional: through a chain that
// grows the text 4×, encoding 4× more input allocates about 4× more,
// not more than linearly.
func TestJSONNormalizerMemory(t *testing.T) {
	// a → ▁▁ (6 bytes), then ▁ → ab: each a becomes abab.
	tk, err := FromJSON(withNormalizer(`{"type": "Sequence", "normalizers": [
 {"type": "Replace", "pattern": {"String": "a"}, "content": "▁▁"},
 {"type": "Replace", "pattern": {"String": "▁"}, "content": "ab"}]}`, "null"), nil, "chain.json")
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ids, err := tk.Encode(strings.Repeat("a", n), false, false)
		runtime.ReadMemStats(&after)
		if err != nil || len(ids) != 4*n {
			t.Fatalf("%d bytes: %d ids (want %d), %v", n, len(ids), 4*n, err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(1<<18), alloc(1<<20)
	if ratio := float64(large) / float64(small); ratio > 5 {
		t.Errorf("4× the input allocated %.1f× as much (%d vs %d bytes)", ratio, large, small)
	}
}
