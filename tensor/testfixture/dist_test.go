package testfixture

import (
	"math"
	"testing"
)

// TestTopPDist: logits ln(1), ln(2), ln(4) give p = 1/7, 2/7, 4/7 by hand;
// the nucleus keeps tokens up to the one where the sum first exceeds
// topp, renormalised; temperature divides the logits; ties keep ascending
// token order.
func TestTopPDist(t *testing.T) {
	l := []float32{0, float32(math.Ln2), float32(2 * math.Ln2)}
	for _, tc := range []struct {
		name       string
		logits     []float32
		temp, topp float64
		want       []float64
	}{
		{"full", l, 1, 0, []float64{1.0 / 7, 2.0 / 7, 4.0 / 7}},
		{"topp 1 is full", l, 1, 1, []float64{1.0 / 7, 2.0 / 7, 4.0 / 7}},
		{"top token alone exceeds 0.5", l, 1, 0.5, []float64{0, 0, 1}},
		{"two tokens to exceed 0.6", l, 1, 0.6, []float64{0, 1.0 / 3, 2.0 / 3}},
		{"temperature 2 halves the logits", []float32{0, float32(2 * math.Ln2)}, 2, 0, []float64{1.0 / 3, 2.0 / 3}},
		{"tie: the lower token first", []float32{0, 0}, 1, 0.4, []float64{1, 0}},
	} {
		got := TopPDist(tc.logits, tc.temp, tc.topp)
		for i := range tc.want {
			if math.Abs(got[i]-tc.want[i]) > 1e-6 {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
