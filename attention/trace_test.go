package attention

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

var update = flag.Bool("update", false, "rewrite the golden trace files under testdata/")

// seedRow is one row of the MHA table in section 6.1 of the seed notes
// (B=2, S=4096, H=32, D=128), typed in from the notes.
type seedRow struct {
	op         string
	shape      []int
	strides    []int
	contiguous bool
	storage    string // "new" or "shared"
	copies     bool   // the row is the physical deep copy (⚠️物理深拷贝)
}

var seedMHA = []seedRow{
	{"Q = x @ Wqᵀ", []int{2, 4096, 4096}, []int{16777216, 4096, 1}, true, "new", false},                                              // 1 输入 X (QKV Projection)
	{"q = Q.view(2, 4096, 32, 128)", []int{2, 4096, 32, 128}, []int{16777216, 4096, 128, 1}, true, "shared", false},                  // 2
	{"q = q.transpose(1, 2)", []int{2, 32, 4096, 128}, []int{16777216, 128, 4096, 1}, false, "shared", false},                        // 3
	{"k = K.view(2, 4096, 32, 128).transpose(1, 2)", []int{2, 32, 4096, 128}, []int{16777216, 128, 4096, 1}, false, "shared", false}, // 4
	{"scores = q @ k.transpose(-2, -1)", []int{2, 32, 4096, 4096}, []int{536870912, 16777216, 4096, 1}, true, "new", false},          // 5 GEMM新分配
	{"attn = softmax(scores, dim=-1)", []int{2, 32, 4096, 4096}, []int{536870912, 16777216, 4096, 1}, true, "shared", false},         // 6 In-place
	{"out = attn @ v", []int{2, 32, 4096, 128}, []int{16777216, 524288, 128, 1}, true, "new", false},                                 // 7 BMM新输出
	{"out = out.transpose(1, 2)", []int{2, 4096, 32, 128}, []int{16777216, 128, 524288, 1}, false, "shared", false},                  // 8
	{"out = out.contiguous()", []int{2, 4096, 32, 128}, []int{16777216, 4096, 128, 1}, true, "new", true},                            // 9 物理深拷贝
	{"out = out.view(2, 4096, 4096)", []int{2, 4096, 4096}, []int{16777216, 4096, 1}, true, "shared", false},                         // 10
}

// The rows our naive trace has beyond the seed's ten: the separate K and V
// projections, the paged cache write, and V's view (the seed shows K's).
var naiveExtraRows = []string{
	"K = x @ Wkᵀ", "V = x @ Wvᵀ", "reshape_and_cache(k, v)", "v = V.view(2, 4096, 32, 128).transpose(1, 2)",
}

var seedMHAConfig = TraceConfig{B: 2, S: 4096, H: 32, KVH: 32, D: 128, Meta: true}

func TestNaiveTraceReproducesSeedTable(t *testing.T) {
	tr, err := TraceLayer("naive", seedMHAConfig)
	if err != nil {
		t.Fatal(err)
	}
	var rows []tensor.TraceStep
	var extras []string
	for _, st := range tr.Steps {
		if contains(naiveExtraRows, st.Op) {
			extras = append(extras, st.Op)
			continue
		}
		rows = append(rows, st)
	}
	if !reflect.DeepEqual(extras, naiveExtraRows) {
		t.Fatalf("extra rows %q, want %q", extras, naiveExtraRows)
	}
	if len(rows) != len(seedMHA) {
		t.Fatalf("%d seed rows traced, want %d: %+v", len(rows), len(seedMHA), rows)
	}
	const B, S, H, D = 2, 4096, 32, 128
	for i, want := range seedMHA {
		got := rows[i]
		if got.Op != want.op || !reflect.DeepEqual(got.Shape, want.shape) || !reflect.DeepEqual(got.Strides, want.strides) || got.Contiguous != want.contiguous {
			t.Errorf("seed row %d: got %q %v %v contiguous=%v; seed has %q %v %v %v",
				i+1, got.Op, got.Shape, got.Strides, got.Contiguous, want.op, want.shape, want.strides, want.contiguous)
		}
		if kind := strings.SplitN(got.Storage, "(", 2)[0]; kind != want.storage {
			t.Errorf("seed row %d (%s): storage %q, want %s", i+1, want.op, got.Storage, want.storage)
		}
		if want.copies != (got.BytesCopied > 0) {
			t.Errorf("seed row %d (%s): copied %d bytes", i+1, want.op, got.BytesCopied)
		}
	}
	// Bytes, from the shapes: the contiguous() copy moves B·S·H·D floats,
	// the score matrix is B·H·S·S floats.
	if got := rows[8].BytesCopied; got != B*S*H*D*4 {
		t.Errorf("contiguous copied %d bytes, want %d", got, B*S*H*D*4)
	}
	if got := rows[4].BytesAllocated; got != B*H*S*S*4 {
		t.Errorf("scores allocated %d bytes, want %d (4 GiB)", got, B*H*S*S*4)
	}
	golden(t, "seed-mha.naive.golden", tr)
}

