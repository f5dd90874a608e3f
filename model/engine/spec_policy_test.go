package engine

import (
	"slices"
	"testing"
)

// A draft from a one-token match keeps only its first token; a match of
// strongMatch tokens or more keeps the whole draft; no draft stays none.
func TestCapWeakMatch(t *testing.T) {
	for _, tc := range []struct {
		drafts []int
		n      int
		want   []int
	}{
		{[]int{7, 8, 9}, 1, []int{7}},
		{[]int{7}, 1, []int{7}},
		{nil, 0, nil},
		{[]int{7, 8, 9}, strongMatch, []int{7, 8, 9}},
		{[]int{7, 8, 9, 10}, 3, []int{7, 8, 9, 10}},
	} {
		if got := capWeakMatch(slices.Clone(tc.drafts), tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("capWeakMatch(%v, n=%d) = %v, want %v", tc.drafts, tc.n, got, tc.want)
		}
	}
}
