//go:build unix

package kernels

import "syscall"

// processCPU is the process's user+system CPU time in seconds. On a host
// shared with other jobs a single-threaded benchmark's CPU time per op is
// far steadier than its wall time, which includes time spent descheduled.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
