package tensor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// seedTrace records the head split of the seed's multi-head attention table ([B,S,H,D] = [2,4096,32,128]) on meta tensors.
func seedTrace(t *testing.T) *Trace {
	t.Helper()
	tr := NewTrace("MHA layout")
	x := Must(Meta(F32, 2, 4096, 4096))
	tr.Input("X", x)
	tr.Record("X", x, 0, 0)
	q := Must(x.View(2, 4096, 32, 128))
	tr.Record("q = X.view(2, 4096, 32, 128)", q, 0, 0)
	qt := Must(q.Transpose(1, 2))
	tr.Record("q.transpose(1, 2)", qt, 0, 0)
	c := Must(qt.Contiguous())
	n := int64(c.Nbytes())
	tr.Record("q.contiguous() | copy", c, n, n)
	tr.Record("view(64, 4096, 128)", Must(c.View(64, 4096, 128)), 0, 0)
	return tr
}

func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {48, "48 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{64 << 20, "64.0 MiB"}, {1<<30 - 1, "1.0 GiB"}, {4 << 30, "4.0 GiB"},
		{3 << 40, "3.0 TiB"}, {-2048, "-2.0 KiB"},
	} {
		if got := FormatBytes(c.n); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestTraceWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := seedTrace(t).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `MHA layout
step  op                            shape               strides                     offset  contiguous  storage                        allocated  copied
1     X                             [2, 4096, 4096]     [16777216, 4096, 1]         0       True        shared(X)                      0 B        0 B
2     q = X.view(2, 4096, 32, 128)  [2, 4096, 32, 128]  [16777216, 4096, 128, 1]    0       True        shared(X)                      0 B        0 B
3     q.transpose(1, 2)             [2, 32, 4096, 128]  [16777216, 128, 4096, 1]    0       False       shared(X)                      0 B        0 B
4     q.contiguous() | copy         [2, 32, 4096, 128]  [16777216, 524288, 128, 1]  0       True        new                            128.0 MiB  128.0 MiB
5     view(64, 4096, 128)           [64, 4096, 128]     [524288, 128, 1]            0       True        shared(q.contiguous() | copy)  0 B        0 B
      total                                                                                                                            128.0 MiB  128.0 MiB
`
	if got := b.String(); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestTraceWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := seedTrace(t).WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	want := `**MHA layout**

| step | op | shape | strides | offset | contiguous | storage | allocated | copied |
|---:|---|---|---|---:|---|---|---:|---:|
| 1 | X | [2, 4096, 4096] | [16777216, 4096, 1] | 0 | True | shared(X) | 0 B | 0 B |
| 2 | q = X.view(2, 4096, 32, 128) | [2, 4096, 32, 128] | [16777216, 4096, 128, 1] | 0 | True | shared(X) | 0 B | 0 B |
| 3 | q.transpose(1, 2) | [2, 32, 4096, 128] | [16777216, 128, 4096, 1] | 0 | False | shared(X) | 0 B | 0 B |
| 4 | q.contiguous() \| copy | [2, 32, 4096, 128] | [16777216, 524288, 128, 1] | 0 | True | new | 128.0 MiB | 128.0 MiB |
| 5 | view(64, 4096, 128) | [64, 4096, 128] | [524288, 128, 1] | 0 | True | shared(q.contiguous() \| copy) | 0 B | 0 B |
|  | **total** |  |  |  |  |  | **128.0 MiB** | **128.0 MiB** |
`
	if got := b.String(); got != want {
		t.Fatalf("markdown:\n%s\nwant:\n%s", got, want)
	}
	// Every row has the same number of unescaped cell separators.
	for i, line := range strings.Split(strings.TrimSpace(want), "\n")[2:] {
		if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != 10 {
			t.Errorf("markdown line %d has %d separators: %s", i, n, line)
		}
	}
}

func TestTraceWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := seedTrace(t).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&b)
	dec.UseNumber()
	var steps []map[string]any
	if err := dec.Decode(&steps); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 5 {
		t.Fatalf("%d steps", len(steps))
	}
	wantKeys := []string{"bytes_allocated", "bytes_copied", "contiguous", "offset", "op", "shape", "step", "storage", "strides"}
	for i, s := range steps {
		var keys []string
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, wantKeys) {
			t.Fatalf("step %d keys %v, want %v", i, keys, wantKeys)
		}
	}
	c := steps[3]
	// 2·32·4096·128·4 bytes, exact rather than "128.0 MiB".
	if c["bytes_copied"] != json.Number("134217728") || c["bytes_allocated"] != json.Number("134217728") ||
		c["contiguous"] != true || c["storage"] != "new" || c["op"] != "q.contiguous() | copy" {
		t.Fatalf("step 4 = %v", c)
	}
	if got := steps[2]["strides"]; !reflect.DeepEqual(got, []any{json.Number("16777216"), json.Number("128"), json.Number("4096"), json.Number("1")}) {
		t.Fatalf("step 3 strides %v", got)
	}
}

func TestTraceFormatEmptyAndScalar(t *testing.T) {
	var nilTrace *Trace
	var b bytes.Buffer
	if err := nilTrace.WriteJSON(&b); err != nil || b.String() != "[]\n" {
		t.Fatalf("nil trace JSON %q %v", b.String(), err)
	}
	tr := NewTrace("")
	tr.Record("sum()", Must(Meta(F32)), 4, 0) // 0-dim: shape [] not null
	b.Reset()
	if err := tr.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	want := "[\n  {\"step\":1,\"op\":\"sum()\",\"shape\":[],\"strides\":[],\"offset\":0,\"contiguous\":true,\"storage\":\"new\",\"bytes_allocated\":4,\"bytes_copied\":0}\n]\n"
	if b.String() != want {
		t.Fatalf("scalar JSON %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := tr.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "step") || !strings.Contains(b.String(), "1     sum()  []     []       0       True        new      4 B        0 B") {
		t.Fatalf("scalar table:\n%s", b.String())
	}
}

// WriteTraces is infer trace's output: the traces' tables separated by a
// blank line, or one JSON array of {"title", "steps"}.
func TestWriteTraces(t *testing.T) {
	a, b := seedTrace(t), seedTrace(t)
	b.Title = "second"
	var want, got bytes.Buffer
	a.WriteTable(&want)
	want.WriteString("\n")
	b.WriteTable(&want)
	if err := WriteTraces(&got, "table", []*Trace{a, b}); err != nil || got.String() != want.String() {
		t.Fatalf("table: err %v\n%s\nwant\n%s", err, got.String(), want.String())
	}
	got.Reset()
	if err := WriteTraces(&got, "json", []*Trace{a, b}); err != nil {
		t.Fatal(err)
	}
	var all []struct {
		Title string      `json:"title"`
		Steps []TraceStep `json:"steps"`
	}
	if err := json.Unmarshal(got.Bytes(), &all); err != nil {
		t.Fatalf("json: %v\n%s", err, got.String())
	}
	if len(all) != 2 || all[1].Title != "second" || !reflect.DeepEqual(all[0].Steps, a.Steps) {
		t.Fatalf("json: %+v", all)
	}
	if !strings.HasPrefix(got.String(), "[\n  {\n    \"title\": \"MHA layout\",\n    \"steps\": [\n") {
		t.Fatalf("json is not indented as infer trace prints it:\n%s", got.String())
	}
	if err := WriteTraces(&got, "csv", []*Trace{a}); err == nil || !strings.Contains(err.Error(), `unknown format "csv"`) {
		t.Fatalf("csv: err %v", err)
	}
}
