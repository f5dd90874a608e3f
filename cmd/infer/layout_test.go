package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestLayoutTable(t *testing.T) {
	out, errOut, code := runCLI(t, "layout", "arange(12).view(3,4).t().contiguous()")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// The seed's numbers: t() of a (3,4) tensor has strides (1,4) and is
	// not contiguous; contiguous() copies into strides (3,1). arange(12)
	// is int64 in PyTorch, so the copy is 12 × 8 bytes (issue 15).
	want := `step  op             dtype  shape   strides  offset  contiguous  storage         copied
1     arange(12)     int64  [12]    [1]      0       True        new             0 B
2     .view(3,4)     int64  [3, 4]  [4, 1]   0       True        shared(step 1)  0 B
3     .t()           int64  [4, 3]  [1, 4]   0       False       shared(step 1)  0 B
4     .contiguous()  int64  [4, 3]  [3, 1]   0       True        new             96 B
`
	if out != want {
		t.Fatalf("table:\n%s\nwant:\n%s", out, want)
	}
}

func TestLayoutUnquotedArgsAreJoined(t *testing.T) {
	out, _, code := runCLI(t, "layout", "empty(2,", "3).t()")
	if code != 0 || !strings.Contains(out, "[3, 2]  [1, 3]") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestLayoutJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "layout", "--output", "json", "empty(2,4096,4096).view(2,4096,32,128).transpose(1,2).contiguous()")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var steps []map[string]any
	if err := json.Unmarshal([]byte(out), &steps); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(steps) != 4 {
		t.Fatalf("%d steps", len(steps))
	}
	wantKeys := []string{"contiguous", "copied_bytes", "dtype", "error", "memory_format", "offset", "op", "shape", "stmt", "storage", "strides", "var"}
	for i, s := range steps {
		var keys []string
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, wantKeys) || s["error"] != nil {
			t.Fatalf("step %d: keys %v error %v", i, keys, s["error"])
		}
	}
	// Seed MHA table, step 3: q.transpose(1, 2) → strides
	// [16777216, 128, 4096, 1], not contiguous; then the copy.
	if got := steps[2]["strides"]; !reflect.DeepEqual(got, []any{16777216.0, 128.0, 4096.0, 1.0}) || steps[2]["contiguous"] != false {
		t.Fatalf("step 3 = %v", steps[2])
	}
	if s := steps[3]; s["copied_bytes"] != float64(2*32*4096*128*4) || s["contiguous"] != true || s["op"] != ".contiguous()" {
		t.Fatalf("step 4 = %v", s)
	}
}

func TestLayoutFailingStep(t *testing.T) {
	out, errOut, code := runCLI(t, "layout", "arange(12).view(3,4).t().view(12)")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(errOut, "infer: step 4 .view(12): view: view size is not compatible with input tensor's size and stride") {
		t.Fatalf("stderr %q", errOut)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[3], "3     .t()  ") {
		t.Fatalf("stdout should hold the header and the 3 steps that worked:\n%s", out)
	}

	out, errOut, code = runCLI(t, "layout", "--output", "json", "empty(3).expand(4,3).expand(2,2)")
	if code != 1 || !strings.Contains(errOut, "The expanded size of the tensor (2) must match the existing size (3)") {
		t.Fatalf("json: exit %d, stderr %q", code, errOut)
	}
	var steps []map[string]any
	if err := json.Unmarshal([]byte(out), &steps); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if last := steps[2]; len(steps) != 3 || last["shape"] != nil || !strings.HasPrefix(last["error"].(string), "expand: The expanded size") {
		t.Fatalf("steps %v", steps)
	}
}

func TestLayoutSyntaxErrorPointsAtTheColumn(t *testing.T) {
	out, errOut, code := runCLI(t, "layout", "empty(2,3).foo(1)")
	want := "infer: layout expression: column 12: unknown tensor method \"foo\"\n  empty(2,3).foo(1)\n             ^\n"
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, errOut, want)
	}
}

