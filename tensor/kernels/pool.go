package kernels

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
)

// spinFor is how long an idle worker (or a caller waiting for workers)
// polls before parking on a channel. Decode calls MatMul several times per
// layer with a few µs of serial work in between (RMSNorm, RoPE, attention),
// so a worker that is still polling picks the next job up in well under a
// µs; a parked one costs a scheduler wake-up (~5-20 µs). 50 µs keeps the
// workers hot through one token while costing an idle process nothing.
const spinFor = 50 * time.Microsecond

// spinMask: pollers check the clock and yield (runtime.Gosched) once every
// spinMask+1 atomic loads (a few µs). Yielding on every poll costs ~0.5 µs
// of scheduler work per hand-off; never yielding would starve other
// goroutines when there are fewer Ps than threads. The clock starts at the
// first check, so a hand-off that lands within the first round reads no
// clock at all.
const spinMask = 31

// Pool is a persistent set of worker goroutines for data-parallel loops.
// Workers are started once by NewPool and live until Close; the goroutine
// that calls ParallelFor (or MatMul) is worker 0 and works too, so a Pool of
// T threads starts T-1 goroutines.
//
// A nil *Pool is valid and runs everything on the caller. A Pool runs one
// loop at a time: if a second goroutine (or f itself) starts a loop while
// one is running, the second loop runs on its caller alone, over the same
// ranges, so results never depend on who got the workers.
type Pool struct {
	s *poolState
}

// runner is one parallel loop body. MatMul's job is a struct owned by the
// Pool, so dispatching it through this interface allocates nothing.
type runner interface {
	run(start, end int)
}

// funcRunner adapts ParallelFor's func; a func is pointer-shaped, so storing
// it in an interface does not allocate.
type funcRunner func(start, end int)

func (f funcRunner) run(start, end int) { f(start, end) }

// poolState is shared with the workers; Pool wraps it so that an unreachable
// Pool can be closed by a cleanup even though workers still reference this.
//
// Fields are grouped by who writes them, each group on its own cache line:
// a hand-off then moves one line to the workers (the job) and one line back
// (the completion count), instead of bouncing a shared line several times.
type poolState struct {
	_ cpu.CacheLinePad

	// Written by the dispatching caller, read by workers. ticket publishes
	// a loop: seq<<16 | parts. Workers with index < parts read n, align and
	// r (written before the Store) and run their part.
	ticket atomic.Uint64
	n      int
	align  int
	r      runner
	_      cpu.CacheLinePad

	// Written by workers, read by the caller.
	pending atomic.Int32 // parts still running on workers
	_       cpu.CacheLinePad

	// Parking. A poller that gives up spinning takes park, announces itself
	// (sleepers / callerWaiting) and re-checks its condition before
	// Wait; the other side publishes first (ticket / pending) and then, if
	// someone is announced, takes park and signals. Because the announcement
	// and the re-check happen under park, and the publish precedes the
	// check of the announcement, a wake-up cannot be lost; spurious ones are
	// absorbed by the condition loops.
	park          sync.Mutex
	workCond      sync.Cond    // workers wait here for a new ticket
	doneCond      sync.Cond    // the caller waits here for pending == 0
	sleepers      atomic.Int32 // workers inside workCond.Wait's loop
	callerWaiting atomic.Bool  // the caller is inside doneCond.Wait's loop
	_             cpu.CacheLinePad

	threads  int
	seq      uint64
	mu       sync.Mutex // held by the goroutine that owns the workers for a loop
	panicked atomic.Pointer[panicValue]
	wg       sync.WaitGroup
	closed   bool      // guarded by mu
	mm       matmulJob // MatMul's job, reused so a call allocates nothing
	q8       q8Acts    // MatMul's quantized activations (Q8_0), guarded by mu
	ggml     ggmlActs  // MatMul's activations for ggml weights, guarded by mu
}

type panicValue struct{ v any }

const closedTicket = 1 << 63

// testHookLastWorker, when set by a test, runs in the last worker to finish
// a loop between its completion count and its wake-up signal: the window in
// which the caller may already have moved on to the next loop (and parked).
var testHookLastWorker func()

// NewPool starts a pool of threads workers (including the caller);
// threads <= 0 means runtime.NumCPU().
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	s := &poolState{threads: threads}
	s.workCond.L = &s.park
	s.doneCond.L = &s.park
	for i := 1; i < threads; i++ {
		s.wg.Add(1)
		go s.work(i)
	}
	p := &Pool{s: s}
	runtime.AddCleanup(p, func(s *poolState) { s.close() }, s)
	return p
}

// Threads is the number of goroutines that share a loop (1 for a nil Pool).
func (p *Pool) Threads() int {
	if p == nil {
		return 1
	}
	return p.s.threads
}

// Close stops the workers and waits for them to exit. It is idempotent;
// after Close the Pool behaves like a nil Pool (serial, same ranges).
func (p *Pool) Close() {
	if p != nil {
		p.s.close()
	}
}

func (s *poolState) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.ticket.Store(closedTicket)
	s.wakeWorkers()
	s.mu.Unlock()
	s.wg.Wait()
}

// parts is how many contiguous ranges a loop of n items is cut into: at
// most threads, at most one per align-sized unit, and only as many as keep
// each range at least minChunk items long (at least 1).
func parts(threads, n, minChunk, align int) int {
	if minChunk < 1 {
		minChunk = 1
	}
	k := min(threads, n/minChunk, (n+align-1)/align)
	return max(k, 1)
}

