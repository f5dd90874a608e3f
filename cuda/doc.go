// Package cuda holds Stride's CUDA kernels and a warp-level simulation of
// their global-memory traffic that runs on machines without a GPU.
//
// Experimental: the kernels compile (scripts/cuda-build.sh) but have not
// run on a GPU yet, so nothing here says they compute the right values or
// run at the times the simulation estimates. What is tested without a GPU
// is the simulation (Replay against Aggregate, the traffic of every kernel
// against hand counts) and that the device API launches exactly the grids
// the simulation counts (a simulated device in the tests). The label goes when
// scripts/gpu-check.sh has passed on a GPU.
//
// # Files
//
// Each kernel family has one Go file holding its plan (grid, thread
// mapping, the simulation of its traffic) and its launcher (the Device
// method that launches with that plan): copy.go (strided_copy,
// repeat_interleave, transpose_contiguous), cache.go (reshape_and_cache,
// gather_kv), decode.go (paged_attention_decode and its merge), prefill.go
// (flash_attention_prefill) and naive.go (naive_scores, naive_softmax,
// naive_av); attn.go holds what decode and prefill share. device.go is
// the device itself (buffers, tensors, uploads); backend_cuda.go (build
// tag cuda) and backend_nocuda.go are the runtime behind it.
//
// # Why layouts matter on a GPU
//
// A GPU runs threads in warps of 32 that issue each memory instruction
// together. The load/store unit turns one warp instruction into one
// request to the L1 cache (L1TEX), and L1TEX moves memory in 32-byte
// sectors, four to a 128-byte line. What a request costs is the number of
// distinct sectors its 32 addresses fall in:
//
//	fp32, stride 1      thread i reads addr+4i: 128 bytes in 4 sectors, all used   → 100%
//	fp32, stride 1024   thread i reads addr+4096i: 32 sectors for 128 useful bytes → 12.5%
//	fp32, offset 1      a view starting 4 bytes into a sector: 5 sectors           →  80%
//	fp32, a[::4]        16-byte spacing: 16 sectors, 2 useful floats in each       →  25%
//
// (the seed notes' §5.2 and experiment 5; SeedWarps computes them). A
// kernel that walks a transposed view reads 8× the bytes it uses unless it
// is written around the layout, which is why the naive attention path's
// transpose(...).contiguous() and repeat_interleave copies, and its
// materialized [S, S] score matrix, cost what they cost, and why the fused
// kernels read Q, K and V through their strides instead.
//
// # The traffic simulation
//
// Counter replays warp instructions (Warp: 32 addresses, an active mask
// and a width) and sums requests, sectors, lines and the distinct bytes
// requested, the way Nsight Compute's
// l1tex__t_{requests,sectors}_pipe_lsu_mem_global_op_{ld,st} count them:
// one request per warp instruction with an active thread, sectors =
// distinct 32-byte sectors of that instruction's active threads. Bytes
// requested / bytes moved is the coalescing efficiency.
//
// Each kernel has a "program" in Go that issues the same instructions as
// the .cu kernel: same grid, same thread-to-element mapping, same element
// size, same base addresses (Operand: a layout plus the device address of
// its storage). The mapping is documented twice, in the kernel's .cu file
// and on its plan type here (copyPlan, slabPlan, decodePlan, prefillPlan,
// naivePlan), and the plans are what the GPU binding launches with, so the
// grid the simulation counts is the grid that runs.
//
// Every program can count in two modes. Replay executes the mapping
// literally, block by block and warp by warp, recording every sector. It
// is the reference, and practical for small launches only. Aggregate is
// exact too but fast at any size: what an instruction costs depends only
// on its addresses modulo 128 (moving all 32 addresses by a multiple of a
// line moves every sector and line with them), so instructions that are
// translates of one pattern are replayed once per distinct base residue
// and multiplied by how many bases have it. For affine bases the residue
// histogram is a convolution of one periodic histogram per dimension. The
// tests prove the two modes equal on random layouts, dtypes, alignments,
// batches, block sizes and head counts; the seed's B=2, S=4096, H=32,
// D=128 layer (2^31 score elements) is then counted in under a second.
//
// Two byte counts come out of a launch. BytesMoved (sectors × 32) is what
// L1TEX moves if no sector is ever reused between requests. HBMBytes
// (distinct sectors × 32) is the compulsory traffic, what HBM must deliver
// if every reuse hits in L1 or L2: computed in Aggregate mode from the
// byte ranges each kernel touches, merged at sector granularity. Times are
// estimates, HBMBytes / bandwidth (DefaultBandwidth: the H200's 4.8 TB/s),
// a lower bound; they are labelled so everywhere.
//
// Workload.Simulate builds one attention step on meta tensors and simulates
// both paths kernel by kernel; its test checks that the naive path's extra
// HBM bytes are exactly its intermediates written and read back (gathered
// K and V, repeated K and V, the scores and probabilities, the [H, T, D]
// output before its transpose). `infer coalesce` prints it.
//
// # The kernels (cuda/kernels, CUDA C++ for sm_80 and sm_90)
//
//	copy.cu      strided_copy, repeat_interleave, transpose_contiguous:
//	             any ≤4-D view (dims merged first) → contiguous, thread per
//	             element or per 16-byte vector
//	cache.cu     reshape_and_cache (K, V through key_stride and
//	             key_head_stride into [num_blocks, block_size, KVH, D] at a
//	             slot mapping, −1 = padding) and gather_kv (its inverse)
//	decode.cu    paged_attention_decode: one token per sequence, block
//	             tables, context lengths, kv_head = head / (H/KVH); with a
//	             partition size, split-KV blocks plus paged_attention_merge
//	             (log-sum-exp)
//	prefill.cu   flash_attention_prefill: Q/K/V tiles in shared memory,
//	             online softmax, causal, GQA, varlen, output straight into
//	             [T, H·D]
//	naive.cu     naive_scores, naive_softmax, naive_av: the textbook path's
//	             matmuls with a materialized score matrix
//	runtime.cu   allocation, copies, events for the binding
//
// 16-byte vector accesses are used only when every address they would form
// is 16-byte aligned (a view with a non-zero storage offset often is not);
// otherwise the kernels fall back to one element per thread.
//
// # Building with CUDA
//
// The Go binding (backend_cuda.go, cgo) is behind the build tag cuda:
//
//	scripts/cuda-build.sh            # nvcc → cuda/build/libstridecuda.a, then cuda.test
//	go build -tags cuda ./cmd/infer  # after the script
//
// A build without the tag offers the same API; every call answers
// ErrNoCUDA, which says how to rebuild. The tests' simulated device
// (NewSimDevice in device_sim_test.go) runs nothing but plans and
// simulates every call, in any build.
// scripts/gpu-check.sh runs the GPU tests, compares the simulation with Nsight
// Compute and times both paths on an NVIDIA machine.
package cuda
