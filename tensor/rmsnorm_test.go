package tensor

import (
	"math"
	"strings"
	"testing"
)

func TestRMSNorm(t *testing.T) {
	led := NewLedger()
	x := Must(randn(led, 1, 6, 4).T())              // [4,6], rows strided
	w := Must(randn(led, 2, 12).Slice(0, 0, 12, 2)) // [6], stride 2
	const eps = 1e-5
	got, err := RMSNorm(x, w, eps)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for i := 0; i < 4; i++ {
		var ss float64
		for j := 0; j < 6; j++ {
			v := at(t, x, i, j)
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/6+eps)
		for j := 0; j < 6; j++ {
			want = append(want, at(t, w, j)*at(t, x, i, j)*r)
		}
	}
	closeTo(t, "rmsnorm", got.mustF32(t), want, 1e-5)

	if _, err := RMSNorm(x, Must(Empty(led, F32, 5)), eps); err == nil || !strings.Contains(err.Error(), "[5]") {
		t.Fatalf("rmsnorm with a [5] weight on [4, 6]: %v", err)
	}
	m, err := RMSNorm(Must(Meta(F32, 2, 4096, 4096)), Must(Meta(F32, 4096)), eps)
	if err != nil || !m.IsMeta() {
		t.Fatalf("meta rmsnorm %v %v", m, err)
	}
}
