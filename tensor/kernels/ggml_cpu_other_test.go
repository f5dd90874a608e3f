//go:build !unix

package kernels

func processCPU() float64 { return 0 }
