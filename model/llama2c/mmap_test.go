package llama2c

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/tensor"
)

// writeFile writes data to a new file in a test directory.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoad(t testing.TB, path string, opts model.LoadOptions) *model.Model {
	t.Helper()
	m, err := load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// inMapping reports whether t's elements lie inside the mapping of m: the
// address of its first element is within [start, start+len).
func inMapping(m *model.Model, t *tensor.Tensor) bool {
	f := opened[m]
	if f == nil || f.data == nil || t.DType() != tensor.F32 || t.IsMeta() {
		return false
	}
	data := f.data
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	p := uintptr(unsafe.Pointer(&t.Storage().Float32s()[t.Offset()]))
	return p >= lo && p+uintptr(4*t.Numel()) <= lo+uintptr(len(data))
}

// checkMapped asserts the zero-copy layout of a mapped F32 model: every
// weight but WQKV is a view of the mapping, WQKV is not, and the loader
// allocated and copied exactly the WQKV bytes.
func checkMapped(t *testing.T, m *model.Model, led *tensor.Ledger, fileSize int64) {
	t.Helper()
	if !mapfile.Supported || !hostLittleEndian {
		t.Skip("skipping: no mmap on this platform")
	}
	c := m.Config
	w := m.Weights
	views := map[string]*tensor.Tensor{"embedding": w.TokenEmbedding, "classifier": w.Classifier, "final norm": w.FinalNorm}
	for l, L := range w.Layers {
		for name, x := range map[string]*tensor.Tensor{"attn norm": L.AttnNorm, "wo": L.WO, "ffn norm": L.FFNNorm,
			"w1": L.W1, "w2": L.W2, "w3": L.W3} {
			views[fmt.Sprintf("layer %d %s", l, name)] = x
		}
		if inMapping(m, L.WQKV) {
			t.Fatalf("layer %d WQKV is inside the mapping: the file has no contiguous WQKV", l)
		}
	}
	for name, x := range views {
		if !inMapping(m, x) {
			t.Fatalf("%s is not a view of the mapped file", name)
		}
	}
	qkv := int64(c.NLayers) * int64(c.QKVRows()) * int64(c.Dim) * 4
	st := led.Stats()
	if st.BytesAllocated != qkv || st.BytesCopied != qkv {
		t.Fatalf("allocated %d and copied %d bytes, want the fused WQKV: %d", st.BytesAllocated, st.BytesCopied, qkv)
	}
	if mapped, copied := m.MappedBytes(); mapped != fileSize || copied != qkv {
		t.Fatalf("MappedBytes = %d, %d; want %d, %d", mapped, copied, fileSize, qkv)
	}
}

// TestLoadMmapZeroCopy loads legacy and version-1 files mapped and read:
// the same model either way, and mapped, only WQKV is copied.
func TestLoadMmapZeroCopy(t *testing.T) {
	for _, shared := range []bool{true, false} {
		m := mustSynth(t, tinyConfig(shared), 17)
		for _, f := range []struct {
			name string
			data []byte
		}{{"legacy", legacyBytes(t, m)}, {"v1", writeV1(t, m)}} {
			path := writeFile(t, f.name+".bin", f.data)
			led := tensor.NewLedger()
			mapped := mustLoad(t, path, model.LoadOptions{Ledger: led})
			read := mustLoad(t, path, model.LoadOptions{NoMmap: true})
			sameModel(t, m, mapped)
			sameModel(t, m, read)
			checkMapped(t, mapped, led, int64(len(f.data)))
			if mb, _ := read.MappedBytes(); mb != 0 {
				t.Fatalf("a read model reports %d mapped bytes", mb)
			}
			if a, b := greedyIDs(t, mapped, 8), greedyIDs(t, read, 8); !slices.Equal(a, b) {
				t.Fatalf("%s shared=%v: mapped generates %v, read %v", f.name, shared, a, b)
			}
		}
	}
}

func TestLoadMmapStories260K(t *testing.T) {
	path := sharedFile(t, "models/stories260K.bin")
	led := tensor.NewLedger()
	mapped := mustLoad(t, path, model.LoadOptions{Ledger: led})
	read := mustLoad(t, path, model.LoadOptions{NoMmap: true})
	sameModel(t, read, mapped)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	checkMapped(t, mapped, led, st.Size())
	_, copied := mapped.MappedBytes()
	t.Logf("stories260K: %d bytes mapped, qkv fusion copies %d bytes at load", st.Size(), copied)
	if a, b := greedyIDs(t, mapped, 64), greedyIDs(t, read, 64); !slices.Equal(a, b) {
		t.Fatalf("mapped generates %v, read %v", a, b)
	}
}

