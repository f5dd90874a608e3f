#!/usr/bin/env bash
# scripts/bench-ab.sh — compare two builds of a package's benchmarks on a
# shared, noisy machine, and print a Markdown table of after/before ratios.
#
# Usage:
#   scripts/bench-ab.sh [-rounds N] [-callgrind] BEFORE.test AFTER.test DIR BENCH...
#
# BEFORE.test and AFTER.test are `go test -c` binaries of the same package
# at two commits; DIR is the package directory they run in; each BENCH is a
# full benchmark name as printed with -cpu 1, e.g.
# BenchmarkDecode/gqa-H12-KVH4-D64/ctx=1024/fused. A name may end in
# @N1,N2 to set the callgrind iteration counts (default @10,60).
#
# Wall clock (always): each of -rounds rounds (default 5) runs every
# benchmark on both binaries back to back, the order alternating between
# rounds, with -benchtime 100ms -cpu 1. The table gives the best and the
# median ns/op of each binary's runs and their after/before ratios: on a
# host other jobs share, the best run is the least disturbed one.
#
# -callgrind adds a column that does not depend on the host's load: the
# instructions per iteration, (Ir(N2) − Ir(N1)) / (N2 − N1), counted by
# valgrind --tool=callgrind for -benchtime N1x and N2x (the difference
# cancels setup and warm-up). Valgrind's virtual CPU has no AVX-512, so the
# code under it runs the AVX2 (or portable) kernels. Go's asynchronous
# preemption signals upset callgrind, hence GODEBUG=asyncpreemptoff=1.
set -euo pipefail

rounds=5
callgrind=0
while [[ $# -gt 0 && $1 == -* ]]; do
	case "$1" in
	-rounds) rounds=$2; shift 2 ;;
	-callgrind) callgrind=1; shift ;;
	-h | --help) sed -n '2,26p' "$0"; exit 0 ;;
	*) echo "bench-ab: unknown option $1" >&2; exit 2 ;;
	esac
done
if [[ $# -lt 4 ]]; then
	echo "usage: scripts/bench-ab.sh [-rounds N] [-callgrind] BEFORE.test AFTER.test DIR BENCH..." >&2
	exit 2
fi
before=$(realpath "$1") after=$(realpath "$2") dir=$3
shift 3
cd "$dir"

# pattern turns a benchmark name into -test.bench's per-level anchored regexp.
pattern() {
	local IFS=/ out="" part
	for part in $1; do
		part=$(printf '%s' "$part" | sed 's/[][\.*^$+?(){}|-]/\\&/g')
		out+="${out:+/}^${part}\$"
	done
	printf '%s' "$out"
}

# nsop runs one benchmark once and prints its ns/op.
nsop() {
	"$1" -test.run '^$' -test.bench "$(pattern "$2")" -test.benchtime 100ms -test.cpu 1 |
		awk '/ ns\/op/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") { print $i; exit } }'
}

# irs prints callgrind's instruction count for N iterations of a benchmark.
irs() {
	local out
	out=$(mktemp)
	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$1" -test.run '^$' -test.bench "$(pattern "$2")" -test.benchtime "${3}x" -test.cpu 1 2>&1 >/dev/null |
		awk '/Collected :/ { print $NF }'
	rm -f "$out"
}

declare -A times
for ((r = 0; r < rounds; r++)); do
	for spec in "$@"; do
		name=${spec%@*}
		order="before after"
		((r % 2)) && order="after before"
		for b in $order; do
			bin=$before
			[[ $b == after ]] && bin=$after
			times[$name,$b]+="$(nsop "$bin" "$name") "
		done
	done
done

# stat prints the minimum and the median of its arguments.
stat() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%s %s", v[1], m }'; }

head="| benchmark | before µs (best / median) | after µs (best / median) | after/before best | after/before median |"
rule="|---|---:|---:|---:|---:|"
if ((callgrind)); then
	head+=" instructions/op before | after/before instructions |"
	rule+="---:|---:|"
fi
echo "$head"
echo "$rule"
for spec in "$@"; do
	name=${spec%@*}
	counts=10,60
	[[ $spec == *@* ]] && counts=${spec##*@}
	read -r bmin bmed <<<"$(stat ${times[$name,before]})"
	read -r amin amed <<<"$(stat ${times[$name,after]})"
	row=$(awk -v n="${name#Benchmark}" -v bm="$bmin" -v bd="$bmed" -v am="$amin" -v ad="$amed" \
		'BEGIN { printf "| %s | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f |", n, bm/1e3, bd/1e3, am/1e3, ad/1e3, am/bm, ad/bd }')
	if ((callgrind)); then
		n1=${counts%,*} n2=${counts#*,}
		b1=$(irs "$before" "$name" "$n1") b2=$(irs "$before" "$name" "$n2")
		a1=$(irs "$after" "$name" "$n1") a2=$(irs "$after" "$name" "$n2")
		row+=$(awk -v b1="$b1" -v b2="$b2" -v a1="$a1" -v a2="$a2" -v n1="$n1" -v n2="$n2" \
			'BEGIN { b = (b2-b1)/(n2-n1); a = (a2-a1)/(n2-n1); printf " %.0f | %.3f |", b, a/b }')
	fi
	echo "$row"
done
