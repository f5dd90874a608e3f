package model

import (
	"fmt"
	"testing"
)

func TestQ8GroupSize(t *testing.T) {
	for _, tc := range []struct {
		dim, hidden, want, got int
	}{{288, 768, 64, 32}, {64, 172, 64, 4}, {768, 2048, 64, 64}, {768, 2048, 0, 64}, {16, 24, 64, 8}, {6, 9, 64, 1}, {512, 1376, 128, 32}} {
		c := Config{Dim: tc.dim, HiddenDim: tc.hidden}
		if g := Q8GroupSize(c, tc.want); g != tc.got {
			t.Errorf("dim %d hidden %d want %d: got %d, expected %d", tc.dim, tc.hidden, tc.want, g, tc.got)
		}
	}
}

// Q8GroupSize halves 64 until it divides dim and hidden_dim.
func ExampleQ8GroupSize() {
	stories15M := Config{Dim: 288, HiddenDim: 768}
	stories260K := Config{Dim: 64, HiddenDim: 172}
	stories110M := Config{Dim: 768, HiddenDim: 2048}
	fmt.Println(Q8GroupSize(stories15M, 64), Q8GroupSize(stories260K, 64), Q8GroupSize(stories110M, 0))
	// Output: 32 4 64
}
