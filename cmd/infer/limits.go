package main

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"

	"golang.org/x/sys/unix"

	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/tensor"
)

// Every size a user or a file can choose is checked here before it is
// allocated, so a typo gets a one-line error instead of the Go runtime's
// "out of memory" and a stack trace.

// maxInputBytes caps what --config and --prompts read (/dev/zero, or a
// log file given by mistake, must not exhaust memory). A prompts file
// this large is already far beyond any model's context.
const maxInputBytes = 16 << 20

// maxThreads caps --threads: far above any machine's core count, far
// below the point where worker stacks alone exhaust memory.
const maxThreads = 1024

// readCapped reads a whole file of at most maxInputBytes; what names the
// file in errors ("config", "prompts file").
func readCapped(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if len(data) > maxInputBytes {
		return nil, fmt.Errorf("%s %s is larger than %s, the most it may be", what, path, tensor.FormatBytes(maxInputBytes))
	}
	return data, nil
}

// physicalMemory is the machine's RAM in bytes.
func physicalMemory() (int64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("cannot read the machine's memory size: %w", err)
	}
	hi, lo := bits.Mul64(uint64(si.Totalram), uint64(si.Unit))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return int64(lo), nil
}

// fitsMemory returns an error naming what and both sizes when bytes
// exceed the machine's physical memory.
func fitsMemory(what string, bytes int64) error {
	phys, err := physicalMemory()
	if err != nil {
		return nil // cannot tell: let the allocation decide
	}
	if bytes > phys {
		return fmt.Errorf("%s would take %s, more than this machine's physical memory %s",
			what, tensor.FormatBytes(bytes), tensor.FormatBytes(phys))
	}
	return nil
}

// checkKVPool sizes the KV pool the engine would allocate for c and o
// (the same rule as engine.New: NumBlocks, else KVMemory, else
// DefaultKVSequences full sequences) and refuses it when it exceeds
// physical memory, before anything is allocated.
func checkKVPool(c model.Config, o engine.Options) error {
	if c.Validate() != nil {
		return nil // the engine reports the config itself
	}
	kc := kvcache.Config{NumLayers: c.NLayers, NumKVHeads: c.NKVHeads, HeadDim: c.HeadDim(),
		BlockSize: o.BlockSize, NumBlocks: o.NumBlocks, MemoryBudget: o.KVMemory, DType: o.KVDType}
	if kc.NumBlocks == 0 && kc.MemoryBudget == 0 {
		kc.NumBlocks = engine.DefaultKVSequences * ((c.SeqLen + o.BlockSize - 1) / o.BlockSize)
	}
	n, err := kc.Blocks()
	if err != nil {
		return err
	}
	bpb := kc.BytesPerBlock()
	hi, lo := bits.Mul64(uint64(n), uint64(bpb))
	pool := int64(math.MaxInt64)
	if hi == 0 && lo <= math.MaxInt64 {
		pool = int64(lo)
	}
	return fitsMemory(fmt.Sprintf("the KV cache pool (%d blocks × %s)", n, tensor.FormatBytes(bpb)), pool)
}

// checkWeights refuses a synthetic model whose weights exceed physical
// memory before they are drawn.
func checkWeights(c model.Config) error {
	if c.Validate() != nil {
		return nil // Synthesize reports the config itself
	}
	size := c.WeightDType.Size()
	if size == 0 {
		size = 4
	}
	// Config.Params in float64: the int64 product can overflow at the
	// sizes Validate still accepts.
	d, h, l, v := float64(c.Dim), float64(c.HiddenDim), float64(c.NLayers), float64(c.VocabSize)
	params := v*d + l*(2*d+float64(c.QKVRows())*d+d*d+3*d*h) + d
	if !c.SharedClassifier {
		params += v * d
	}
	f := min(params*float64(size), math.MaxInt64/2)
	return fitsMemory("the synthetic model's weights", int64(f))
}
