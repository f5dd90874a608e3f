package kernels_test

import (
	"encoding/binary"
	"fmt"

	"github.com/stride-lm/stride/tensor/kernels"
)

// A ggml Q8_0 tensor of 2 rows × 32 columns is two 34-byte blocks: an fp16
// scale, then 32 int8. NewGGMLMatrix reads them in place; MatMul
// quantizes x to Q8_0 as ggml does and sums the int8 products.
func ExampleNewGGMLMatrix() {
	data := make([]byte, 2*34)
	for r := 0; r < 2; r++ {
		blk := data[r*34:]
		binary.LittleEndian.PutUint16(blk, kernels.F16FromFloat32(0.5)) // d
		for j := 0; j < 32; j++ {
			blk[2+j] = byte(int8(j - 16*r)) // row 0: 0..31, row 1: -16..15
		}
	}
	w, err := kernels.NewGGMLMatrix(kernels.TypeQ8_0, 2, 32, data)
	if err != nil {
		panic(err)
	}
	row := make([]float32, 32)
	_ = w.Row(1, row)
	fmt.Println(w.Format, w.Bytes(), row[0], row[31])

	x := make([]float32, 32)
	x[3], x[20] = 1, -1 // exact in Q8_0: amax 1, q = ±127, d = fp16(1/127)
	out := make([]float32, 2)
	if err := kernels.MatMul(nil, out, x, w, 1); err != nil {
		panic(err)
	}
	// Row 0: 0.5 · 127·(3 − 20) · fp16(1/127) = −8.4995 (not −8.5: the
	// activation scale is stored as fp16); row 1: 127·(−13 − 4), the same.
	fmt.Printf("%.4f %.4f\n", out[0], out[1])
	// Output:
	// ggml_q8_0 68 -8 7.5
	// -8.4995 -8.4995
}
