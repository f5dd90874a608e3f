package tensor

import (
	"fmt"
	"strings"
	"testing"
)

// Seed: "e.mul_(2) on bias.expand(4, 3) fails: unsupported operation", and
// the refused write leaves bias as it was.
func TestScaleInPlaceOnOverlapFails(t *testing.T) {
	led := NewLedger()
	bias := Must(FromFloat32(led, F32, []float32{1, 2, 3}, 3))
	e := Must(bias.Expand(4, 3))
	err := ScaleInPlace(e, 2)
	if err == nil || !strings.HasPrefix(err.Error(), "mul_: unsupported operation: more than one element of the written-to tensor refers to a single memory location") {
		t.Fatalf("mul_ on expand(4, 3): %v", err)
	}
	if v := bias.mustF32(t); fmt.Sprint(v) != "[1 2 3]" {
		t.Fatalf("failed mul_ modified bias: %v", v)
	}
	if err := ScaleInPlace(Must(Must(arange(led, F32, 6)).Unfold(0, 3, 1)), 2); err == nil {
		t.Fatal("mul_ on overlapping unfold windows succeeded")
	}
	if err := ScaleInPlace(Must(Meta(F32, 2, 3)), 2); err != nil {
		t.Fatalf("meta mul_: %v", err)
	}
}

func TestScaleInPlace(t *testing.T) {
	led := NewLedger()
	base := randn(led, 1, 4, 4)
	orig := base.mustF32(t)
	s := Must(base.Slice(1, 1, 4, 2)) // columns 1 and 3
	if err := ScaleInPlace(s, -0.5); err != nil {
		t.Fatal(err)
	}
	v := base.mustF32(t)
	for i := range v {
		want := orig[i]
		if c := i % 4; c == 1 || c == 3 {
			want *= -0.5
		}
		if v[i] != want {
			t.Fatalf("element %d = %v, want %v", i, v[i], want)
		}
	}
}
