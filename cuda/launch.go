package cuda

import "fmt"

// Mode chooses how the traffic simulation counts a launch.
type Mode int

const (
	// Aggregate counts exactly, but groups warp instructions whose
	// addresses agree modulo 128 bytes (see aggregate.go) and computes the
	// distinct sectors from byte ranges: fast at any size, the default.
	Aggregate Mode = iota
	// Replay executes the kernel's thread mapping literally, block by
	// block, warp by warp, and records every sector touched. It is the
	// reference the aggregate counting is tested against, and is only
	// practical for small launches.
	Replay
)

// String returns "aggregate" or "replay".
func (m Mode) String() string {
	if m == Replay {
		return "replay"
	}
	return "aggregate"
}

// maxReplayWarps bounds the warp instructions a Replay may execute.
const maxReplayWarps = 1 << 24

// Launch is the simulated global-memory traffic of one kernel launch.
type Launch struct {
	// Kernel is the __global__ function's name in cuda/kernels.
	Kernel string `json:"kernel"`
	// Note says what the launch works on ("k and v", "seq 1", …).
	Note string `json:"note,omitempty"`
	// Grid and Block are the launch geometry.
	Grid  [3]int64 `json:"grid"`
	Block [3]int   `json:"block"`
	// Vectorized reports whether the 16-byte path was taken.
	Vectorized bool `json:"vectorized"`
	// Loads and Stores are the traffic of the load and store instructions.
	Loads  Traffic `json:"loads"`
	Stores Traffic `json:"stores"`
	// MetaBytes is the part of Loads.HBMBytes() spent on int32 metadata
	// (slot mapping, block tables, sequence lengths) rather than tensor
	// data.
	MetaBytes int64 `json:"meta_bytes"`
	// Measured is the kernel's time on a GPU in milliseconds, when it was
	// run with Device.Measure on (0: not measured).
	Measured float64 `json:"measured_ms,omitempty"`
}

// DataHBMBytes is HBMBytes without the metadata: the tensor bytes.
func (l Launch) DataHBMBytes() int64 { return l.HBMBytes() - l.MetaBytes }

// Total returns loads + stores.
func (l Launch) Total() Traffic { return l.Loads.Add(l.Stores) }

// HBMBytes is the compulsory HBM traffic: distinct sectors read plus
// distinct sectors written, × 32.
func (l Launch) HBMBytes() int64 { return l.Loads.HBMBytes() + l.Stores.HBMBytes() }

// String formats the launch on one line.
func (l Launch) String() string {
	return fmt.Sprintf("%s grid=%v block=%v vec=%v\n  ld: %v\n  st: %v", l.Kernel, l.Grid, l.Block, l.Vectorized, l.Loads, l.Stores)
}

// finishReplay copies the counter into l after a literal replay; meta
// lists the byte ranges of the metadata arrays the kernel reads.
func (l *Launch) finishReplay(c *Counter, meta ...[2]uint64) {
	c.finish()
	l.Loads, l.Stores = c.Loads, c.Stores
	for s := range c.seenLd {
		for _, r := range meta {
			if s*SectorBytes+SectorBytes > r[0] && s*SectorBytes < r[1] {
				l.MetaBytes += SectorBytes
				break
			}
		}
	}
}

// finishAggregate copies the counter into l and sets the distinct sectors
// computed from the footprints of what the kernel reads (data ld, metadata
// meta; distinct buffers) and writes (st).
func (l *Launch) finishAggregate(c *Counter, ld, st, meta *footprint) error {
	l.Loads, l.Stores = c.Loads, c.Stores
	var err error
	if l.Loads.UniqueSectors, err = ld.sectors(); err != nil {
		return err
	}
	if l.Stores.UniqueSectors, err = st.sectors(); err != nil {
		return err
	}
	if meta != nil {
		m, err := meta.sectors()
		if err != nil {
			return err
		}
		l.Loads.UniqueSectors += m
		l.MetaBytes = m * SectorBytes
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// launchDims is StrideLaunch: grid, block, dynamic shared memory.
type launchDims struct {
	grid  [3]int64
	block [3]int32
	smem  int64
}

// maxGrid are CUDA's grid limits: 2^31−1 blocks along x, 65535 along y, z.
var maxGrid = [3]int64{1<<31 - 1, 65535, 65535}

// dimsOf returns the launch geometry of l, or an error if it exceeds the
// grid limits (a batch of more than 65535 sequences, say).
func dimsOf(l Launch, smem int64) (*launchDims, error) {
	for i, g := range l.Grid {
		if g > maxGrid[i] {
			return nil, fmt.Errorf("cuda: %s: grid %v exceeds the limit %v", l.Kernel, l.Grid, maxGrid)
		}
	}
	return &launchDims{grid: l.Grid, block: [3]int32{int32(l.Block[0]), int32(l.Block[1]), int32(l.Block[2])}, smem: smem}, nil
}