func TestFusedTraceSeedMHA(t *testing.T) {
	tr, err := TraceLayer("fused", seedMHAConfig)
	if err != nil {
		t.Fatal(err)
	}
	const B, S, H, D = 2, 4096, 32, 128
	W := 3 * H * D
	want := []seedRow{
		{"qkv = x @ Wqkvᵀ", []int{B, S, W}, []int{S * W, W, 1}, true, "new", false},
		{"q = qkv[..., :4096].view(2, 4096, 32, 128)", []int{B, S, H, D}, []int{S * W, W, D, 1}, false, "shared", false},
		{"k = qkv[..., 4096:8192].view(2, 4096, 32, 128)", []int{B, S, H, D}, []int{S * W, W, D, 1}, false, "shared", false},
		{"v = qkv[..., 8192:12288].view(2, 4096, 32, 128)", []int{B, S, H, D}, []int{S * W, W, D, 1}, false, "shared", false},
		{"reshape_and_cache(k, v)", []int{B * S / 16, 16, H, D}, []int{16 * H * D, H * D, D, 1}, true, "shared", true},
		{"out = fused_attention(q, kv_cache, block_tables)", []int{B, S, H * D}, []int{S * H * D, H * D, 1}, true, "new", false},
	}
	if len(tr.Steps) != len(want) {
		t.Fatalf("%d rows, want %d", len(tr.Steps), len(want))
	}
	for i, w := range want {
		got := tr.Steps[i]
		if got.Op != w.op || !reflect.DeepEqual(got.Shape, w.shape) || !reflect.DeepEqual(got.Strides, w.strides) || got.Contiguous != w.contiguous {
			t.Errorf("row %d: got %q %v %v %v, want %q %v %v %v", i+1, got.Op, got.Shape, got.Strides, got.Contiguous, w.op, w.shape, w.strides, w.contiguous)
		}
		if kind := strings.SplitN(got.Storage, "(", 2)[0]; kind != w.storage {
			t.Errorf("row %d: storage %q, want %s", i+1, got.Storage, w.storage)
		}
	}
	// The only copy is the cache write: K and V of every token, once.
	if got := tr.Steps[4].BytesCopied; got != 2*B*S*H*D*4 {
		t.Errorf("cache write copied %d bytes, want %d", got, 2*B*S*H*D*4)
	}
	if got := tr.Steps[5]; got.BytesCopied != 0 || got.BytesAllocated != B*S*H*D*4 {
		t.Errorf("fused attention copied %d and allocated %d bytes; want 0 and the [B, S, H·D] output", got.BytesCopied, got.BytesAllocated)
	}
	golden(t, "seed-mha.fused.golden", tr)
}

