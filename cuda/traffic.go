package cuda

import (
	"fmt"
	"slices"
)

// The memory system of an NVIDIA GPU (sm_80 A100, sm_90 H100/H200), as far
// as the traffic simulation needs it:
//
//   - a warp is 32 threads that issue one memory instruction together; the
//     load/store unit turns it into ONE request to L1TEX, whatever the
//     addresses (Nsight Compute: l1tex__t_requests_pipe_lsu_mem_global_op_ld);
//   - L1TEX serves the request in 32-byte sectors: the request costs as many
//     sectors as there are distinct 32-byte-aligned sectors among the bytes
//     its active threads touch (l1tex__t_sectors_pipe_lsu_mem_global_op_ld);
//   - four sectors make a 128-byte cache line; a fully coalesced fp32 warp
//     load (32 × 4 B, 128-B aligned) is 1 request = 1 line = 4 sectors.
const (
	// WarpSize is the number of threads that issue one memory instruction.
	WarpSize = 32
	// SectorBytes is the granularity of L1TEX/L2/DRAM transfers.
	SectorBytes = 32
	// LineBytes is the size of an L1/L2 cache line (4 sectors).
	LineBytes = 128
)

// Traffic counts one direction (loads or stores) of the global memory
// instructions of a kernel launch.
type Traffic struct {
	// Requests is the number of warp-level instructions issued: one per
	// instruction with at least one active thread.
	Requests int64 `json:"requests"`
	// Sectors sums, over the requests, the distinct 32-byte sectors each
	// one touches: what the memory system moves for it.
	Sectors int64 `json:"sectors"`
	// Lines sums the distinct 128-byte lines per request (the "transactions"
	// of pre-Volta GPUs).
	Lines int64 `json:"lines"`
	// BytesRequested sums the distinct bytes the active threads of each
	// request ask for (a broadcast of one 4-byte word to 32 threads is 4
	// bytes).
	BytesRequested int64 `json:"bytes_requested"`
	// UniqueSectors is the number of distinct sectors touched over the
	// whole launch: the compulsory DRAM (HBM) traffic, reached when every
	// sector a kernel uses more than once is served from L1/L2 after its
	// first use.
	UniqueSectors int64 `json:"unique_sectors"`
}

// BytesMoved is Sectors × 32: the bytes L1TEX moves for the requests when
// no sector is reused between requests.
func (t Traffic) BytesMoved() int64 { return t.Sectors * SectorBytes }

// HBMBytes is UniqueSectors × 32: the compulsory HBM traffic.
func (t Traffic) HBMBytes() int64 { return t.UniqueSectors * SectorBytes }

// Efficiency is the coalescing efficiency BytesRequested / BytesMoved: 1
// when every byte of every sector moved was asked for (0 for no traffic).
func (t Traffic) Efficiency() float64 {
	if t.Sectors == 0 {
		return 0
	}
	return float64(t.BytesRequested) / float64(t.BytesMoved())
}

// SectorsPerRequest is Sectors / Requests (0 for no traffic).
func (t Traffic) SectorsPerRequest() float64 {
	if t.Requests == 0 {
		return 0
	}
	return float64(t.Sectors) / float64(t.Requests)
}

// Add returns the sum of two counts.
func (t Traffic) Add(o Traffic) Traffic {
	return Traffic{
		Requests:       t.Requests + o.Requests,
		Sectors:        t.Sectors + o.Sectors,
		Lines:          t.Lines + o.Lines,
		BytesRequested: t.BytesRequested + o.BytesRequested,
		UniqueSectors:  t.UniqueSectors + o.UniqueSectors,
	}
}

// String formats the counts on one line.
func (t Traffic) String() string {
	return fmt.Sprintf("requests=%d sectors=%d (%.2f/request) lines=%d requested=%dB moved=%dB efficiency=%.1f%% unique=%dB",
		t.Requests, t.Sectors, t.SectorsPerRequest(), t.Lines, t.BytesRequested, t.BytesMoved(), 100*t.Efficiency(), t.HBMBytes())
}

// Warp is the addresses one warp-level memory instruction asks for: lane
// i, if bit i of Active is set, accesses Width bytes at Addr[i]. Width is
// 1, 2, 4, 8 or 16 and every address is a multiple of it, as the hardware
// requires (a misaligned vector access faults), so each lane's access lies
// in exactly one sector.
type Warp struct {
	Addr   [WarpSize]uint64
	Active uint32
	Width  int
}

