package hf

import (
	"testing"

	"github.com/stride-lm/stride/model"
)

// BenchmarkLoad opens stories260K's directory and builds its model, per
// rotary route: the difference is the un-permuting copy of q_proj and
// k_proj (reported as permuted-B/op).
func BenchmarkLoad(b *testing.B) {
	dir := sharedFile(b, "models/hf/stories260K")
	for _, c := range []struct {
		name string
		rot  Rotary
	}{{"neox", RotaryNeox}, {"unpermute", RotaryUnpermute}} {
		b.Run(c.name, func(b *testing.B) {
			var permuted int64
			for range b.N {
				src, err := Open(dir, model.LoadOptions{}, Options{Rotary: c.rot})
				if err != nil {
					b.Fatal(err)
				}
				m, err := model.FromSource(src, model.LoadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				permuted = src.PermutedBytes()
				m.Close()
			}
			b.ReportMetric(float64(permuted), "permuted-B/op")
		})
	}
}
