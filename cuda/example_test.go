package cuda_test

import (
	"fmt"

	"github.com/stride-lm/stride/cuda"
	"github.com/stride-lm/stride/tensor"
)

// One warp load of 32 fp32 threads, contiguous and with stride 1024: the
// seed's 4 sectors at 100% and 32 sectors at 12.5%.
func ExampleStrided() {
	for _, stride := range []int64{4, 4096} {
		w := cuda.Strided(1<<30, 32, stride, 4)
		c := cuda.NewCounter(false)
		c.Load(&w, 1)
		fmt.Printf("stride %4d B: %d sectors, %.1f%%\n", stride, c.Loads.Sectors, 100*c.Loads.Efficiency())
	}
	// Output:
	// stride    4 B: 4 sectors, 100.0%
	// stride 4096 B: 32 sectors, 12.5%
}

// What a[::4].contiguous() costs for a 64M-element fp32 tensor: every
// load touches 16 sectors for 128 useful bytes, and the distinct bytes
// read are all 256 MiB of a.
func ExampleSimulateStridedCopy() {
	as := cuda.NewAddressSpace()
	a := tensor.Must(tensor.Meta(tensor.F32, 64<<20))
	src := tensor.Must(a.Slice(0, 0, 64<<20, 4))
	dst := tensor.Must(tensor.Meta(tensor.F32, src.Numel()))
	l, err := cuda.SimulateStridedCopy(as.Operand(dst), as.Operand(src), cuda.Aggregate)
	if err != nil {
		panic(err)
	}
	fmt.Printf("loads: %d requests, %.0f sectors each, %.0f%% efficient, %s read from HBM\n",
		l.Loads.Requests, l.Loads.SectorsPerRequest(), 100*l.Loads.Efficiency(), cuda.HumanBytes(l.Loads.HBMBytes()))
	// Output:
	// loads: 524288 requests, 16 sectors each, 25% efficient, 256.00 MiB read from HBM
}

// The seed's layer through both paths: the fused path's HBM bytes, and
// the naive path's on top of them.
func ExampleWorkload_Simulate() {
	c, err := cuda.SeedWorkload().Simulate(cuda.Aggregate)
	if err != nil {
		panic(err)
	}
	n, f := c.Naive.Total(), c.Fused.Total()
	fmt.Printf("fused %s, naive %s, extra %s\n", cuda.HumanBytes(f.DataHBMBytes()), cuda.HumanBytes(n.DataHBMBytes()), cuda.HumanBytes(c.IntermediateBytes()))
	// Output:
	// fused 1.00 GiB, naive 17.25 GiB, extra 16.25 GiB
}