// In a GQA layer the naive path copies every KV head g times; the fused
// path has no such row.
func TestTraceGQARepeatInterleave(t *testing.T) {
	const B, S, H, KVH, D = 2, 4096, 32, 8, 128
	cfg := TraceConfig{B: B, S: S, H: H, KVH: KVH, D: D, Meta: true}
	naive, err := TraceLayer("naive", cfg)
	if err != nil {
		t.Fatal(err)
	}
	kvBytes := int64(B * S * KVH * D * 4)
	var repeats int
	for _, st := range naive.Steps {
		if strings.Contains(st.Op, "repeat_interleave(4, dim=1)") {
			repeats++
			if st.BytesCopied != 4*kvBytes || !reflect.DeepEqual(st.Shape, []int{B, H, S, D}) {
				t.Errorf("%s copied %d bytes into %v; want g·KV = %d bytes into [B, H, S, D]", st.Op, st.BytesCopied, st.Shape, 4*kvBytes)
			}
		}
	}
	if repeats != 2 {
		t.Fatalf("naive GQA trace has %d repeat_interleave rows, want 2 (K and V)", repeats)
	}
	fused, err := TraceLayer("fused", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var copied int64
	for _, st := range fused.Steps {
		if strings.Contains(st.Op, "repeat") || strings.Contains(st.Op, "gather") || strings.Contains(st.Op, "contiguous") {
			t.Errorf("fused trace has row %q", st.Op)
		}
		copied += st.BytesCopied
	}
	if copied != 2*kvBytes {
		t.Fatalf("fused GQA layer copied %d bytes, want only the cache write %d", copied, 2*kvBytes)
	}
}

// The same code traces meta and real tensors: at a small size both runs
// record identical rows, bytes included.
func TestTraceMetaEqualsReal(t *testing.T) {
	for _, path := range []string{"naive", "fused"} {
		for _, cfg := range []TraceConfig{
			{B: 2, S: 8, H: 4, KVH: 4, D: 8, BlockSize: 4},
			{B: 2, S: 8, H: 4, KVH: 2, D: 8, BlockSize: 3},
			{B: 3, S: 1, H: 6, KVH: 2, D: 8, Past: 20, BlockSize: 16},
			{B: 1, S: 5, H: 4, KVH: 1, D: 8, Past: 7, BlockSize: 5},
		} {
			real, err := TraceLayer(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Meta = true
			meta, err := TraceLayer(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(real.Steps, meta.Steps) {
				var a, b bytes.Buffer
				real.WriteTable(&a)
				meta.WriteTable(&b)
				t.Fatalf("%s %+v: real and meta traces differ\nreal:\n%s\nmeta:\n%s", path, cfg, a.String(), b.String())
			}
		}
	}
}

func TestTraceLayerErrors(t *testing.T) {
	for _, c := range []struct {
		path string
		cfg  TraceConfig
		want string
	}{
		{"naive", TraceConfig{B: 0, S: 1, H: 1, KVH: 1, D: 1}, "need B"},
		{"fused", TraceConfig{B: 1, S: 1, H: 3, KVH: 2, D: 1}, "multiple of KVH"},
		{"other", TraceConfig{B: 1, S: 1, H: 1, KVH: 1, D: 1}, "unknown attention path"},
		{"naive", TraceConfig{B: 2, S: 4096, H: 32, KVH: 32, D: 128}, "use Meta"},
		{"naive", TraceConfig{B: 1, S: 1, H: 1, KVH: 1, D: 1, BlockSize: -1}, "block size"},
	} {
		_, err := TraceLayer(c.path, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: got %v, want an error containing %q", c.path, c.cfg, err, c.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// golden compares tr's table with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, tr *tensor.Trace) {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("trace differs from %s:\n%s\nwant:\n%s", path, buf.String(), want)
	}
}

// TestTraceLayerRefusesHugeMetaSizes: sizes whose products overflow int,
// or whose batch bookkeeping would be gigabytes, are refused before
// anything is built (they used to end in "out of memory").
func TestTraceLayerRefusesHugeMetaSizes(t *testing.T) {
	for _, cfg := range []TraceConfig{
		{B: 1 << 40, S: 1 << 40, H: 8, KVH: 2, D: 8, Meta: true},
		{B: 1, S: 1 << 40, H: 8, KVH: 2, D: 8, Meta: true},
		{B: 1, S: 4, Past: math.MaxInt - 2, H: 8, KVH: 2, D: 8, Meta: true},
		{B: 2, S: 16, H: 1 << 40, KVH: 1 << 40, D: 1 << 20, Meta: true},
	} {
		if _, err := TraceLayer("fused", cfg); err == nil || !strings.Contains(err.Error(), "trace:") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	if _, err := TraceLayer("naive", TraceConfig{B: 2, S: 4096, H: 32, KVH: 32, D: 128, Meta: true}); err != nil {
		t.Errorf("the seed's layer: %v", err)
	}
}
