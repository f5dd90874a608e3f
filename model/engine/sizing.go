package engine

import (
	"fmt"
	"math"
	"math/bits"

	"golang.org/x/sys/unix"

	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
)

// This file is the engine's sizing: the one place that turns Options into
// the KV pool's blocks and bytes, and checks them against the machine,
// for New and for a front end's pre-flight check (CheckMemory), so that
// --kv-memory 400GiB is an error naming both sizes instead of an
// out-of-memory crash.

// MaxDefaultContext caps ContextSize's default: a 128k-context model must
// not reserve DefaultKVSequences × 128k positions of KV cache unless
// asked to.
const MaxDefaultContext = 4096

// ContextSize is the context (Options.Context) a front end runs model
// config c with when asked for asked positions: min(seq_len,
// MaxDefaultContext) for 0, and never more than seq_len; clamped reports
// that more than seq_len was asked for.
func ContextSize(c model.Config, asked int) (n int, clamped bool) {
	switch {
	case asked <= 0:
		return min(c.SeqLen, MaxDefaultContext), false
	case asked > c.SeqLen:
		return c.SeqLen, true
	}
	return asked, false
}

// KVPool is the KV cache New allocates for model config c under opts:
// NumBlocks blocks, else as many as KVMemory holds, else
// DefaultKVSequences sequences of Context positions (seq_len when 0).
// Prefix alignment is New's to set. An invalid config gives a config
// kvcache rejects, never a panic.
func KVPool(c model.Config, opts Options) kvcache.Config {
	if opts.BlockSize == 0 {
		opts.BlockSize = defaultBlockSize
	}
	headDim := 0
	if c.NHeads > 0 { // an invalid config sizes to 0 instead of panicking
		headDim = c.HeadDim()
	}
	kc := kvcache.Config{
		NumLayers: c.NLayers, NumKVHeads: c.NKVHeads, HeadDim: headDim,
		BlockSize: opts.BlockSize, NumBlocks: opts.NumBlocks, MemoryBudget: opts.KVMemory,
		DType: opts.KVDType, DisablePrefixSharing: opts.DisablePrefixSharing,
	}
	if kc.NumBlocks == 0 && kc.MemoryBudget == 0 && opts.BlockSize > 0 {
		ctx := c.SeqLen
		if opts.Context > 0 {
			ctx = min(opts.Context, c.SeqLen)
		}
		kc.NumBlocks = DefaultKVSequences * ((ctx + opts.BlockSize - 1) / opts.BlockSize)
	}
	return kc
}

// CheckMemory sizes the KV pool New would allocate for c under opts and
// refuses it, with one line naming both sizes, when it exceeds the
// machine's physical memory. A config or option New would reject passes:
// New reports those itself.
func CheckMemory(c model.Config, opts Options) error {
	if c.Validate() != nil || opts.BlockSize < 0 {
		return nil
	}
	kc := KVPool(c, opts)
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
	return FitsMemory(fmt.Sprintf("the KV cache pool (%d blocks × %s)", n, tensor.FormatBytes(bpb)), pool)
}

// CheckWeights refuses, with one line naming what and both sizes, a model
// of config c whose weights at c.WeightDType (float32 when unset) exceed
// the machine's physical memory, before a caller draws them
// (model.Synthesize). A config Validate rejects passes: the caller
// reports that itself.
func CheckWeights(what string, c model.Config) error {
	if c.Validate() != nil {
		return nil
	}
	size := c.WeightDType.Size()
	if size == 0 {
		size = 4
	}
	// In float64: params × size can overflow int64 at the sizes Validate
	// still accepts.
	f := min(float64(c.Params())*float64(size), math.MaxInt64/2)
	return FitsMemory(what, int64(f))
}

// FitsMemory returns an error naming what and both sizes when bytes
// exceed the machine's physical memory (nil when it cannot tell: the
// allocation then decides).
func FitsMemory(what string, bytes int64) error {
	phys, err := PhysicalMemory()
	if err != nil {
		return nil
	}
	if bytes > phys {
		return fmt.Errorf("%s would take %s, more than this machine's physical memory %s",
			what, tensor.FormatBytes(bytes), tensor.FormatBytes(phys))
	}
	return nil
}

// PhysicalMemory is the machine's RAM in bytes.
func PhysicalMemory() (int64, error) {
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