func TestLayoutOutputPrecedence(t *testing.T) {
	const expr = "empty(3).expand(4,3)"
	isJSON := func(out string) bool { return strings.HasPrefix(out, "[") }
	cfg := writeConfig(t, "layout:\n  output: json\n")

	if out, _, code := runCLI(t, "layout", "--config", cfg, expr); code != 0 || !isJSON(out) {
		t.Fatalf("config file output: json ignored:\n%s", out)
	}
	t.Setenv("INFER_LAYOUT_OUTPUT", "table")
	if out, _, code := runCLI(t, "layout", "--config", cfg, expr); code != 0 || isJSON(out) {
		t.Fatalf("INFER_LAYOUT_OUTPUT=table should beat the config file:\n%s", out)
	}
	t.Setenv("INFER_LAYOUT_OUTPUT", "json")
	if out, _, code := runCLI(t, "layout", expr); code != 0 || !isJSON(out) {
		t.Fatalf("INFER_LAYOUT_OUTPUT=json ignored:\n%s", out)
	}
	if out, _, code := runCLI(t, "layout", "--output", "table", expr); code != 0 || isJSON(out) {
		t.Fatalf("--output table should beat INFER_LAYOUT_OUTPUT=json:\n%s", out)
	}
	t.Setenv("INFER_LAYOUT_OUTPUT", "xml")
	_, errOut, code := runCLI(t, "layout", expr)
	if code != 1 || !strings.Contains(errOut, `config key "layout.output" (from env INFER_LAYOUT_OUTPUT): "xml" is not one of table, json`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestLayoutJSONAgainstTorch replays every 10th program of the PyTorch
// 1.13 recording (tensor/layoutexpr/testdata/torch-oracle.jsonl.gz, made by
// scripts/torch-oracle/gen.py) through `infer layout --output json`:
// every field the JSON has must be PyTorch's, a failing program exits 1
// after printing the rows that worked.
func TestLayoutJSONAgainstTorch(t *testing.T) {
	f, err := os.Open("../../tensor/layoutexpr/testdata/torch-oracle.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sc.Scan() // header
	n, checked := 0, 0
	for sc.Scan() {
		n++
		if n%10 != 0 {
			continue
		}
		var p struct {
			Src  string           `json:"src"`
			Rows []map[string]any `json:"rows"` // gen.py's fields, see torchRow
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, "layout", "--output", "json", "--", p.Src)
		failing := p.Rows[len(p.Rows)-1]["ok"] != true
		if (code == 1) != failing || (code != 0 && code != 1) {
			t.Fatalf("%s: exit %d (stderr %q), PyTorch failing %v", p.Src, code, errOut, failing)
		}
		var got []map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", p.Src, err, out)
		}
		if len(got) != len(p.Rows) {
			t.Fatalf("%s: %d rows, PyTorch %d", p.Src, len(got), len(p.Rows))
		}
		for i, w := range p.Rows {
			g := got[i]
			if g["op"] != w["op"] || g["stmt"] != w["stmt"] {
				t.Fatalf("%s row %d: op %v stmt %v, PyTorch %v %v", p.Src, i+1, g["op"], g["stmt"], w["op"], w["stmt"])
			}
			if w["ok"] != true {
				if g["error"] == nil || g["shape"] != nil {
					t.Fatalf("%s row %d: PyTorch fails, JSON %v", p.Src, i+1, g)
				}
				continue
			}
			want := torchRow(w)
			shared := g["storage"] != "new"
			delete(g, "storage")
			if !reflect.DeepEqual(g, want) || shared != (w["shared"] == true) {
				t.Fatalf("%s row %d:\n  got   %v (shared %v)\n  torch %v (shared %v)", p.Src, i+1, g, shared, want, w["shared"])
			}
		}
		checked++
	}
	if checked < 300 {
		t.Fatalf("only %d programs replayed", checked)
	}
}

// torchRow is PyTorch's answer for a step that worked, one row of
// scripts/torch-oracle/gen.py's recording, in the form of infer layout's
// JSON: storage is left out (the test compares shared against new), and
// memory_format is channels_last where PyTorch reports channels_last
// for a tensor that is not contiguous.
func torchRow(w map[string]any) map[string]any {
	want := map[string]any{"memory_format": nil, "var": nil, "error": nil}
	for _, k := range []string{"op", "stmt", "dtype", "shape", "strides", "offset", "contiguous", "copied_bytes"} {
		want[k] = w[k]
	}
	if w["channels_last"] == true && w["contiguous"] != true {
		want["memory_format"] = "channels_last"
	}
	if v, _ := w["var"].(string); v != "" {
		want["var"] = v
	}
	return want
}

func ints(v []int) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestLayoutSeedMHAProgram runs configs/mha-layout.py with -f: its rows are
// the seed's MHA table (section 6.1), PyTorch's printed numbers.
func TestLayoutSeedMHAProgram(t *testing.T) {
	out, errOut, code := runCLI(t, "layout", "--output", "json", "-f", filepath.Join("..", "..", "configs", "mha-layout.py"))
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	byVar := map[string]map[string]any{}
	for _, r := range rows {
		if v, ok := r["var"].(string); ok {
			byVar[v] = r
		}
	}
	f := func(v ...int) []any { return ints(v) }
	seed := []struct {
		v               string
		shape, strides  []any
		contig          bool
		storage, copied any
	}{
		{"Q", f(2, 4096, 4096), f(16777216, 4096, 1), true, "new", 0.0},
		{"q", f(2, 32, 4096, 128), f(16777216, 128, 4096, 1), false, "shared(Q)", 0.0},
		{"k", f(2, 32, 4096, 128), f(16777216, 128, 4096, 1), false, "shared(K)", 0.0},
		{"scores", f(2, 32, 4096, 4096), f(536870912, 16777216, 4096, 1), true, "new", float64(2 * 32 * 4096 * 4096 * 4)},
		{"attn", f(2, 32, 4096, 4096), f(536870912, 16777216, 4096, 1), true, "new", float64(2 * 32 * 4096 * 4096 * 4)},
		{"out", f(2, 4096, 4096), f(16777216, 4096, 1), true, "shared(step 16)", 0.0},
	}
	for _, s := range seed {
		r := byVar[s.v]
		if r == nil || !reflect.DeepEqual(r["shape"], s.shape) || !reflect.DeepEqual(r["strides"], s.strides) ||
			r["contiguous"] != s.contig || r["storage"] != s.storage || r["copied_bytes"] != s.copied {
			t.Errorf("%s = %v, seed says %v %v %v", s.v, r, s.shape, s.strides, s.contig)
		}
	}
	// Seed rows 7–9: attn @ v is contiguous, its transpose(1, 2) is not,
	// and contiguous() copies 128 MiB.
	if r := rows[14]; r["op"] != ".transpose(1, 2)" || !reflect.DeepEqual(r["strides"], f(16777216, 128, 524288, 1)) || r["contiguous"] != false {
		t.Errorf("row 15 = %v", r)
	}
	if r := rows[15]; r["op"] != ".contiguous()" || r["copied_bytes"] != float64(2*4096*4096*4) {
		t.Errorf("row 16 = %v", r)
	}
	if _, errOut, code := runCLI(t, "layout", "-f", filepath.Join(t.TempDir(), "missing.py")); code != 1 || !strings.Contains(errOut, "missing.py") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "layout", "-f", "x.py", "empty(2)"); code != 1 || !strings.Contains(errOut, "not both") {
		t.Errorf("file and program: exit %d, %q", code, errOut)
	}
}

// TestLayoutProgramFailureStopsWithRows: a failing statement prints the
// rows before it, then PyTorch's error with its line, and exits 1.
func TestLayoutProgramFailureStopsWithRows(t *testing.T) {
	out, errOut, code := runCLI(t, "layout", "x = empty(3, 4)\ny = x.t()\nz = y.view(12)\nw = z + 1")
	if code != 1 || !strings.HasPrefix(errOut, "infer: line 3, step 3 .view(12): view: view size is not compatible") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "shared(x)") || strings.Count(strings.TrimSpace(out), "\n") != 2 {
		t.Fatalf("stdout:\n%s", out)
	}
	_, errOut, _ = runCLI(t, "layout", "x = empty(3)\ny = x.bogus()")
	if !strings.Contains(errOut, "line 2, column 7: unknown tensor method \"bogus\"\n  y = x.bogus()\n        ^") {
		t.Fatalf("syntax error: %q", errOut)
	}
}

