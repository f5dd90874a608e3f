#!/usr/bin/env bash
# scripts/bench-serve-vs-llamacpp.sh — Stride's `infer serve` and llama.cpp's
# llama-server side by side on the same GGUF, measured by `infer bench serve`.
#
# Usage:
#   scripts/bench-serve-vs-llamacpp.sh [options] LLAMA_SERVER GGUF
#
# LLAMA_SERVER is a llama-server binary you built (llama.cpp: cmake -B build
# -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build --target
# llama-server); GGUF is the model both servers load, e.g.
# ../shared/models/gguf/stories260K-f32.gguf. CI neither builds nor runs this.
#
# Both servers get the same context per sequence (-ctx), the same number of
# sequences served at once (-slots: llama-server's -np with -c ctx·slots,
# infer serve's --max-batch with KV blocks for slots full sequences) and the
# same threads (-threads). Both run during the whole sweep (an idle server
# costs nothing); each setting is measured on both back to back, the order
# alternating between settings (-swap starts with Stride instead of
# llama-server), so a shared machine's drift touches both.
# The prompts are the same for both: random, token-exact by the GGUF's own
# tokenizer (--checkpoint GGUF), greedy, with ignore_eos so every request
# generates -out tokens. Each setting has its own seed, so its prompts are
# new to both servers' prefix caches (llama-server keeps each slot's last
# prompt; infer serve shares prefixes), and the warm-up has prompts of its
# own.
#
# The sweep: closed-loop concurrency (-conc, all requests at once, at most C
# in flight), then a Poisson rate sweep (-rates, requests per second). Each
# run's JSON lines go to -dir; the script ends with a Markdown table of
# output tokens/s and p50/p99 TTFT, TPOT and ITL per setting and server.
#
# Options (defaults in brackets):
#   -ctx N       context per sequence [512]
#   -slots N     sequences served at once [16]
#   -threads N   compute threads of each server [2]
#   -prompts N   requests per setting [64]
#   -in N        prompt tokens [128]
#   -out N       output tokens [128]
#   -conc LIST   concurrencies [1,4,16]
#   -rates LIST  Poisson request rates [2,8,32]
#   -dir DIR     results [a new temporary directory]
#   -infer BIN   an infer binary [built from this checkout]
#   -swap        measure Stride first in the first setting [llama-server]
set -euo pipefail
cd "$(dirname "$0")/.."

ctx=512 slots=16 threads=2 prompts=64 in=128 out=128 conc=1,4,16 rates=2,8,32 dir="" infer="" swap=0
while [[ $# -gt 0 && $1 == -* ]]; do
	case "$1" in
	-ctx) ctx=$2 ;; -slots) slots=$2 ;; -threads) threads=$2 ;; -prompts) prompts=$2 ;;
	-in) in=$2 ;; -out) out=$2 ;; -conc) conc=$2 ;; -rates) rates=$2 ;; -dir) dir=$2 ;; -infer) infer=$2 ;;
	-swap) swap=1; shift; continue ;;
	-h | --help) sed -n '2,43p' "$0"; exit 0 ;;
	*) echo "bench-serve-vs-llamacpp: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
if [[ $# -ne 2 ]]; then
	echo "usage: scripts/bench-serve-vs-llamacpp.sh [options] LLAMA_SERVER GGUF" >&2
	exit 2
fi
llama=$1 gguf=$2
[[ -x $llama ]] || { echo "bench-serve-vs-llamacpp: $llama is not an executable" >&2; exit 2; }
[[ -f $gguf ]] || { echo "bench-serve-vs-llamacpp: $gguf is not a file" >&2; exit 2; }
dir=${dir:-$(mktemp -d)}
mkdir -p "$dir"
if [[ -z $infer ]]; then
	infer=$dir/infer
	go build -o "$infer" ./cmd/infer
fi

# free_port prints a TCP port nobody listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
lport=$(free_port) sport=$(free_port)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

"$llama" -m "$gguf" --host 127.0.0.1 --port "$lport" -c $((ctx * slots)) -np "$slots" -t "$threads" -tb "$threads" \
	>"$dir/llama-server.log" 2>&1 &
pids+=($!)
"$infer" serve --checkpoint "$gguf" --host 127.0.0.1 --port "$sport" -c "$ctx" --max-batch "$slots" \
	--num-blocks $((slots * ctx / 16)) -t "$threads" >"$dir/infer-serve.log" 2>&1 &
pids+=($!)

# wait_up waits for a server's /health to answer 200.
wait_up() {
	for _ in $(seq 1 300); do
		if curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	echo "bench-serve-vs-llamacpp: the server on port $1 did not come up; see $dir/*.log" >&2
	exit 1
}
wait_up "$lport"
wait_up "$sport"

common=(--checkpoint "$gguf" --num-prompts "$prompts" --input-len "$in" --output-len "$out" --ignore-eos
	--percentiles 50,99 --output json)
# one runs setting $1 (a label) against both servers, the order set by $2.
one() {
	local label=$1 order=$2 seed=$((++setting))
	shift 2
	local names=(llama stride)
	[[ $order == 1 ]] && names=(stride llama)
	for name in "${names[@]}"; do
		local port=$lport
		[[ $name == stride ]] && port=$sport
		echo "== $label: $name" >&2
		"$infer" bench serve --base-url "http://127.0.0.1:$port/v1" "${common[@]}" --seed "$seed" --warmup 2 "$@" |
			sed "s|^{|{\"server\":\"$name\",\"setting\":\"$label\",|" >>"$dir/results.jsonl"
	done
}
: >"$dir/results.jsonl"
setting=0
i=$swap
for c in ${conc//,/ }; do
	one "concurrency $c" $((i++ % 2)) --request-rate inf --max-concurrency "$c"
done
for r in ${rates//,/ }; do
	one "poisson $r/s" $((i++ % 2)) --request-rate "$r" --burstiness 1
done

{
	echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "model: $gguf; ctx $ctx per sequence, $slots slots, $threads threads; $prompts prompts of $in tokens, $out output tokens"
	echo
}
python3 - "$dir/results.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| setting | server | ok/failed | output tok/s | TTFT p50 / p99 ms | TPOT p50 / p99 ms | ITL p50 / p99 ms |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    f = lambda k: "%.2f / %.2f" % (r["p50_%s_ms" % k], r["p99_%s_ms" % k])
    print("| %s | %s | %d/%d | %.1f | %s | %s | %s |" % (r["setting"], r["server"], r["completed"], r["failed"],
          r["output_throughput"], f("ttft"), f("tpot"), f("itl")))
EOF
echo
echo "results: $dir/results.jsonl" >&2
