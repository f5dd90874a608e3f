package tensor

import (
	"fmt"
	"sync/atomic"
)

// Ledger counts the memory traffic of the tensors created in it: every
// allocation, every copy, and the live bytes with their peak. Counters are
// atomic, so one Ledger may be shared by goroutines. A nil *Ledger is
// valid and counts nothing.
//
// Ledgers are values a caller creates, not a process-wide global, so two
// experiments (the naive and the fused attention path, say) can be measured
// side by side in one process.
type Ledger struct {
	allocs    atomic.Int64
	allocated atomic.Int64
	copied    atomic.Int64
	copyOps   atomic.Int64
	live      atomic.Int64
	peak      atomic.Int64
}

// NewLedger returns a Ledger with all counters at zero.
func NewLedger() *Ledger { return &Ledger{} }

// Stats is a snapshot of a Ledger's counters.
type Stats struct {
	Allocations    int64 // number of storages allocated
	BytesAllocated int64 // total bytes of those storages
	BytesCopied    int64 // bytes written by copy operations
	CopyOps        int64 // number of copy operations
	LiveBytes      int64 // allocated bytes not yet released
	PeakLiveBytes  int64 // highest LiveBytes seen
}

// Sub returns the counters accumulated between before and s. Live and peak
// bytes are taken from s as they are levels, not totals.
func (s Stats) Sub(before Stats) Stats {
	return Stats{
		Allocations:    s.Allocations - before.Allocations,
		BytesAllocated: s.BytesAllocated - before.BytesAllocated,
		BytesCopied:    s.BytesCopied - before.BytesCopied,
		CopyOps:        s.CopyOps - before.CopyOps,
		LiveBytes:      s.LiveBytes,
		PeakLiveBytes:  s.PeakLiveBytes,
	}
}

// String formats the stats on one line.
func (s Stats) String() string {
	return fmt.Sprintf("allocs=%d allocated=%dB copied=%dB copy_ops=%d live=%dB peak=%dB",
		s.Allocations, s.BytesAllocated, s.BytesCopied, s.CopyOps, s.LiveBytes, s.PeakLiveBytes)
}

// Stats returns a snapshot of the counters.
func (c *Ledger) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	return Stats{
		Allocations:    c.allocs.Load(),
		BytesAllocated: c.allocated.Load(),
		BytesCopied:    c.copied.Load(),
		CopyOps:        c.copyOps.Load(),
		LiveBytes:      c.live.Load(),
		PeakLiveBytes:  c.peak.Load(),
	}
}

// ResetPeak sets the peak to the current live bytes, so the peak of a
// following block of code can be measured on its own.
func (c *Ledger) ResetPeak() {
	if c == nil {
		return
	}
	c.peak.Store(c.live.Load())
}

// RecordAlloc counts an allocation of n bytes made outside this package
// (a KV cache pool, a scratch buffer of a kernel).
func (c *Ledger) RecordAlloc(n int64) {
	if c == nil || n < 0 {
		return
	}
	c.allocs.Add(1)
	c.allocated.Add(n)
	live := c.live.Add(n)
	for {
		p := c.peak.Load()
		if live <= p || c.peak.CompareAndSwap(p, live) {
			return
		}
	}
}

// RecordFree counts n bytes given back (see Storage.Release).
func (c *Ledger) RecordFree(n int64) {
	if c == nil || n < 0 {
		return
	}
	c.live.Add(-n)
}

// RecordCopy counts one copy operation that wrote n bytes, for kernels
// outside this package (a KV gather, a cache write).
func (c *Ledger) RecordCopy(n int64) {
	if c == nil || n < 0 {
		return
	}
	c.copyOps.Add(1)
	c.copied.Add(n)
}
