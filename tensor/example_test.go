package tensor_test

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// View only rewrites metadata and fails when the new shape cannot be
// expressed with strides over the existing memory; Reshape then copies.
// SharesStorage tells which one happened.
func ExampleTensor_View() {
	led := tensor.NewLedger()
	data := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	x := tensor.Must(tensor.FromFloat32(led, tensor.F32, data, 3, 4))
	xt := tensor.Must(x.T())
	fmt.Println("x:  ", x)
	fmt.Println("x.t:", xt)

	if _, err := xt.View(12); err != nil {
		fmt.Println("view(12) of x.t fails:", err != nil)
	}
	before := led.Stats()
	r := tensor.Must(xt.Reshape(12))
	v, _ := r.Float32s()
	fmt.Println("reshape(12) shares storage:", tensor.SharesStorage(r, x), v)
	fmt.Println("reshape(12) cost:", led.Stats().Sub(before).BytesCopied, "bytes copied")

	// A permuted tensor can still be viewed when the merged dims are
	// contiguous with each other: stride[1] == shape[2]·stride[2] (12 == 3·4).
	p := tensor.Must(tensor.Must(tensor.Meta(tensor.F32, 2, 3, 4)).Permute(2, 0, 1))
	fmt.Println("permute(2,0,1).view(4,6):", tensor.Must(p.View(4, 6)))
	// Output:
	// x:   Tensor(shape=[3, 4], strides=[4, 1], offset=0, dtype=float32, contiguous=true)
	// x.t: Tensor(shape=[4, 3], strides=[1, 4], offset=0, dtype=float32, contiguous=false)
	// view(12) of x.t fails: true
	// reshape(12) shares storage: false [0 4 8 1 5 9 2 6 10 3 7 11]
	// reshape(12) cost: 48 bytes copied
	// permute(2,0,1).view(4,6): Tensor(shape=[4, 6], strides=[1, 4], offset=0, dtype=float32, contiguous=false, meta)
}

// Expand broadcasts with stride 0 and allocates nothing; Repeat tiles into
// new memory. A write through the expanded view lands on the one shared
// element, so every row sees it.
func ExampleTensor_Expand() {
	led := tensor.NewLedger()
	bias := tensor.Must(tensor.FromFloat32(led, tensor.F32, []float32{1, 2, 3}, 3))
	e := tensor.Must(bias.Expand(4, 3))
	r := tensor.Must(bias.Repeat(4, 1))
	fmt.Println("expand:", e.Strides(), e.Storage().Bytes(), "bytes")
	fmt.Println("repeat:", r.Strides(), r.Storage().Bytes(), "bytes")

	_ = e.Set(5, 0, 0)
	b, _ := bias.Float32s()
	e30, _ := e.At(3, 0)
	fmt.Println("after e[0,0]=5: bias =", b, "e[3,0] =", e30)
	fmt.Println("in-place add on e:", e.CheckNoOverlap("add_") != nil)
	// Output:
	// expand: [0 1] 12 bytes
	// repeat: [3 1] 48 bytes
	// after e[0,0]=5: bias = [5 2 3] e[3,0] = 5
	// in-place add on e: true
}

// Contiguous is free on a contiguous tensor (it returns the same tensor)
// and a full copy otherwise; the Ledger counts it.
func ExampleTensor_Contiguous() {
	led := tensor.NewLedger()
	x := tensor.Must(tensor.Zeros(led, tensor.F32, 64, 128))
	before := led.Stats()
	same := tensor.Must(x.Contiguous())
	fmt.Println("already contiguous:", same == x, led.Stats().Sub(before).BytesCopied, "bytes copied")

	before = led.Stats()
	c := tensor.Must(tensor.Must(x.T()).Contiguous())
	d := led.Stats().Sub(before)
	fmt.Println("transposed:", c.Shape(), c.Strides(), d.BytesCopied, "bytes in", d.CopyOps, "copy")
	// Output:
	// already contiguous: true 0 bytes copied
	// transposed: [128 64] [64 1] 32768 bytes in 1 copy
}

// A meta tensor has a layout and no data, so the attention scores of
// B=2, H=32, S=4096 can be planned and traced without allocating 4 GiB.
func ExampleMeta() {
	led := tensor.NewLedger()
	scores := tensor.Must(tensor.Meta(tensor.F32, 2, 32, 4096, 4096))
	fmt.Println(scores)
	fmt.Println("would occupy", scores.Nbytes()>>30, "GiB; allocated", led.Stats().BytesAllocated, "bytes")

	out := tensor.Must(tensor.Meta(tensor.F32, 2, 32, 4096, 128))
	merged := tensor.Must(tensor.Must(out.Transpose(1, 2)).Contiguous())
	fmt.Println(tensor.Must(merged.View(2, 4096, 4096)))
	_, err := out.At(0, 0, 0, 0)
	fmt.Println(err)
	// Output:
	// Tensor(shape=[2, 32, 4096, 4096], strides=[536870912, 16777216, 4096, 1], offset=0, dtype=float32, contiguous=true, meta)
	// would occupy 4 GiB; allocated 0 bytes
	// Tensor(shape=[2, 4096, 4096], strides=[16777216, 4096, 1], offset=0, dtype=float32, contiguous=true, meta)
	// at: tensor is a meta tensor: it has no data
}
