package mapfile

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// FaultError is the error CatchFault returns when the function it ran
// touched memory that faulted: in practice, a page of a mapped file that
// another process truncated.
type FaultError struct {
	Addr uintptr // the faulting address
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("memory fault at %#x reading a mapped file: was the file truncated or rewritten while in use?", e.Addr)
}

// CatchFault runs fn with debug.SetPanicOnFault on for the calling
// goroutine, so that a fault on a mapped page (SIGBUS once the file was
// truncated under the mapping) becomes a panic, which it recovers into a
// *FaultError instead of the runtime killing the process. Other panics
// pass through untouched.
//
// SetPanicOnFault is per goroutine: goroutines fn starts are not covered
// unless they call it themselves (see the package kernels worker pool,
// whose panics are re-raised in the caller, so setting it in each worker
// is enough to cover a parallel matmul). Whatever fn had written before
// the fault stays written: treat the data it was building as lost.
func CatchFault(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if re, ok := r.(runtime.Error); ok {
				if a, ok := re.(interface{ Addr() uintptr }); ok {
					err = &FaultError{Addr: a.Addr()}
					return
				}
			}
			panic(r)
		}
	}()
	return fn()
}
