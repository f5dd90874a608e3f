//go:build amd64

package kernels

import "golang.org/x/sys/cpu"

//go:generate go run asmgen.go asmgen_block.go asmgen_vnni.go asmgen_vec.go asmgen_write.go -prefetch=true -prefetch-op=PREFETCHT1

// detect reports which implementations run here. x/sys/cpu already checks
// that the OS saves the YMM/ZMM state (XCR0), so a true flag is usable. F16C
// (VCVTPH2PS) has no x/sys/cpu flag, so it is read from CPUID leaf 1 ECX
// bit 29; every AVX2 CPU shipped so far has it, but F16 kernels rely on it.
func detect() [3]bool {
	f16c := cpuidECX1()&(1<<29) != 0
	avx2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA && f16c
	avx512 := avx2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	return [3]bool{ImplGeneric: true, ImplAVX2: avx2, ImplAVX512: avx512}
}

// detectVNNI reports AVX-512 VNNI (VPDPBUSD), used by the Q8_0 integer
// kernels on top of AVX-512 F/BW/VL.
func detectVNNI() bool { return available[ImplAVX512] && cpu.X86.HasAVX512VNNI }
