#!/usr/bin/env bash
# scripts/gpu-check.sh — Stride's one-command GPU check.
#
# On a machine with Go (no GPU needed): builds ./cuda.test, the -tags cuda
# test binary (scripts/cuda-build.sh: nvcc compiles the kernels for sm_80
# and sm_90, cgo links them with the static CUDA runtime).
#
# On an NVIDIA machine (H100/H200: driver, Nsight Compute `ncu`; Go not
# needed when ./cuda.test was built and copied along):
#   1. runs every test of the binary: each kernel against its CPU
#      reference (MHA/GQA/MQA, varlen batches, block sizes, fp32/fp16/bf16);
#   2. profiles the strided-copy and reshape_and_cache launches of the
#      profile workload (cuda/profile_harness_test.go) with
#        ncu --metrics l1tex__t_{requests,sectors}_pipe_lsu_mem_global_op_{ld,st}.sum
#      and checks that the traffic simulation's request and sector counts agree
#      within 5% (TestNcuAgreement);
#   3. times both attention paths, kernel by kernel (CUDA events), on the
#      seed workload and variants, and prints the measured times and the
#      effective bandwidths next to the simulation's HBM bytes (TestPathTimings).
#
# Usage: scripts/gpu-check.sh [--build-only] [--no-build]
# Results go to $OUT (when set) or ./gpu-check-out: the logs, ncu.csv,
# ncu-sim.json and timings.txt. The exit status is non-zero if any step
# failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

build=auto
run=1
for a in "$@"; do
	case "$a" in
	--build-only) run=0 ;;
	--no-build) build=no ;;
	-h | --help)
		sed -n '2,25p' "$0"
		exit 0
		;;
	*)
		echo "gpu-check: unknown option $a" >&2
		exit 2
		;;
	esac
done

out="${OUT:-$here/gpu-check-out}"
mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }
failed=0
fail() {
	log "FAILED: $*"
	failed=1
}

have_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }

# --- build ---------------------------------------------------------------
if [[ $build == auto ]]; then
	if command -v go >/dev/null; then
		log "building ./cuda.test (scripts/cuda-build.sh)"
		if ! scripts/cuda-build.sh 2>&1 | tee "$out/build.log"; then
			fail "build (see $out/build.log)"
			exit 1
		fi
	elif [[ ! -x ./cuda.test ]]; then
		log "no Go toolchain and no ./cuda.test: build it first on a machine with Go (scripts/gpu-check.sh --build-only) and copy cuda.test here"
		exit 1
	else
		log "no Go toolchain: using the prebuilt ./cuda.test"
	fi
fi
if [[ $run == 0 ]]; then
	log "built ./cuda.test; run scripts/gpu-check.sh --no-build on an NVIDIA machine (with cuda.test beside it)"
	exit 0
fi
if [[ ! -x ./cuda.test ]]; then
	log "./cuda.test is missing"
	exit 1
fi
if ! have_gpu; then
	log "no NVIDIA GPU here (nvidia-smi lists none): built, nothing to run"
	exit 0
fi
nvidia-smi -L | tee -a "$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv | tee -a "$out/summary.txt"

# --- 1. correctness --------------------------------------------------------
log "1/3 kernel tests (./cuda.test -test.v)"
if ./cuda.test -test.v -test.timeout 30m 2>&1 | tee "$out/tests.log" | grep -E '^(--- FAIL|--- SKIP|ok|PASS|FAIL|cuda:)'; then
	:
fi
if grep -q -- '--- FAIL' "$out/tests.log" || ! grep -q '^PASS' "$out/tests.log"; then
	fail "kernel tests (see $out/tests.log)"
fi
if grep -q 'GPU tests will be skipped' "$out/tests.log"; then
	fail "the GPU tests were skipped although nvidia-smi sees a GPU (see $out/tests.log)"
fi

# --- 2. traffic simulation vs Nsight Compute --------------------------------------
ncu="$(command -v ncu || true)"
for c in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/NVIDIA-Nsight-Compute*/ncu; do
	[[ -z "$ncu" && -x "$c" ]] && ncu="$c"
done
if [[ -z "$ncu" ]]; then
	fail "ncu (Nsight Compute) not found: traffic simulation not checked"
else
	log "2/3 profiling the copy and reshape_and_cache kernels with $("$ncu" --version | tail -n 1)"
	metrics=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
	rm -f "$out/ncu.csv" "$out/ncu-sim.json"
	STRIDE_NCU_SIM="$out/ncu-sim.json" "$ncu" --csv --print-units base --log-file "$out/ncu.csv" \
		--metrics "$metrics" --kernel-name-base function \
		--kernel-name 'regex:strided_copy|reshape_and_cache' \
		./cuda.test -test.run '^TestProfileWorkload$' -test.v 2>&1 | tee "$out/profile.log"
	if [[ ! -s "$out/ncu.csv" || ! -s "$out/ncu-sim.json" ]]; then
		fail "ncu produced no report (profiling permissions? see $out/profile.log; ERR_NVGPUCTRPERM means run as root or set NVreg_RestrictProfilingToAdminUsers=0)"
	else
		log "comparing the simulation's requests and sectors with ncu (tolerance 5%)"
		if ! STRIDE_NCU_SIM="$out/ncu-sim.json" STRIDE_NCU_CSV="$out/ncu.csv" \
			./cuda.test -test.run '^TestNcuAgreement$' -test.v 2>&1 | tee "$out/agreement.txt"; then
			fail "traffic simulation vs ncu (see $out/agreement.txt)"
		fi
	fi
fi

# --- 3. timings --------------------------------------------------------------
log "3/3 timing both attention paths (kernel by kernel, CUDA events)"
if ! STRIDE_GPU_TIMINGS=1 STRIDE_GPU_REPS="${STRIDE_GPU_REPS:-3}" ./cuda.test -test.run '^TestPathTimings$' -test.v -test.timeout 30m 2>&1 | tee "$out/timings.txt"; then
	fail "timings (see $out/timings.txt)"
fi

if [[ $failed == 0 ]]; then
	log "all checks passed; results in $out"
else
	log "some checks failed; results in $out"
fi
exit $failed
