package attention

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Runner runs body over [0, n) split into chunks, possibly in parallel, and
// returns when every chunk is done. A *kernels.Pool (a persistent worker
// pool) has this method; so does the package's default runner, which
// starts fresh goroutines on every call.
type Runner interface {
	ParallelFor(n, minChunk int, body func(start, end int))
}

// Options configure a Path.
type Options struct {
	// Threads caps the number of workers a kernel uses. 0 means
	// runtime.GOMAXPROCS(0).
	Threads int
	// Runner, if non-nil, supplies the goroutines (a persistent pool saves
	// the goroutine start of every call). The fused kernel asks it for
	// one chunk per worker and hands out the work items itself, so the
	// result does not depend on how the Runner splits the range.
	Runner Runner
	// QueryTile is the number of query rows (tokens × the query heads that
	// share one KV head) one work item of the fused kernel holds. 0 means
	// 32.
	QueryTile int
	// KeyTile is the number of keys whose scores the fused kernel holds at
	// once (the only scores that exist at any time). 0 means 128.
	KeyTile int
}

const (
	defaultQueryTile = 32
	defaultKeyTile   = 128
)

func (o Options) threads() int {
	if o.Threads > 0 {
		return o.Threads
	}
	return runtime.GOMAXPROCS(0)
}

func (o Options) queryTile() int {
	if o.QueryTile > 0 {
		return o.QueryTile
	}
	return defaultQueryTile
}

// tileTokens is the tokens of a full query tile when g query heads share
// each KV head: QueryTile rows are tokens × g. The kernel's plan cuts
// sequences by it and PrefillAlignment reports it.
func (o Options) tileTokens(g int) int { return max(1, o.queryTile()/g) }

func (o Options) keyTile() int {
	if o.KeyTile > 0 {
		return o.KeyTile
	}
	return defaultKeyTile
}

func (o Options) runner() Runner {
	if o.Runner != nil {
		return o.Runner
	}
	return goRunner{}
}

// goRunner is the default Runner: one goroutine per chunk of the range,
// started on each call. With the handful of workers the kernels ask for
// this costs a few microseconds per call, small next to a layer's
// attention; a persistent pool can be plugged in through Options.Runner.
type goRunner struct{}

// ParallelFor implements Runner.
func (goRunner) ParallelFor(n, minChunk int, body func(start, end int)) {
	if n <= 0 {
		return
	}
	minChunk = max(minChunk, 1)
	workers := min(runtime.GOMAXPROCS(0), (n+minChunk-1)/minChunk)
	if workers <= 1 {
		body(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	var panicked atomic.Pointer[any]
	for start := chunk; start < n; start += chunk {
		wg.Add(1)
		go func(s, e int) {
			defer wg.Done()
			// A fault on a mapped cache or weight page (a truncated file)
			// becomes a panic here, re-raised in the caller below, as the
			// kernels pool does, instead of killing the process.
			debug.SetPanicOnFault(true)
			defer func() {
				if v := recover(); v != nil {
					panicked.CompareAndSwap(nil, &v)
				}
			}()
			body(s, e)
		}(start, min(start+chunk, n))
	}
	body(0, min(chunk, n))
	wg.Wait()
	if v := panicked.Load(); v != nil {
		panic(*v)
	}
}
