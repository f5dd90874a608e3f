package kernels

import (
	"sync"
	"time"
)

// bwSink keeps the streaming sums observable so the reads cannot be elided.
var bwSink struct {
	sync.Mutex
	v float32
}

// BandwidthProbe measures the sustained read bandwidth in GB/s (1e9
// bytes per second) of a streaming sum over its buffer, split across a
// pool's threads. This is the roofline's memory ceiling for decode: a
// matvec cannot run faster than Matrix.Bytes() / bandwidth. Use a buffer
// several times the last-level cache (the default for bytes <= 0 is 1 GiB)
// to measure DRAM; a smaller one measures the cache that holds it. It uses
// the current Impl (the generic kernel is compute-bound well below DRAM
// speed, so it reports a lower figure). The probe keeps its buffer for
// repeated measurements: on a shared machine the bandwidth drifts over
// minutes, so a roofline is best computed against a measurement taken next
// to each timed run (infer bench --roofline does one per repetition).
type BandwidthProbe struct {
	buf []float32
}

// NewBandwidthProbe allocates and touches a buffer of the given size (1 GiB
// for bytes <= 0).
func NewBandwidthProbe(bytes int) *BandwidthProbe {
	if bytes <= 0 {
		bytes = 1 << 30
	}
	buf := make([]float32, max(bytes/4, 64))
	for i := range buf {
		buf[i] = 1
	}
	return &BandwidthProbe{buf: buf}
}

// Measure sums the buffer once to warm up and then passes more times (at
// least 1) on p's threads, and returns the fastest pass in GB/s.
func (b *BandwidthProbe) Measure(p *Pool, passes int) float64 {
	impl := CurrentImpl()
	best := time.Duration(1<<63 - 1)
	for pass := 0; pass <= max(passes, 1); pass++ {
		start := time.Now()
		streamSum(p, impl, b.buf)
		if d := time.Since(start); pass > 0 && d < best {
			best = d
		}
	}
	return float64(len(b.buf)*4) / best.Seconds() / 1e9
}

// streamSum reads buf once, split across p's threads in contiguous ranges.
func streamSum(p *Pool, impl Impl, buf []float32) {
	p.ParallelFor(len(buf), 1<<16, func(s, e int) {
		v := sum(impl, buf[s:e])
		bwSink.Lock()
		bwSink.v += v
		bwSink.Unlock()
	})
}
