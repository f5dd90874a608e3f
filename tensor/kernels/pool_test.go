package kernels

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type span struct{ start, end int }

// collect runs one ParallelFor and returns its ranges sorted by start.
func collect(p *Pool, n, minChunk int) []span {
	var mu sync.Mutex
	var got []span
	p.ParallelFor(n, minChunk, func(s, e int) {
		mu.Lock()
		got = append(got, span{s, e})
		mu.Unlock()
	})
	slices.SortFunc(got, func(a, b span) int { return a.start - b.start })
	return got
}

// TestParallelForPartition: ranges are disjoint, cover [0, n) in order, are
// at most Threads() many, each at least minChunk long when n allows, and
// identical on every call.
func TestParallelForPartition(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 5} {
		p := NewPool(threads)
		for _, n := range []int{1, 2, 3, 7, 10, 64, 100, 1001} {
			for _, minChunk := range []int{0, 1, 4, 50} {
				first := collect(p, n, minChunk)
				if len(first) == 0 || len(first) > threads {
					t.Fatalf("threads=%d n=%d: %d ranges", threads, n, len(first))
				}
				next := 0
				for _, r := range first {
					if r.start != next || r.end <= r.start {
						t.Fatalf("threads=%d n=%d min=%d: ranges %v do not tile [0,%d)", threads, n, minChunk, first, n)
					}
					if len(first) > 1 && r.end-r.start < minChunk {
						t.Fatalf("threads=%d n=%d: range %v shorter than minChunk %d", threads, n, r, minChunk)
					}
					next = r.end
				}
				if next != n {
					t.Fatalf("threads=%d n=%d: ranges %v end at %d", threads, n, first, next)
				}
				for rep := 0; rep < 3; rep++ {
					if again := collect(p, n, minChunk); !slices.Equal(again, first) {
						t.Fatalf("threads=%d n=%d: ranges changed %v -> %v", threads, n, first, again)
					}
				}
			}
		}
		p.Close()
	}
}

// TestParallelForUsesWorkers: with 2 threads and enough work, the two ranges
// run on different goroutines at the same time (each waits for the other).
func TestParallelForUsesWorkers(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var arrived atomic.Int32
	deadline := time.Now().Add(10 * time.Second)
	p.ParallelFor(2, 1, func(s, e int) {
		arrived.Add(1)
		for arrived.Load() < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Microsecond)
		}
	})
	if arrived.Load() != 2 {
		t.Fatal("ranges did not run concurrently")
	}
}

// TestParallelForParked exercises the park/wake path: between loops the
// workers have time to give up spinning and block on their channel.
func TestParallelForParked(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	for i := 0; i < 5; i++ {
		time.Sleep(3 * spinFor)
		var total atomic.Int64
		p.ParallelFor(300, 1, func(s, e int) { total.Add(int64(e - s)) })
		if total.Load() != 300 {
			t.Fatalf("iteration %d covered %d of 300", i, total.Load())
		}
	}
}

// TestParallelForNestedAndConcurrent: a loop started inside a loop, or from
// another goroutine while the pool is busy, runs on its caller over the
// same ranges instead of deadlocking.
func TestParallelForNestedAndConcurrent(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	want := collect(p, 100, 1)
	var mu sync.Mutex
	var inner [][]span
	p.ParallelFor(2, 1, func(s, e int) {
		r := collect(p, 100, 1)
		mu.Lock()
		inner = append(inner, r)
		mu.Unlock()
	})
	for _, r := range inner {
		if !slices.Equal(r, want) {
			t.Fatalf("nested ranges %v, want %v", r, want)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				var sum atomic.Int64
				p.ParallelFor(1000, 1, func(s, e int) {
					for k := s; k < e; k++ {
						sum.Add(int64(k))
					}
				})
				if sum.Load() != 999*1000/2 {
					t.Errorf("concurrent loop sum %d", sum.Load())
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestParallelForPanicPropagates(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for _, bad := range []int{0, 1} { // panic on the caller's range, then on the worker's
		func() {
			defer func() {
				if v := recover(); v != "boom" {
					t.Fatalf("part %d: recovered %v, want boom", bad, v)
				}
			}()
			p.ParallelFor(2, 1, func(s, e int) {
				if s == bad {
					panic("boom")
				}
			})
		}()
		// The pool still works afterwards.
		if got := collect(p, 10, 1); len(got) != 2 {
			t.Fatalf("after panic: ranges %v", got)
		}
	}
}

func TestPoolNilAndClosed(t *testing.T) {
	var nilPool *Pool
	if nilPool.Threads() != 1 {
		t.Fatal("nil pool threads")
	}
	if got := collect(nilPool, 10, 1); !slices.Equal(got, []span{{0, 10}}) {
		t.Fatalf("nil pool ranges %v", got)
	}
	nilPool.Close()
	p := NewPool(2)
	want := collect(p, 10, 1)
	p.Close()
	p.Close() // idempotent
	if got := collect(p, 10, 1); !slices.Equal(got, want) {
		t.Fatalf("closed pool ranges %v, want %v", got, want)
	}
	p0 := NewPool(0)
	defer p0.Close()
	if p0.Threads() != runtime.NumCPU() {
		t.Fatalf("NewPool(0) has %d threads, want NumCPU %d", p0.Threads(), runtime.NumCPU())
	}
	p.ParallelFor(0, 1, func(int, int) { t.Fatal("called for n=0") })
}

func TestParallelForZeroAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var sink [1024]float32
	f := func(s, e int) {
		for i := s; i < e; i++ {
			sink[i] += 1
		}
	}
	allocs := testing.AllocsPerRun(100, func() { p.ParallelFor(len(sink), 1, f) })
	if allocs != 0 {
		t.Fatalf("%v allocs per ParallelFor", allocs)
	}
	if sink[0] != sink[1023] || sink[0] < 100 {
		t.Fatalf("loop did not run: %v %v", sink[0], sink[1023])
	}
}

func ExamplePool_ParallelFor() {
	p := NewPool(2)
	defer p.Close()
	squares := make([]int, 8)
	p.ParallelFor(len(squares), 1, func(start, end int) {
		for i := start; i < end; i++ {
			squares[i] = i * i
		}
	})
	fmt.Println(squares)
	// Output: [0 1 4 9 16 25 36 49]
}

// TestPoolStress runs many short loops on an oversubscribed pool (more
// threads than Ps, so goroutines are preempted at arbitrary points,
// including between a worker's completion count and its wake-up signal)
// with pauses that let workers and the caller park. A lost or stale wake-up
// shows up as a hang (test timeout) or a wrong count.
func TestPoolStress(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	var delays atomic.Int32
	testHookLastWorker = func() {
		if delays.Add(1)%5 == 0 {
			time.Sleep(3 * spinFor) // the caller moves on and parks meanwhile
		}
	}
	defer func() { testHookLastWorker = nil }()
	p := NewPool(4)
	defer p.Close()
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	var counts [64]int32
	for it := 0; it < iters; it++ {
		n := 1 + it%64
		p.ParallelFor(n, 1, func(s, e int) {
			for i := s; i < e; i++ {
				atomic.AddInt32(&counts[i], 1)
			}
			if (s+it)%7 == 0 {
				time.Sleep(time.Duration(it%3) * spinFor)
			}
		})
		for i := 0; i < n; i++ {
			if c := atomic.SwapInt32(&counts[i], 0); c != 1 {
				t.Fatalf("iteration %d: index %d ran %d times", it, i, c)
			}
		}
	}
}
