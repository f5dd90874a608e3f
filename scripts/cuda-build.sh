#!/usr/bin/env bash
# scripts/cuda-build.sh — compile every CUDA kernel of Stride and build the
# -tags cuda test binary. It needs no GPU: nvcc compiles for a target
# architecture, not for the card in the machine, so this is a compile check
# that runs anywhere. Running the binary (./cuda.test) needs a GPU.
#
# Steps:
#   1. find nvcc (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin); when missing and
#      we may use apt, install Debian's nvidia-cuda-toolkit, enabling the
#      contrib/non-free components first if needed;
#   2. compile cuda/kernels/*.cu for sm_80 and sm_90 (sm_90 only when the
#      toolkit knows it; otherwise say so and keep sm_80) into
#      cuda/build/libstridecuda.a;
#   3. go test -c -tags cuda -o cuda.test ./cuda (skipped without Go).
#
# Options: --no-install (never call apt), --kernels-only (skip step 3).
# Environment: NVCC (compiler path), CUDA_HOME, CUDA_ARCHS (default "80 90").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

install=1
gobuild=1
for a in "$@"; do
	case "$a" in
	--no-install) install=0 ;;
	--kernels-only) gobuild=0 ;;
	-h | --help)
		sed -n '2,20p' "$0"
		exit 0
		;;
	*)
		echo "cuda-build: unknown option $a" >&2
		exit 2
		;;
	esac
done

log() { echo "cuda-build: $*"; }

find_nvcc() {
	if [[ -n "${NVCC:-}" && -x "${NVCC}" ]]; then
		echo "$NVCC"
		return 0
	fi
	for c in "$(command -v nvcc 2>/dev/null || true)" "${CUDA_HOME:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc /usr/bin/nvcc; do
		if [[ -n "$c" && -x "$c" ]]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

as_root() {
	if [[ "$(id -u)" == 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		log "need root to run: $*"
		return 1
	fi
}

# enable_nonfree adds contrib and non-free to the Debian apt sources (deb822
# debian.sources or a one-line sources.list), because nvidia-cuda-toolkit
# lives in non-free.
enable_nonfree() {
	local f=/etc/apt/sources.list.d/debian.sources
	if [[ -f "$f" ]]; then
		if ! grep -q '^Components:.*non-free\( \|$\)' "$f"; then
			log "enabling contrib non-free in $f"
			as_root sed -i -E 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$f"
		fi
	fi
	f=/etc/apt/sources.list
	if [[ -f "$f" ]] && grep -qE '^deb .* main$' "$f"; then
		log "enabling contrib non-free in $f"
		as_root sed -i -E 's/^(deb .* main)$/\1 contrib non-free non-free-firmware/' "$f"
	fi
}

install_toolkit() {
	if ! command -v apt-get >/dev/null; then
		log "no apt-get here: install the CUDA toolkit by hand (https://developer.nvidia.com/cuda-downloads)"
		return 1
	fi
	enable_nonfree
	log "apt-get update"
	as_root apt-get update -q
	log "apt-get install nvidia-cuda-toolkit (large: about 2-3 GB unpacked)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit
}

nvcc="$(find_nvcc || true)"
if [[ -z "$nvcc" ]]; then
	if [[ $install == 1 ]]; then
		install_toolkit || true
		nvcc="$(find_nvcc || true)"
	fi
	if [[ -z "$nvcc" ]]; then
		log "nvcc not found and not installed: cannot compile the kernels"
		exit 1
	fi
fi
log "using $nvcc ($("$nvcc" --version | tail -n 2 | head -n 1))"

# Pick the architectures this toolkit supports: sm_90 needs CUDA >= 11.8.
supported="$("$nvcc" --list-gpu-arch 2>/dev/null || true)"
gencode=()
archs_done=()
for a in ${CUDA_ARCHS:-80 90}; do
	if [[ -n "$supported" ]] && ! grep -qx "compute_$a" <<<"$supported"; then
		log "this nvcc does not support sm_$a: skipping it (upgrade the toolkit to target it)"
		continue
	fi
	gencode+=("-gencode=arch=compute_$a,code=sm_$a")
	archs_done+=("sm_$a")
done
if [[ ${#gencode[@]} == 0 ]]; then
	log "no requested architecture is supported by this nvcc"
	exit 1
fi
last="${archs_done[-1]#sm_}"
# PTX of the newest architecture too, so a newer GPU can JIT it.
gencode+=("-gencode=arch=compute_$last,code=compute_$last")
log "targets: ${archs_done[*]} (+ compute_$last PTX)"

# Debian's toolkit pins a supported host compiler through nvcc.profile; a
# toolkit from NVIDIA may need -ccbin for a too-new gcc. NVCC_CCBIN overrides.
ccbin=()
if [[ -n "${NVCC_CCBIN:-}" ]]; then
	ccbin=(-ccbin "$NVCC_CCBIN")
fi

mkdir -p cuda/build
objs=()
for cu in cuda/kernels/*.cu; do
	[[ -e "$cu" ]] || continue
	o="cuda/build/$(basename "${cu%.cu}").o"
	log "nvcc $cu"
	"$nvcc" "${ccbin[@]}" -std=c++17 -O3 -Xcompiler -fPIC --expt-relaxed-constexpr \
		-Icuda/kernels "${gencode[@]}" -c "$cu" -o "$o"
	objs+=("$o")
done
if [[ ${#objs[@]} == 0 ]]; then
	log "no kernels found under cuda/kernels"
	exit 1
fi
rm -f cuda/build/libstridecuda.a
ar rcs cuda/build/libstridecuda.a "${objs[@]}"
log "wrote cuda/build/libstridecuda.a (${#objs[@]} objects)"

if [[ $gobuild == 0 ]]; then
	exit 0
fi
if ! command -v go >/dev/null; then
	log "no Go toolchain: kernels compiled, test binary not built"
	exit 0
fi
# Where libcudart_static lives: Debian puts it in /usr/lib/x86_64-linux-gnu,
# NVIDIA's installer in $CUDA_HOME/lib64.
cudahome="$(dirname "$(dirname "$(readlink -f "$nvcc")")")"
export CGO_LDFLAGS="${CGO_LDFLAGS:-} -L$cudahome/lib64 -L$cudahome/lib -L/usr/lib/x86_64-linux-gnu"
export CGO_ENABLED=1
log "go test -c -tags cuda -o cuda.test ./cuda"
go test -c -tags cuda -o cuda.test ./cuda
log "built ./cuda.test (run it on a machine with an NVIDIA GPU: ./cuda.test -test.v)"