// TestLoadMmapHalf: converting to F16/BF16 copies every matrix, but the
// norms stay views of the mapping.
func TestLoadMmapHalf(t *testing.T) {
	if !mapfile.Supported || !hostLittleEndian {
		t.Skip("skipping: no mmap on this platform")
	}
	m := mustSynth(t, tinyConfig(false), 4)
	path := writeFile(t, "m.bin", legacyBytes(t, m))
	c := m.Config
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		led := tensor.NewLedger()
		mapped := mustLoad(t, path, model.LoadOptions{WeightDType: dt, Ledger: led})
		sameModel(t, mustLoad(t, path, model.LoadOptions{WeightDType: dt, NoMmap: true}), mapped)
		if !inMapping(mapped, mapped.Weights.Layers[1].FFNNorm) || !inMapping(mapped, mapped.Weights.FinalNorm) {
			t.Fatalf("%v: norms should be views of the mapping", dt)
		}
		norms := int64(2*c.NLayers+1) * int64(c.Dim)
		want := (c.Params() - norms) * 2
		if st := led.Stats(); st.BytesAllocated != want || st.BytesCopied != want {
			t.Fatalf("%v: allocated %d, copied %d; want the matrices at 2 bytes: %d", dt, st.BytesAllocated, st.BytesCopied, want)
		}
	}
}

// TestMmapWriteIsPrivate: writing a weight of a mapped model changes the
// model, never the file (MAP_PRIVATE copy-on-write).
func TestMmapWriteIsPrivate(t *testing.T) {
	m := mustSynth(t, tinyConfig(true), 6)
	data := legacyBytes(t, m)
	path := writeFile(t, "w.bin", data)
	a := mustLoad(t, path, model.LoadOptions{})
	w := a.Weights.Layers[0].W2
	old, _ := w.At(1, 2)
	if err := w.Set(old+1, 1, 2); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.At(1, 2); got != old+1 {
		t.Fatalf("write did not take: %v", got)
	}
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, data) {
		t.Fatal("writing a mapped weight modified the checkpoint file")
	}
	b := mustLoad(t, path, model.LoadOptions{})
	if got, _ := b.Weights.Layers[0].W2.At(1, 2); got != old {
		t.Fatalf("a second mapping sees %v, want the file's %v", got, old)
	}
}

func TestModelClose(t *testing.T) {
	m := mustSynth(t, tinyConfig(true), 6)
	path := writeFile(t, "c.bin", legacyBytes(t, m))
	for _, opts := range []model.LoadOptions{{}, {NoMmap: true}} {
		got, err := load(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Close(); err != nil {
			t.Fatal(err)
		}
		if err := got.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if mapped, _ := got.MappedBytes(); mapped != 0 {
			t.Fatalf("closed model still reports %d mapped bytes", mapped)
		}
		if opts.NoMmap || !mapfile.Supported {
			sameModel(t, m, got) // nothing to release: the weights stay
			continue
		}
		// The weights are gone: using the model is an error, not a fault.
		if _, err := model.NewEngine(got, model.EngineOptions{}); err == nil {
			t.Fatal("NewEngine accepted a closed model")
		}
		var buf bytes.Buffer
		if err := WriteLegacy(&buf, got); err == nil {
			t.Fatal("WriteLegacy accepted a closed model")
		}
	}
	var nilModel *model.Model
	if err := nilModel.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLoadMmapErrors: the mapped path validates like Read and names the
// file.
func TestLoadMmapErrors(t *testing.T) {
	good := legacyBytes(t, mustSynth(t, tinyConfig(true), 1))
	for name, data := range map[string][]byte{"empty": nil, "truncated": good[:len(good)-4], "bad dim": corrupt(good, 0, 18)} {
		path := writeFile(t, "bad.bin", data)
		if _, err := load(path, model.LoadOptions{}); err == nil || !strings.HasPrefix(err.Error(), "checkpoint "+path+": ") {
			t.Fatalf("%s: got %v", name, err)
		}
	}
	path := writeFile(t, "good.bin", good)
	if _, err := load(path, model.LoadOptions{WeightDType: 7}); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Fatalf("bad dtype: got %v", err)
	}
}

// memSample is what the helper process measures, in bytes and ns.
type memSample struct {
	anon0, file0         int64 // before Load
	anonLoad, fileLoad   int64 // after Load
	anonTouch, fileTouch int64 // after reading every weight once
	loadNS               int64
}

// rssStatus returns RssAnon and RssFile of this process (Linux only).
func rssStatus() (anon, file int64, ok bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	var got int
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "RssAnon:":
			anon, got = v*1024, got+1
		case "RssFile:":
			file, got = v*1024, got+1
		}
	}
	return anon, file, got == 2
}

