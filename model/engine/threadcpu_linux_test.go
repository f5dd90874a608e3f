package engine

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD):
// with the goroutine locked to its thread and a one-thread engine (all
// kernels run inline), it is the run's compute time, whatever else the
// machine is running.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