// Strided returns the warp whose first n lanes access width bytes at
// base, base+stride, base+2·stride, …: the warp instruction of a thread
// mapping "lane l handles element l" over a layout whose element stride is
// stride bytes.
func Strided(base uint64, n int, stride int64, width int) Warp {
	var w Warp
	w.Width = width
	for l := 0; l < n && l < WarpSize; l++ {
		w.Addr[l] = uint64(int64(base) + int64(l)*stride)
		w.Active |= 1 << l
	}
	return w
}

// Count returns what one request of w costs: sectors, lines and distinct
// bytes. A warp with no active lane is not issued and costs nothing.
func (w *Warp) Count() (sectors, lines, bytes int64) {
	if w.Active == 0 {
		return 0, 0, 0
	}
	// Fast path: addresses non-decreasing over the active lanes (every
	// mapping of consecutive threads to increasing offsets). Then equal
	// sectors, lines and addresses are adjacent.
	var prevA, prevS, prevL uint64
	first := true
	monotonic := true
	for l := 0; l < WarpSize; l++ {
		if w.Active&(1<<l) == 0 {
			continue
		}
		a := w.Addr[l]
		if first {
			prevA, prevS, prevL = a, a/SectorBytes, a/LineBytes
			sectors, lines, bytes = 1, 1, int64(w.Width)
			first = false
			continue
		}
		if a < prevA {
			monotonic = false
			break
		}
		if a != prevA {
			bytes += int64(w.Width)
		}
		if s := a / SectorBytes; s != prevS {
			sectors++
			prevS = s
		}
		if ln := a / LineBytes; ln != prevL {
			lines++
			prevL = ln
		}
		prevA = a
	}
	if monotonic {
		return sectors, lines, bytes
	}
	var buf [WarpSize]uint64
	addrs := buf[:0]
	for l := 0; l < WarpSize; l++ {
		if w.Active&(1<<l) != 0 {
			addrs = append(addrs, w.Addr[l])
		}
	}
	slices.Sort(addrs)
	sectors, lines, bytes = 1, 1, int64(w.Width)
	for i := 1; i < len(addrs); i++ {
		if addrs[i] != addrs[i-1] {
			bytes += int64(w.Width)
		}
		if addrs[i]/SectorBytes != addrs[i-1]/SectorBytes {
			sectors++
		}
		if addrs[i]/LineBytes != addrs[i-1]/LineBytes {
			lines++
		}
	}
	return sectors, lines, bytes
}

// Counter accumulates the traffic of one kernel launch, instruction by
// instruction. With tracking on it also records every sector touched, so
// UniqueSectors is measured rather than computed; that is what the literal
// replay of a kernel does (and what tests compare the aggregate counting
// against), and it is only practical for small launches.
type Counter struct {
	Loads, Stores Traffic
	track         bool
	seenLd        map[uint64]struct{}
	seenSt        map[uint64]struct{}
}

// NewCounter returns an empty counter; track enables sector tracking.
func NewCounter(track bool) *Counter {
	c := &Counter{track: track}
	if track {
		c.seenLd = map[uint64]struct{}{}
		c.seenSt = map[uint64]struct{}{}
	}
	return c
}

// Load counts weight identical-cost load instructions shaped like w.
func (c *Counter) Load(w *Warp, weight int64) { c.add(&c.Loads, c.seenLd, w, weight) }

// Store counts weight identical-cost store instructions shaped like w.
func (c *Counter) Store(w *Warp, weight int64) { c.add(&c.Stores, c.seenSt, w, weight) }

func (c *Counter) add(t *Traffic, seen map[uint64]struct{}, w *Warp, weight int64) {
	s, l, b := w.Count()
	if s == 0 || weight == 0 {
		return
	}
	t.Requests += weight
	t.Sectors += s * weight
	t.Lines += l * weight
	t.BytesRequested += b * weight
	if c.track {
		for i := 0; i < WarpSize; i++ {
			if w.Active&(1<<i) != 0 {
				seen[w.Addr[i]/SectorBytes] = struct{}{}
			}
		}
	}
}

// finish stores the tracked unique sector counts (tracking counters only).
func (c *Counter) finish() {
	if c.track {
		c.Loads.UniqueSectors = int64(len(c.seenLd))
		c.Stores.UniqueSectors = int64(len(c.seenSt))
	}
}
