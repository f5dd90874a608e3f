//go:build !cuda

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// A build without the cuda tag offers the whole device API and answers
// every call with ErrNoCUDA, whose message says how to get a GPU build.
func TestNoCUDABuild(t *testing.T) {
	if Built {
		t.Fatal("Built is true in a !cuda build")
	}
	if err := Available(); !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("Available() = %v", err)
	}
	if !strings.Contains(ErrNoCUDA.Error(), "scripts/cuda-build.sh && go build -tags cuda ./cmd/infer") {
		t.Fatalf("ErrNoCUDA does not say how to rebuild: %q", ErrNoCUDA)
	}
	if _, err := Open(0); !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("Open = %v", err)
	}
	var d *Device // what a caller holds after a failed Open
	x := &DeviceTensor{buf: &Buffer{}, layout: tensor.Must(tensor.Meta(tensor.F32, 2))}
	calls := map[string]error{
		"Synchronize":  d.Synchronize(),
		"StridedCopy":  d.StridedCopy(x, x),
		"Repeat":       d.RepeatInterleave(x, x, 2),
		"Transpose":    d.TransposeContiguous(x, x),
		"Reshape":      d.ReshapeAndCache(x, x, x, x, nil),
		"Decode":       d.PagedDecode(x, x, x, x, nil, 0),
		"Prefill":      d.FusedPrefill(x, x, x, x, nil),
		"NaiveScores":  d.NaiveScores(x, x, x),
		"NaiveSoftmax": d.NaiveSoftmax(x),
		"NaiveAV":      d.NaiveAV(x, x, x),
	}
	_, calls["Alloc"] = d.Alloc(4)
	_, calls["Empty"] = d.Empty(tensor.F32, 4)
	_, calls["Upload"] = d.Upload(tensor.Must(tensor.Zeros(nil, tensor.F32, 4)))
	_, calls["UploadSeqs"] = d.UploadSeqs(&Seqs{})
	_, calls["Contiguous"] = d.Contiguous(x)
	_, calls["Time"] = d.Time(func() error { return nil })
	_, calls["Naive"] = d.NaiveAttention(x, x, x, x, x, nil)
	_, calls["Fused"] = d.FusedAttention(x, x, x, x, x, nil, 0)
	_, calls["Download"] = x.Download(nil)
	for name, err := range calls {
		if !errors.Is(err, ErrNoCUDA) {
			t.Errorf("%s: %v, want ErrNoCUDA", name, err)
		}
	}
}
