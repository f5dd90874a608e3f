#!/usr/bin/env bash
# scripts/bench-serve-long-short.sh — does a long prompt stall the short
# streams decoding beside it? `infer serve`'s chunked prefill, measured by
# `infer bench serve`.
#
# Usage:
#   scripts/bench-serve-long-short.sh [options] GGUF
#   scripts/bench-serve-long-short.sh [options] -llama LLAMA_SERVER GGUF
#
# GGUF is a model whose context holds a long prompt and its output, e.g. a
# synthetic export with --synthetic.seq_len 4096. For each chunked-prefill
# budget (-budgets, infer serve's --max-batched-tokens) and each chunk
# rule (-stalls, its --max-prefill-stall; 0 = the token budget alone) the
# script starts infer serve (prefix sharing off, so repeated prompts are
# prefilled again) and runs two datasets, closed loop at -conc requests in
# flight:
#   short: -short prompts of -short-len tokens, each generating -out tokens;
#   mix:   the same, with -long prompts of -long-len tokens (generating 4)
#          placed among them (every tenth request).
# The two alternate, -reps times, and the settings take turns within each
# repetition (a row's budget reads "256 k2" for budget 256 with
# --max-prefill-stall 2). The table gives, per run, the short
# requests' ITL p50, p99 and max (from the per-request records of the
# JSON, split by input length) and the long prompts' TTFT; the goal is p99 ITL
# of the short streams in the mix within 2× of the short-only run.
#
# With -llama, llama.cpp's llama-server (a binary you built) runs the same
# datasets on the same GGUF after each budget's runs, once per repetition,
# with -np 16 -c 16·ctx (the 16 sequences infer serve is given), the same
# threads and its own defaults for batching (-b 2048 -ub 512: a prompt is
# prefilled in one llama_decode call, the running slots' tokens beside it);
# its rows have the budget "llama".
#
# Options (defaults in brackets):
#   -ctx N        context per sequence [4096]
#   -threads N    compute threads [1]
#   -budgets LIST --max-batched-tokens values [256,64]
#   -stalls LIST  --max-prefill-stall values [0]
#   -conc N       requests in flight [8]
#   -short N      short prompts [36]      -short-len N  their tokens [64]
#   -long N       long prompts [4]        -long-len N   their tokens [2000]
#   -out N        output tokens of a short request [128]
#   -reps N       repetitions [2]
#   -dir DIR      results [a new temporary directory]
#   -infer BIN    an infer binary [built from this checkout]
#   -llama BIN    also measure this llama-server [none]
set -euo pipefail
cd "$(dirname "$0")/.."

ctx=4096 threads=1 budgets=256,64 stalls=0 conc=8 short=36 shortlen=64 long=4 longlen=2000 out=128 reps=2 dir="" infer="" llama=""
while [[ $# -gt 0 && $1 == -* ]]; do
	case "$1" in
	-ctx) ctx=$2 ;; -threads) threads=$2 ;; -budgets) budgets=$2 ;; -stalls) stalls=$2 ;; -conc) conc=$2 ;;
	-short) short=$2 ;; -short-len) shortlen=$2 ;; -long) long=$2 ;; -long-len) longlen=$2 ;;
	-out) out=$2 ;; -reps) reps=$2 ;; -dir) dir=$2 ;; -infer) infer=$2 ;; -llama) llama=$2 ;;
	-h | --help) sed -n '2,46p' "$0"; exit 0 ;;
	*) echo "bench-serve-long-short: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
