package engine_test

import (
	"os"

	"github.com/stride-lm/stride/model/engine"
)

// The report of `infer bench`, from rows a front end measured with
// RunBench and BenchRows (here written by hand): llama-bench's table.
// "markdown" and "json" print the same rows for a page or a program.
func ExampleWriteBench() {
	label := engine.BenchLabel{Model: "stories260K.bin", SizeBytes: 1040128, Params: 260032,
		Weights: "f32", Path: "fused", Spec: "off", Threads: 1}
	rows := []engine.BenchRow{
		{BenchLabel: label, Test: "pp512", Batch: 1, Mean: 41250.5, SD: 310.25, Reps: 3},
		{BenchLabel: label, Test: "tg128", Batch: 1, Mean: 3120.75, SD: 12.5, Reps: 3},
	}
	if err := engine.WriteBench(os.Stdout, "table", rows, false); err != nil {
		panic(err)
	}
	// Output:
	// model            size        params    weights  path   spec  threads  test   batch  t/s
	// stories260K.bin  1015.8 KiB  260.03 K  f32      fused  off   1        pp512  1      41250.50 ± 310.25
	// stories260K.bin  1015.8 KiB  260.03 K  f32      fused  off   1        tg128  1      3120.75 ± 12.50
}
