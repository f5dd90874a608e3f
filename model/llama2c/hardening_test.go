package llama2c

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/mapfile"
)

// withTimeout runs f and fails the test if it has not returned after d:
// the bug these tests guard against is a call that never returns.
func withTimeout(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

// TestOpenFIFO: a FIFO given as a checkpoint is refused at once (open is
// non-blocking, then fstat) instead of blocking forever in open(2) waiting
// for a writer.
func TestOpenFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo.bin")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("skipping: cannot make a FIFO here: %v", err)
	}
	var err error
	withTimeout(t, 10*time.Second, func() { _, err = Open(path, model.LoadOptions{}) })
	if err == nil || !errors.Is(err, mapfile.ErrNotRegular) || !strings.Contains(err.Error(), "a named pipe") ||
		!strings.HasPrefix(err.Error(), "checkpoint "+path+": ") {
		t.Fatalf("got %v, want a one-line 'not a regular file (a named pipe)' error naming the path", err)
	}
	t.Log(err)
	withTimeout(t, 10*time.Second, func() { _, _, err = mapfile.Open(path, true) })
	if !errors.Is(err, mapfile.ErrNotRegular) {
		t.Fatalf("mapfile.Open accepted a FIFO as a directory format: %v", err)
	}
}

// TestOpenDevice: a character device (here /dev/null, only opened for
// reading) is not a checkpoint either.
func TestOpenDevice(t *testing.T) {
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("skipping: no /dev/null")
	}
	_, err := Open("/dev/null", model.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a regular file (a character device)") {
		t.Fatalf("got %v", err)
	}
}

// truncatedWhileMapped opens a checkpoint mapped, then truncates the file
// to nothing, as another process rewriting it in place would: every page
// of the mapping now faults (SIGBUS) when touched.
func truncatedWhileMapped(t *testing.T, data []byte) *File {
	t.Helper()
	if !mapfile.Supported || !hostLittleEndian {
		t.Skip("skipping: no mmap on this platform")
	}
	path := writeFile(t, "victim.bin", data)
	f, err := Open(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.MappedBytes() == 0 {
		t.Skip("skipping: the file was read, not mapped")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTruncatedWhileMappedLoad: building the model touches the mapping
// (the fused WQKV is copied out of it): the fault is a one-line error,
// not a crash.
func TestTruncatedWhileMappedLoad(t *testing.T) {
	f := truncatedWhileMapped(t, legacyBytes(t, mustSynth(t, stories15MShapeSmall(), 3)))
	m, err := model.FromSource(f, model.LoadOptions{})
	if err == nil {
		m.Close()
		t.Fatal("built a model from a file truncated under its mapping")
	}
	var fault *mapfile.FaultError
	if !errors.As(err, &fault) || !strings.HasPrefix(err.Error(), "checkpoint ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want a one-line memory fault error", err)
	}
	t.Log(err)
}

// TestTruncatedWhileMappedGenerate: a model loaded from a mapping that
// is then truncated faults in the matmuls. Run under CatchFault, the
// fault is an error, on one thread and on several (the worker pool's
// goroutines set SetPanicOnFault themselves and re-raise in the caller).
func TestTruncatedWhileMappedGenerate(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) { truncatedGenerate(t, threads) })
	}
}

func truncatedGenerate(t *testing.T, threads int) {
	if !mapfile.Supported || !hostLittleEndian {
		t.Skip("skipping: no mmap on this platform")
	}
	path := writeFile(t, "victim.bin", legacyBytes(t, mustSynth(t, stories15MShapeSmall(), 4)))
	m, err := load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.Options{Threads: threads, NumBlocks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = mapfile.CatchFault(func() error {
		_, _, err := e.Generate([]engine.Request{{Prompt: []int{model.BOSID}, Steps: 2,
			Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)}}, nil)
		return err
	})
	var fault *mapfile.FaultError
	if !errors.As(err, &fault) {
		t.Fatalf("got %v, want a memory fault error", err)
	}
	t.Log(err)
}

