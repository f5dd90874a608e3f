#!/usr/bin/env bash
# bench-vs-llamacpp.sh: Stride's `infer bench` beside llama.cpp's
# llama-batched-bench and llama-bench on the same GGUF files, interleaved
# (Stride, llama.cpp, Stride, llama.cpp, ...) so that a shared machine's
# drift touches both alike. Nothing is downloaded and llama.cpp is not
# built: pass the bin directory of a llama.cpp you built by hand
# (llama-batched-bench and llama-bench targets) and the GGUF files. Only
# the infer binary is built from this tree, unless INFER names one.
#
# Usage:
#   scripts/bench-vs-llamacpp.sh LLAMA_BIN_DIR MODEL.gguf [MODEL.gguf...]
#
# Environment:
#   INFER    the infer binary (default: built into $OUT/infer from this tree)
#   OUT      directory for the raw logs (default: a new mktemp -d)
#   THREADS  thread count for both engines (default 2)
#   ROUNDS   interleaved rounds (default 2)
#   BATCHES  batch sizes (default 1,2,4,8,16)
#   PARTS    which comparisons: batched, single or both (default "batched single")
#
# batched: `infer bench --tests tg32 --batches $BATCHES --roofline` beside
#   `llama-batched-bench -npp 128 -ntg 32 -npl $BATCHES` (compare Stride's
#   total t/s with llama.cpp's S_TG column).
# single:  `infer bench --tests tg128 --roofline` beside
#   `llama-bench -p 0 -n 128`.
# A summary of the t/s columns is printed at the end; the full tables stay
# in $OUT. llama.cpp's threads spin at each graph node's barrier, so on a
# machine with more runnable jobs than cores its rates collapse (to a few
# t/s) far more than Stride's: compare on a quiet machine, or take the
# best of several rounds and say so (docs/performance.md, "Issue 26 side
# by side").
set -euo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
bindir=$1
shift
for exe in llama-batched-bench llama-bench; do
	if [ ! -x "$bindir/$exe" ]; then
		echo "bench-vs-llamacpp: $bindir/$exe is missing (build it: cmake --build build --target $exe)" >&2
		exit 2
	fi
done
for m in "$@"; do
	if [ ! -r "$m" ]; then
		echo "bench-vs-llamacpp: cannot read model $m" >&2
		exit 2
	fi
done

threads=${THREADS:-2}
rounds=${ROUNDS:-2}
batches=${BATCHES:-1,2,4,8,16}
parts=${PARTS:-batched single}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bindir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

infer=${INFER:-}
if [ -z "$infer" ]; then
	infer=$out/infer
	(cd "$(dirname "$0")/.." && go build -o "$infer" ./cmd/infer)
fi

echo "logs in $out; threads $threads, rounds $rounds"
lscpu | grep -E 'Model name|^CPU\(s\)|L3' || true

for r in $(seq 1 "$rounds"); do
	for m in "$@"; do
		b=$(basename "$m" .gguf)
		for p in $parts; do
			case $p in
			batched)
				echo "== round $r, $b, batched: stride"
				nice "$infer" bench --checkpoint "$m" --tests tg32 --batches "$batches" \
					--threads "$threads" --roofline --output markdown \
					>"$out/$b.batched.stride.$r.md" 2>"$out/$b.batched.stride.$r.err"
				echo "== round $r, $b, batched: llama.cpp"
				nice "$bindir/llama-batched-bench" -m "$m" -npp 128 -ntg 32 -npl "$batches" \
					-t "$threads" >"$out/$b.batched.llama.$r.txt" 2>&1
				;;
			single)
				echo "== round $r, $b, single: stride"
				nice "$infer" bench --checkpoint "$m" --tests tg128 --threads "$threads" \
					--roofline --output markdown \
					>"$out/$b.single.stride.$r.md" 2>"$out/$b.single.stride.$r.err"
				echo "== round $r, $b, single: llama.cpp"
				nice "$bindir/llama-bench" -m "$m" -p 0 -n 128 -t "$threads" \
					>"$out/$b.single.llama.$r.md" 2>&1
				;;
			*)
				echo "bench-vs-llamacpp: unknown part $p (batched|single)" >&2
				exit 2
				;;
			esac
		done
	done
done

# Summary: one line per run, the t/s of each batch size.
echo
echo "| model | part | engine | round | t/s per batch ($batches) | roofline |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
	for m in "$@"; do
		b=$(basename "$m" .gguf)
		for p in $parts; do
			f=$out/$b.$p.stride.$r.md
			[ -f "$f" ] && awk -F'|' -v b="$b" -v p="$p" -v r="$r" '
				$10 ~ /^ *[0-9]+ *$/ { split($11, t, " "); tps = tps sep t[1]; roof = roof sep $13; sep = ", " }
				END { gsub(/ +/, " ", roof); printf "| %s | %s | stride | %s | %s | %s |\n", b, p, r, tps, roof }' "$f"
			if [ "$p" = batched ]; then
				f=$out/$b.batched.llama.$r.txt
				# llama-batched-bench's table: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | ...
				[ -f "$f" ] && awk -F'|' -v b="$b" -v r="$r" '
					$2 ~ /^ *[0-9]+ *$/ && $4 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $9); tps = tps sep $9; sep = ", " }
					END { printf "| %s | batched | llama.cpp S_TG | %s | %s | |\n", b, r, tps }' "$f"
			else
				f=$out/$b.single.llama.$r.md
				[ -f "$f" ] && awk -F'|' -v b="$b" -v r="$r" '
					/tg[0-9]+/ { split($(NF-1), t, " "); printf "| %s | single | llama.cpp | %s | %s | |\n", b, r, t[1] }' "$f"
			fi
		done
	done
done