// touchWeights reads every weight once, as the first token does, and
// returns their sum (so the reads are not optimized away).
func touchWeights(m *model.Model) float64 {
	var s float64
	add := func(t *tensor.Tensor) {
		st := t.Storage()
		if f := st.Float32s(); f != nil {
			for _, v := range f {
				s += float64(v)
			}
			return
		}
		for i := 0; i < st.Len(); i++ {
			s += float64(st.Load(i))
		}
	}
	w := m.Weights
	add(w.TokenEmbedding)
	add(w.FinalNorm)
	if w.Classifier != w.TokenEmbedding {
		add(w.Classifier)
	}
	for _, L := range w.Layers {
		for _, t := range []*tensor.Tensor{L.AttnNorm, L.WQKV, L.WO, L.FFNNorm, L.W1, L.W2, L.W3} {
			add(t)
		}
	}
	return s
}

// TestLoadMemoryHelper is the child process of TestLoadResidentMemory: it
// loads one file in one mode in a fresh process and prints its numbers.
func TestLoadMemoryHelper(t *testing.T) {
	spec := os.Getenv("STRIDE_LOADMEM")
	if spec == "" {
		t.Skip("skipping: helper process of TestLoadResidentMemory (runs only when it sets STRIDE_LOADMEM)")
	}
	mode, path, _ := strings.Cut(spec, ":")
	runtime.GC()
	debug.FreeOSMemory()
	var s memSample
	s.anon0, s.file0, _ = rssStatus()
	t0 := time.Now()
	m, err := load(path, model.LoadOptions{NoMmap: mode == "read"})
	s.loadNS = time.Since(t0).Nanoseconds()
	if err != nil {
		t.Fatal(err)
	}
	s.anonLoad, s.fileLoad, _ = rssStatus()
	sum := touchWeights(m)
	s.anonTouch, s.fileTouch, _ = rssStatus()
	fmt.Printf("LOADMEM %d %d %d %d %d %d %d %v\n", s.anon0, s.file0, s.anonLoad, s.fileLoad, s.anonTouch, s.fileTouch, s.loadNS, !math.IsNaN(sum))
	m.Close()
}