// stories15MShapeSmall is big enough (several pages per matrix) that the
// truncated mapping has pages to fault on, and small enough to write fast.
func stories15MShapeSmall() model.Config {
	return model.Config{Dim: 64, HiddenDim: 128, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 512, SeqLen: 32,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
}

// deepConfig has many layers and few weights per layer, so that its
// KV cache per position is large next to its file.
func deepConfig(seqLen int) model.Config {
	return model.Config{Dim: 64, HiddenDim: 8, NLayers: 64, NHeads: 1, NKVHeads: 1, VocabSize: 4, SeqLen: seqLen,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
}

// setSeqLen returns a version-1/2 file with its header's seq_len replaced.
func setSeqLen(data []byte, seqLen int) []byte {
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint32(out[8+6*4:], uint32(seqLen))
	return out
}

// TestSeqLenSanity: a version-1 or version-2 header stores nothing per
// position, so a huge seq_len costs nothing in the file and is bounded by
// the KV cache it would make one sequence need (16× the file, at least
// 1 GiB). The largest seq_len inside the bound loads; one more does not.
func TestSeqLenSanity(t *testing.T) {
	m := mustSynth(t, deepConfig(8), 1)
	for _, f := range []struct {
		name string
		data []byte
	}{{"v1", writeV1(t, m)}, {"v2", v2Bytes(t, m, 8)}} {
		// By hand: K and V of 64 layers × kv_dim 64 float32s are 32 KiB per
		// position; the files are a few MiB, so the bound is the 1 GiB
		// floor, and 1 GiB / 32 KiB = 32768 positions fit.
		if 16*len(f.data) >= 1<<30 {
			t.Fatalf("%s: test file unexpectedly large (%d bytes)", f.name, len(f.data))
		}
		const fits = 32768
		if _, err := read(bytes.NewReader(setSeqLen(f.data, fits)), int64(len(f.data)), "ok.bin", model.LoadOptions{}); err != nil {
			t.Fatalf("%s: seq_len %d (the largest inside the bound) rejected: %v", f.name, fits, err)
		}
		bad := setSeqLen(f.data, 1<<20)
		assertRejected(t, bad, int64(len(bad)), "seq_len 1048576 is implausible")
		bad = setSeqLen(f.data, fits+1)
		assertRejected(t, bad, int64(len(bad)), "seq_len "+strconv.Itoa(fits)+" fits")
	}
	// The legacy format stores RoPE tables of seq_len·head_dim floats, but
	// 256 bytes of them per position do not pay for 32 KiB of KV cache:
	// the same bound applies (a 13 MiB file claiming 40000 positions).
	leg := legacyBytes(t, mustSynth(t, deepConfig(40000), 1))
	assertRejected(t, leg, int64(len(leg)), "seq_len 40000 is implausible")
}

// TestGroupSizeHint: a group size that does not divide the widths gets a
// hint naming the largest that does (4 for stories260K's dim 64 and
// hidden_dim 172, not the 2 that halving 5 gives).
func TestGroupSizeHint(t *testing.T) {
	m := mustSynth(t, model.Config{Dim: 64, HiddenDim: 172, NLayers: 1, NHeads: 8, NKVHeads: 4, VocabSize: 32, SeqLen: 8,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}, 1)
	var buf bytes.Buffer
	for _, tc := range []struct {
		gs   int
		want string
	}{
		{5, "does not divide dim 64: groups would straddle matrix rows (valid sizes divide both dim 64 and hidden_dim 172; the largest is 4)"},
		{8, "does not divide hidden_dim 172: groups would straddle matrix rows (valid sizes divide both dim 64 and hidden_dim 172; the largest is 4)"},
	} {
		err := WriteV2(&buf, m, tc.gs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("group size %d: got %v, want %q", tc.gs, err, tc.want)
		}
	}
	// Below the largest, the hint also names the largest size not above
	// the one asked for.
	m = mustSynth(t, model.Config{Dim: 288, HiddenDim: 768, NLayers: 1, NHeads: 6, NKVHeads: 6, VocabSize: 32, SeqLen: 8,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}, 1)
	err := WriteV2(&buf, m, 50)
	if err == nil || !strings.Contains(err.Error(), "the largest is 96, the largest below 50 is 48") {
		t.Fatalf("got %v", err)
	}
}