if [[ $# -ne 1 ]]; then
	echo "usage: scripts/bench-serve-long-short.sh [options] GGUF" >&2
	exit 2
fi
gguf=$1
[[ -f $gguf ]] || { echo "bench-serve-long-short: $gguf is not a file" >&2; exit 2; }
[[ -z $llama || -x $llama ]] || { echo "bench-serve-long-short: $llama is not an executable" >&2; exit 2; }
dir=${dir:-$(mktemp -d)}
mkdir -p "$dir"
if [[ -z $infer ]]; then
	infer=$dir/infer
	go build -o "$infer" ./cmd/infer
fi
# free_port prints a TCP port nobody listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
pid=""
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true' EXIT

# up waits for the server on $port to answer /health.
up() {
	for _ in $(seq 1 300); do
		curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "bench-serve-long-short: the server did not come up; see $dir/$1.log" >&2
	exit 1
}
# start_llama starts llama-server on a new $port (the old one may still be held by closing connections).
start_llama() {
	port=$(free_port)
	"$llama" -m "$gguf" --host 127.0.0.1 --port "$port" -c $((16 * ctx)) -np 16 -t "$threads" -tb "$threads" \
		>"$dir/llama-server.log" 2>&1 &
	pid=$!
	up llama-server
}
# run runs dataset $2, repetition $3, against the server on $port; its rows are labelled budget $1.
run() {
	local n
	n=$(wc -l <"$dir/$2.jsonl")
	echo "== budget $1, $2, rep $3" >&2
	"$infer" bench serve --base-url "http://127.0.0.1:$port/v1" --dataset "$dir/$2.jsonl" --num-prompts "$n" \
		--request-rate inf --max-concurrency "$conc" --ignore-eos --warmup 2 --output json |
		sed "s|^{|{\"budget\":\"$1\",\"dataset\":\"$2\",\"rep\":$3,|" >>"$dir/results.jsonl"
}

# start starts infer serve with budget $1 and --max-prefill-stall $2.
start() {
	"$infer" serve --checkpoint "$gguf" --port "$port" -c "$ctx" -t "$threads" --max-batch 16 \
		--num-blocks $((16 * ctx / 16)) --prefix-sharing=false --max-batched-tokens "$1" \
		--max-prefill-stall "$2" >"$dir/serve-$1-$2.log" 2>&1 &
	pid=$!
	up "serve-$1-$2"
}
cfgs=()
for b in ${budgets//,/ }; do
	for k in ${stalls//,/ }; do cfgs+=("$b:$k"); done
done

# The datasets: random words cut to the exact lengths by the server's
# /tokenize (binary search on the word count), seed 1.
start "${cfgs[0]%%:*}" "${cfgs[0]#*:}"
cur=${cfgs[0]}
python3 - "$port" "$dir" "$short" "$shortlen" "$long" "$longlen" "$out" <<'EOF'
import json, random, sys, urllib.request
port, d, ns, ls, nl, ll, out = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
def count(t):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", data=json.dumps({"prompt": t}).encode())
    return json.loads(urllib.request.urlopen(req).read())["count"]
words = "the a little girl boy dog cat sun tree happy big play park ball mom dad friend went saw said day".split()
rng = random.Random(1)
def make(n):
    ws = [rng.choice(words) for _ in range(n)]
    lo, hi = 0, n
    while lo < hi:
        m = (lo + hi + 1) // 2
        if count(" ".join(ws[:m])) <= n: lo = m
        else: hi = m - 1
    return " ".join(ws[:lo])
shorts = [{"prompt": make(ls), "output_len": out} for _ in range(ns)]
longs = [{"prompt": make(ll), "output_len": 4} for _ in range(nl)]
mix = list(shorts)
for j, l in enumerate(longs):  # every tenth request is long
    mix.insert(min(j * 10 + 5, len(mix)), l)
for name, rows in (("short", shorts), ("mix", mix)):
    open(f"{d}/{name}.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
EOF
: >"$dir/results.jsonl"
for rep in $(seq 1 "$reps"); do
	for c in "${cfgs[@]}"; do
		b=${c%%:*} k=${c#*:}
		if [[ $c != "$cur" ]]; then
			kill "$pid"; wait "$pid" 2>/dev/null || true
			port=$(free_port)
			start "$b" "$k"
			cur=$c
		fi
		label=$b
		[[ $k == 0 ]] || label="$b k$k"
		for ds in short mix; do run "$label" "$ds" "$rep"; done
	done
done
if [[ -n $llama ]]; then
	kill "$pid"; wait "$pid" 2>/dev/null || true
	start_llama
	for rep in $(seq 1 "$reps"); do
		for ds in short mix; do run llama "$ds" "$rep"; done
	done
fi

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "model: $gguf; $threads threads; $conc in flight; short: $short × $shortlen tokens → $out; long: $long × $longlen tokens"
echo
python3 - "$dir/results.jsonl" "$shortlen" "$longlen" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cut = (int(sys.argv[2]) + int(sys.argv[3])) / 2
def pct(xs, p):
    xs = sorted(xs)
    if not xs: return 0.0
    r = p / 100 * (len(xs) - 1); lo = int(r); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (r - lo)
base = {}
print("| budget | dataset | rep | ok/failed | short ITL p50 / p99 ms | p99 / short-only p99 | short ITL max ms | long TTFT p50 ms |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    sh = [q for q in r["requests"] if q["status"] == "ok" and q["input_len"] < cut]
    lg = [q["ttft_ms"] for q in r["requests"] if q["status"] == "ok" and q["input_len"] >= cut]
    itl = [x for q in sh for x in q["itl_ms"]]
    p99 = pct(itl, 99)
    if r["dataset"] == "short": base[(r["budget"], r["rep"])] = p99
    ratio = p99 / base[(r["budget"], r["rep"])] if r["dataset"] == "mix" and base.get((r["budget"], r["rep"])) else None
    print("| %s | %s | %d | %d/%d | %.2f / %.2f | %s | %.0f | %s |" % (r["budget"], r["dataset"], r["rep"], r["completed"], r["failed"],
          pct(itl, 50), p99, "%.2f×" % ratio if ratio else "", max(itl, default=0), "%.0f" % pct(lg, 50) if lg else ""))
EOF
echo "results: $dir/results.jsonl" >&2