// TestLoadResidentMemory measures, each in a fresh process, the load time
// and the resident memory (anonymous = private to the process, file =
// page-cache pages mapped in) of a mapped and a read load: right after
// Load, and after every weight has been read once. Run with -v to see the
// table. It asserts only memory, never time: a read load makes the whole
// file anonymous memory, a mapped load only the fused WQKV, and a mapped
// model's weights are file pages once touched.
func TestLoadResidentMemory(t *testing.T) {
	if raceEnabled {
		// The race detector shadows every byte the process touches with
		// its own memory (several bytes per byte), so anonymous memory
		// grows with the mapped file's pages too and the bounds below no
		// longer measure the loader.
		t.Skip("skipping: the race detector's shadow memory makes resident memory meaningless (built with -race)")
	}
	if _, _, ok := rssStatus(); !ok || !mapfile.Supported || !hostLittleEndian {
		t.Skip("skipping: needs /proc/self/status (Linux) and mmap")
	}
	type file struct {
		name string
		path string
		m    model.Config
	}
	var files []file
	if dir, reason := findShared(); dir == "" {
		t.Logf("stories260K skipped: %s", reason)
	} else if p := filepath.Join(dir, "models", "stories260K.bin"); fileExists(p) {
		h, err := readHeaderOf(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file{"stories260K", p, h})
	}
	if testing.Short() {
		t.Log("stories15M-shape skipped under -short: writing its 61 MB checkpoint takes about a second")
	} else {
		c := stories15MShape()
		p := filepath.Join(t.TempDir(), "stories15M-shape.bin")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := WriteLegacy(bw, mustSynth(t, c, 15)); err != nil {
			t.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, file{"stories15M-shape", p, c})
	}
	if len(files) == 0 {
		t.Skip("skipping: no checkpoint to measure")
	}
	mb := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
	t.Logf("%-17s %-5s %9s %10s %12s %12s %12s %12s", "model", "mode", "file MB", "load ms",
		"anon +MB", "file +MB", "anon +MB", "file +MB")
	t.Logf("%-17s %-5s %9s %10s %25s %25s", "", "", "", "", "(after Load)", "(after touching weights)")
	for _, f := range files {
		st, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		size := st.Size()
		qkv := int64(f.m.NLayers) * int64(f.m.QKVRows()) * int64(f.m.Dim) * 4
		for _, mode := range []string{"mmap", "read"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLoadMemoryHelper$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "STRIDE_LOADMEM="+mode+":"+f.path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			var s memSample
			var ok bool
			found := false
			for _, line := range strings.Split(string(out), "\n") {
				if rest, has := strings.CutPrefix(line, "LOADMEM "); has {
					_, err := fmt.Sscan(rest, &s.anon0, &s.file0, &s.anonLoad, &s.fileLoad, &s.anonTouch, &s.fileTouch, &s.loadNS, &ok)
					found = err == nil
				}
			}
			if !found {
				t.Fatalf("helper printed no measurement:\n%s", out)
			}
			t.Logf("%-17s %-5s %9s %10.2f %12s %12s %12s %12s", f.name, mode, mb(size), float64(s.loadNS)/1e6,
				mb(s.anonLoad-s.anon0), mb(s.fileLoad-s.file0), mb(s.anonTouch-s.anon0), mb(s.fileTouch-s.file0))
			if size < 8<<20 {
				continue // a 1 MB model is within the runtime's noise: print only
			}
			switch mode {
			case "read":
				if grew := s.anonLoad - s.anon0; grew < size*9/10 {
					t.Errorf("%s read: anonymous memory grew by %d bytes, less than the %d-byte file", f.name, grew, size)
				}
			case "mmap":
				if grew := s.anonTouch - s.anon0; grew > qkv+size/10 {
					t.Errorf("%s mmap: anonymous memory grew by %d bytes; only the fused WQKV (%d) should be copied", f.name, grew, qkv)
				}
				if grew := s.fileTouch - s.file0; grew < size*8/10 {
					t.Errorf("%s mmap: only %d bytes of the %d-byte file are mapped in after reading every weight", f.name, grew, size)
				}
			}
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readHeaderOf(path string) (model.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return model.Config{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return model.Config{}, err
	}
	h, err := ReadHeader(f, st.Size(), path)
	return h.Config, err
}

// BenchmarkLoad loads a checkpoint from a file, mapped and read (the page
// cache is warm: the file was just written). A mapped load does not read
// the weights; its cost moves to the first token, which faults the pages
// in (see TestLoadResidentMemory).
func BenchmarkLoad(b *testing.B) {
	files := map[string]string{}
	if dir, _ := findShared(); dir != "" && fileExists(filepath.Join(dir, "models", "stories260K.bin")) {
		files["stories260K"] = filepath.Join(dir, "models", "stories260K.bin")
	}
	p := filepath.Join(b.TempDir(), "15m.bin")
	if err := os.WriteFile(p, legacyBytes(b, mustSynth(b, stories15MShape(), 15)), 0o644); err != nil {
		b.Fatal(err)
	}
	files["stories15M-shape"] = p
	for _, name := range []string{"stories260K", "stories15M-shape"} {
		path, ok := files[name]
		if !ok {
			continue
		}
		st, _ := os.Stat(path)
		for _, mode := range []string{"mmap", "read"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				b.SetBytes(st.Size())
				for i := 0; i < b.N; i++ {
					m, err := load(path, model.LoadOptions{NoMmap: mode == "read"})
					if err != nil {
						b.Fatal(err)
					}
					m.Close()
				}
			})
		}
	}
}