// bounds is range i of k over n items, cut on multiples of align. It depends
// only on (n, k, align, i), so every call with the same n and thread count
// hands the same items to the same part.
func bounds(n, k, align, i int) (start, end int) {
	units := (n + align - 1) / align
	start = min(i*units/k*align, n)
	end = min((i+1)*units/k*align, n)
	return start, end
}

// ParallelFor calls f(start, end) on disjoint ranges that cover [0, n), at
// most one range per thread and each at least minChunk long (except when n
// itself is smaller), and returns when all calls have returned. The ranges
// depend only on n, minChunk and Threads(), never on timing. f must be safe
// to call concurrently on disjoint ranges. ParallelFor does not allocate
// (a closure that captures variables may be allocated by the caller). If f
// panics, the panic is re-raised in the caller after all ranges finish.
func (p *Pool) ParallelFor(n, minChunk int, f func(start, end int)) {
	if n <= 0 || f == nil {
		return
	}
	p.parallel(n, minChunk, 1, funcRunner(f))
}

// parallel is ParallelFor with ranges cut on multiples of align and a
// runner instead of a func.
func (p *Pool) parallel(n, minChunk, align int, r runner) {
	if p == nil {
		r.run(0, n)
		return
	}
	s := p.s
	k := parts(s.threads, n, minChunk, align)
	if k == 1 {
		r.run(0, n)
		return
	}
	if !s.mu.TryLock() {
		serialParts(n, k, align, r) // busy (nested or concurrent loop)
		return
	}
	defer s.mu.Unlock()
	if s.closed {
		serialParts(n, k, align, r)
		return
	}
	s.dispatch(n, k, align, r)
}

// serialParts runs the k ranges one after another on the caller.
func serialParts(n, k, align int, r runner) {
	for i := 0; i < k; i++ {
		if start, end := bounds(n, k, align, i); start < end {
			r.run(start, end)
		}
	}
}

// dispatch publishes a loop to workers 1..k-1, runs part 0, and waits.
// Called with s.mu held.
func (s *poolState) dispatch(n, k, align int, r runner) {
	s.n, s.align, s.r = n, align, r
	s.pending.Store(int32(k - 1))
	s.seq++
	s.ticket.Store(s.seq<<16 | uint64(k))
	s.wakeWorkers()

	var callerPanic any
	func() {
		defer func() { callerPanic = recover() }()
		if start, end := bounds(n, k, align, 0); start < end {
			r.run(start, end)
		}
	}()
	s.waitWorkers()
	s.r = nil // do not keep the job's slices alive
	if callerPanic != nil {
		panic(callerPanic)
	}
	if s.panicked.Load() != nil {
		if pv := s.panicked.Swap(nil); pv != nil {
			panic(pv.v)
		}
	}
}

// wakeWorkers wakes parked workers after a new ticket was stored.
func (s *poolState) wakeWorkers() {
	if s.sleepers.Load() > 0 {
		s.park.Lock()
		s.workCond.Broadcast()
		s.park.Unlock()
	}
}

// waitWorkers polls pending for spinFor, then parks on doneCond until the
// last worker signals.
func (s *poolState) waitWorkers() {
	var start time.Time
	for i := 0; s.pending.Load() != 0; i++ {
		if i&spinMask != spinMask {
			continue // pure spin: a change is seen within ~100 ns
		}
		if i == spinMask {
			start = time.Now()
		}
		if time.Since(start) <= spinFor {
			runtime.Gosched() // let other goroutines on this P run
			continue
		}
		s.park.Lock()
		s.callerWaiting.Store(true)
		for s.pending.Load() != 0 {
			s.doneCond.Wait()
		}
		s.callerWaiting.Store(false)
		s.park.Unlock()
		return
	}
}

// work is worker i's loop: wait for a new ticket, run part i if the loop
// has that many parts, report completion.
func (s *poolState) work(i int) {
	defer s.wg.Done()
	// Weights are often a mapped file: if it is truncated under the
	// mapping, the read faults (SIGBUS). SetPanicOnFault is per goroutine,
	// so each worker sets it; runPart recovers the panic and dispatch
	// re-raises it in the caller, where mapfile.CatchFault (or the CLI)
	// turns it into an error instead of the runtime killing the process.
	debug.SetPanicOnFault(true)
	var last uint64
	for {
		t := s.waitTicket(last)
		last = t
		if t == closedTicket {
			return
		}
		k := int(t & 0xffff)
		if i >= k {
			continue
		}
		s.runPart(i, k)
		if s.pending.Add(-1) == 0 {
			if testHookLastWorker != nil {
				testHookLastWorker()
			}
			if s.callerWaiting.Load() {
				s.park.Lock()
				s.doneCond.Signal()
				s.park.Unlock()
			}
		}
	}
}

func (s *poolState) runPart(i, k int) {
	defer func() {
		if v := recover(); v != nil {
			s.panicked.CompareAndSwap(nil, &panicValue{v})
		}
	}()
	if start, end := bounds(s.n, k, s.align, i); start < end {
		s.r.run(start, end)
	}
}

// waitTicket returns the first ticket different from last, polling for
// spinFor and then parking on workCond.
func (s *poolState) waitTicket(last uint64) uint64 {
	var start time.Time
	for i := 0; ; i++ {
		if t := s.ticket.Load(); t != last {
			return t
		}
		if i&spinMask == spinMask {
			if i == spinMask {
				start = time.Now()
			}
			if time.Since(start) > spinFor {
				break
			}
			runtime.Gosched()
		}
	}
	s.park.Lock()
	s.sleepers.Add(1)
	t := s.ticket.Load()
	for t == last {
		s.workCond.Wait()
		t = s.ticket.Load()
	}
	s.sleepers.Add(-1)
	s.park.Unlock()
	return t
}
