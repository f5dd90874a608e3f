package model

import (
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// TestStorageBytes: the sizes of ggml's blocks (ggml-common.h: block_q8_0
// is fp16 d + 32 int8 = 34 bytes; block_q4_0 fp16 d + 16 bytes = 18;
// block_q4_K fp16 d, dmin + 12 + 128 = 144; block_q6_K 128 + 64 + 16 +
// fp16 d = 210).
func TestStorageBytes(t *testing.T) {
	for _, tc := range []struct {
		typ  StorageType
		n    int64
		gs   int
		want int64
		ok   bool
	}{
		{StorageF32, 10, 0, 40, true}, {StorageBF16, 10, 0, 20, true}, {StorageQ8_0, 64, 0, 68, true},
		{StorageQ8_0, 33, 0, 0, false}, {StorageQ4_0, 32, 0, 18, true}, {StorageQ4_K, 512, 0, 288, true},
		{StorageQ6_K, 256, 0, 210, true}, {StorageQ6_K, 128, 0, 0, false}, {StorageLlama2cQ8, 64, 4, 64 + 64, true},
		{StorageLlama2cQ8, 64, 0, 0, false}, {StorageType(kernels.TypeQ2_K), 256, 0, 0, false},
	} {
		got, ok := tc.typ.Bytes(tc.n, tc.gs)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s.Bytes(%d, %d) = %d, %v; want %d, %v", tc.typ, tc.n, tc.gs, got, ok, tc.want, tc.ok)
		}
	}
}
