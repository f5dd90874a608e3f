package layoutexpr

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// oracleRow is one step as PyTorch answered it (scripts/torch-oracle/gen.py).
type oracleRow struct {
	Op           string `json:"op"`
	Stmt         int    `json:"stmt"`
	OK           bool   `json:"ok"`
	Error        string `json:"error"`
	DType        string `json:"dtype"`
	Shape        []int  `json:"shape"`
	Strides      []int  `json:"strides"`
	Offset       int    `json:"offset"`
	Contiguous   bool   `json:"contiguous"`
	ChannelsLast *bool  `json:"channels_last"`
	Shared       bool   `json:"shared"`
	StorageStep  int    `json:"storage_step"`
	CopiedBytes  int64  `json:"copied_bytes"`
	Var          string `json:"var"`
}

type oracleProgram struct {
	Src  string      `json:"src"`
	Rows []oracleRow `json:"rows"`
}

// loadOracle reads testdata/torch-oracle.jsonl.gz: a header line naming the
// PyTorch version, then one program per line.
func loadOracle(t testing.TB) (version string, progs []oracleProgram) {
	f, err := os.Open("testdata/torch-oracle.jsonl.gz")
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
	for sc.Scan() {
		if version == "" {
			var h struct {
				Torch string `json:"torch"`
			}
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Torch == "" {
				t.Fatalf("header: %v %q", err, sc.Text())
			}
			version = h.Torch
			continue
		}
		var p oracleProgram
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		progs = append(progs, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return version, progs
}

// compareOracle checks every field of every row of one program against
// PyTorch's answer, and returns the first difference ("" if none).
func compareOracle(p oracleProgram, rows []Row) string {
	if len(rows) != len(p.Rows) {
		return fmt.Sprintf("%d rows, PyTorch %d", len(rows), len(p.Rows))
	}
	for i, w := range p.Rows {
		g := rows[i]
		where := fmt.Sprintf("row %d %s", i+1, w.Op)
		if g.Op != w.Op || g.Stmt != w.Stmt {
			return fmt.Sprintf("%s: op %q stmt %d, PyTorch %q stmt %d", where, g.Op, g.Stmt, w.Op, w.Stmt)
		}
		if !w.OK {
			if g.Error == "" {
				return fmt.Sprintf("%s: ok (shape %v strides %v), PyTorch fails: %s", where, g.Shape, g.Strides, w.Error)
			}
			continue
		}
		if g.Error != "" {
			return fmt.Sprintf("%s: fails (%s), PyTorch ok (shape %v strides %v)", where, g.Error, w.Shape, w.Strides)
		}
		got := fmt.Sprintf("%s %v %v %d contig=%v shared=%v storage=%d copied=%d", g.DType, g.Shape, g.Strides, g.Offset, g.Contiguous, g.Storage != "new", g.StorageStep, g.CopiedBytes)
		want := fmt.Sprintf("%s %v %v %d contig=%v shared=%v storage=%d copied=%d", w.DType, w.Shape, w.Strides, w.Offset, w.Contiguous, w.Shared, w.StorageStep, w.CopiedBytes)
		if got != want {
			return fmt.Sprintf("%s:\n     got %s\n   torch %s", where, got, want)
		}
		if w.ChannelsLast != nil && *w.ChannelsLast != g.ChannelsLast {
			return fmt.Sprintf("%s: channels_last %v, PyTorch %v", where, g.ChannelsLast, *w.ChannelsLast)
		}
		if w.Var != g.Var {
			return fmt.Sprintf("%s: var %q, PyTorch program assigns %q", where, g.Var, w.Var)
		}
	}
	return ""
}

// TestTorchOracle replays every recorded program through Eval: each row
// must agree with PyTorch on every field.
func TestTorchOracle(t *testing.T) {
	version, progs := loadOracle(t)
	if !strings.HasPrefix(version, "1.13") || len(progs) < 3000 {
		t.Fatalf("oracle from PyTorch %q with %d programs; want 1.13 and thousands", version, len(progs))
	}
	bad := 0
	for _, p := range progs {
		rows, err := Eval(p.Src)
		var diff string
		if err != nil {
			diff = err.Error()
		} else {
			diff = compareOracle(p, rows)
		}
		if diff != "" {
			bad++
			if bad <= 25 {
				t.Errorf("%s\n  %s", p.Src, diff)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d programs differ from PyTorch %s", bad, len(progs), version)
	}
	// The file must cover what it claims to.
	var all strings.Builder
	for _, p := range progs {
		all.WriteString(p.Src)
		all.WriteByte('\n')
	}
	for _, must := range []string{".view(", ".reshape(", ".transpose(", ".t()", ".T", ".mT", ".permute(", ".expand(", ".unsqueeze(",
		".squeeze()", ".squeeze(", ".flatten(", ".contiguous()", "channels_last", ".clone()", ".to(", ".half()", ".select(",
		".narrow(", ".slice(", ".unfold(", ".split(", ".chunk(", ".unbind(", ".movedim(", ".unflatten(", ".repeat(",
		".repeat_interleave(", ".broadcast_to(", ".diagonal(", ".as_strided(", ".softmax(", ".sum(", ".mean(", " @ ",
		"[None", "...", "::", "arange(", "empty_strided(", "view(torch."} {
		if !strings.Contains(all.String(), must) {
			t.Errorf("the oracle file has no program with %q", must)
		}
	}
	dtypes := map[string]bool{}
	zeroD, zeroSize, fails := false, false, 0
	for _, p := range progs {
		for _, r := range p.Rows {
			dtypes[r.DType] = true
			zeroD = zeroD || (r.OK && len(r.Shape) == 0)
			zeroSize = zeroSize || (r.OK && slices.Contains(r.Shape, 0))
			if !r.OK {
				fails++
			}
		}
	}
	if len(dtypes) < 10 || !zeroD || !zeroSize || fails < 100 {
		t.Errorf("coverage: dtypes %v, 0-d %v, zero-size %v, failing steps %d", dtypes, zeroD, zeroSize, fails)
	}
}
