package configs

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"steps": "INFER_STEPS", "layout.output": "INFER_LAYOUT_OUTPUT",
		"synthetic.n_kv_heads": "INFER_SYNTHETIC_N_KV_HEADS", "kv-dtype": "INFER_KV_DTYPE",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

// The bounds print as --help shows them and accept exactly their
// interval; NaN and ±Inf are refused by every numeric key.
func TestBounds(t *testing.T) {
	for _, c := range []struct {
		b       *Bounds
		text    string
		in, out []float64
	}{
		{AtLeast(0), "≥ 0", []float64{0, 1, 1e300}, []float64{-1e-9, -1}},
		{Above(0), "> 0", []float64{1e-300, 2}, []float64{0, -1}},
		{InRange(0, 1), "in [0, 1]", []float64{0, 0.5, 1}, []float64{-0.1, 1.0000001}},
		{AtLeast(-1), "≥ -1", []float64{-1, 0}, []float64{-2}},
	} {
		if got := c.b.String(); got != c.text {
			t.Errorf("%+v prints %q, want %q", *c.b, got, c.text)
		}
		k := Key{Name: "x", Kind: Float, Range: c.b}
		for _, f := range c.in {
			if err := k.check(f); err != nil {
				t.Errorf("%s refuses %v: %v", c.text, f, err)
			}
		}
		for _, f := range append(c.out, math.NaN(), math.Inf(1), math.Inf(-1)) {
			if err := k.check(f); err == nil {
				t.Errorf("%s accepts %v", c.text, f)
			}
		}
	}
	err := Key{Name: "x", Kind: Int, Range: AtLeast(1)}.check(0)
	if err == nil || err.Error() != "must be ≥ 1 (got 0)" {
		t.Errorf("int below its bound: %v", err)
	}
}

// Each kind accepts its Go type, and the strings the environment gives;
// anything else is named in the error.
func TestConversions(t *testing.T) {
	ok := []struct {
		kind Kind
		v    any
	}{
		{Int, 3}, {Int, int64(-4)}, {Int, " 5 "}, {Int, 2.0}, {Int, uint64(7)},
		{Float, 0.5}, {Float, 3}, {Float, "1e-3"}, {Float, float32(2)},
		{Bool, true}, {Bool, "false"}, {Bool, "1"},
		{Duration, time.Second}, {Duration, "250ms"},
		{Strings, "a"}, {Strings, []string{"a", "b"}}, {Strings, []any{"a"}}, {Strings, ""},
		{String, "x"}, {Path, "a/b"},
	}
	for _, c := range ok {
		if err := (Key{Name: "k", Kind: c.kind}).check(c.v); err != nil {
			t.Errorf("%v refuses %#v: %v", c.kind, c.v, err)
		}
	}
	bad := []struct {
		kind Kind
		v    any
		want string
	}{
		{Int, 2.5, "want an integer, got float64 2.5"},
		{Int, "abc", `want an integer, got string "abc"`},
		{Int, uint64(1 << 63), "want an integer"},
		{Int, float64(1 << 60), "want an integer"},
		{Float, []any{1}, "want a number, got a list"},
		{Bool, map[string]any{}, "want a boolean, got a section"},
		{Duration, "5", `want a duration such as "500ms", got string "5"`},
		{Strings, []any{"a", 1}, "want a string or a list of strings, got int 1 as item 1"},
		{String, nil, "want a string, got nothing"},
		{Path, 3, "want a path, got int 3"},
	}
	for _, c := range bad {
		err := (Key{Name: "k", Kind: c.kind}).check(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v of %#v: %v, want %q", c.kind, c.v, err, c.want)
		}
	}
	// A secret key's errors never show the value.
	err := Key{Name: "api_key", Kind: Strings, Secret: true}.check([]any{"sk-123", 4})
	if err == nil || strings.Contains(err.Error(), "sk-123") || !strings.Contains(err.Error(), "secret") {
		t.Errorf("secret key: %v", err)
	}
	if l, _ := toStrings(""); l != nil {
		t.Errorf(`toStrings("") = %q, want no strings`, l)
	}
}