// TestLayoutGridAndDraw: --grid prints CuTe-style grids after the table,
// --draw writes an SVG or PNG, and an unknown extension is refused.
func TestLayoutGridAndDraw(t *testing.T) {
	out, _, code := runCLI(t, "layout", "--grid", "arange(12).view(3,4).t()")
	if code != 0 || !strings.Contains(out, "step 3 .t()\n(4,3):(1,4) offset 0\n") || !strings.Contains(out, " 3 |  3 |  7 | 11 |") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	dir := t.TempDir()
	svg, png := filepath.Join(dir, "a.svg"), filepath.Join(dir, "a.png")
	for _, p := range []string{svg, png} {
		if _, errOut, code := runCLI(t, "layout", "--draw", p, "empty(2,3).t().contiguous()"); code != 0 {
			t.Fatalf("--draw %s: exit %d %s", p, code, errOut)
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.HasPrefix(string(b), "<?xml") || !strings.Contains(string(b), "input storage") {
		t.Fatalf("svg: %v %.100s", err, b)
	}
	if b, err := os.ReadFile(png); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("png: %v", err)
	}
	if _, errOut, code := runCLI(t, "layout", "--draw", filepath.Join(dir, "a.gif"), "empty(2)"); code != 1 || !strings.Contains(errOut, ".svg or .png") {
		t.Fatalf("gif: exit %d %q", code, errOut)
	}
}
