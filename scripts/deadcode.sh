#!/usr/bin/env bash
# Unused-code check (issue 24): fails when a function of this module is
# reached by no program, unless scripts/deadcode-allow.txt names it as
# deliberate public API. Also fails on allow-list entries that are no
# longer dead, so the list stays short and true.
#
# Two build configurations are analysed, since a function is live when any
# program reaches it: the commands (./cmd/...) on this machine's GOOS, and
# the layout explorer's evaluator (./web/wasm/...) under GOOS=js
# GOARCH=wasm, which alone reaches tensor/layoutexpr's SVG, GridText and
# JSON. A function counts as dead when every configuration that compiles
# its package reports it. The -tags cuda build is not analysed (its cgo
# needs the CUDA toolkit).
#
# Entries match by package path (relative to the module) and function
# name, never by line: "kvcache.Cache.Fork", "tensor/layoutexpr.SVG".
#
# Usage: scripts/deadcode.sh          check (CI)
#        scripts/deadcode.sh -list    print every dead function as an
#                                     allow-list line (keeping the reasons
#                                     already on the list), to regenerate it
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C # sort and join must agree on the order

allow=scripts/deadcode-allow.txt
version=v0.52.0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The tool is built for this machine even when the analysis targets wasm.
GOOS= GOARCH= GOBIN="$work" go install "golang.org/x/tools/cmd/deadcode@$version"

module=$(go list -m)
# One line per dead function: "<pkg>.<func>\t<file>:<line>".
template='{{range .Funcs}}{{$.Path}}.{{.Name}}{{"\t"}}{{.Position.File}}:{{.Position.Line}}{{"\n"}}{{end}}'

analyse() { # name, env..., -- packages...
	local name=$1; shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" "$work/deadcode" -f "$template" "$@" >"$work/$name.dead"
	env "${envs[@]}" go list -deps "$@" | awk -v m="$module" '$0 == m || index($0, m "/") == 1' >"$work/$name.pkgs"
}
analyse native -- ./cmd/...
analyse wasm GOOS=js GOARCH=wasm -- ./web/wasm/...

# dead: reported by every configuration whose program contains the package.
awk -F'\t' -v mod="$module/" -v root="$PWD/" '
	function trim(s, prefix) { return index(s, prefix) == 1 ? substr(s, length(prefix) + 1) : s }
	role == "pkgs" { has[cfg, $1] = 1; next }
	{
		pkg = $1; sub(/\.[^\/]*$/, "", pkg) # the package path ends at the first dot after the last slash
		dead[cfg, $1] = 1; pkgOf[$1] = pkg; pos[$1] = $2
	}
	END {
		for (f in pkgOf) {
			ok = 1
			for (c = 1; c <= cfg; c++)
				if (has[c, pkgOf[f]] && !dead[c, f]) ok = 0
			if (!ok) continue
			print trim(f, mod) "\t" trim(pos[f], root)
		}
	}' cfg=1 role=pkgs "$work/native.pkgs" role=dead "$work/native.dead" \
	cfg=2 role=pkgs "$work/wasm.pkgs" role=dead "$work/wasm.dead" |
	sort >"$work/dead"

if [ "${1:-}" = "-list" ]; then
	# Keep the reason of an entry already on the list.
	awk 'NR == FNR { if ($1 !~ /^#/ && NF) line[$1] = $0; next }
		{ print ($1 in line) ? line[$1] : $1 "  # why: ..." }' "$allow" FS='\t' "$work/dead"
	exit 0
fi

# The allow-list: "pkg.Func  # why", blank lines and whole-line comments ignored.
sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' "$allow" | awk 'NF' | sort -u >"$work/allowed"

new=$(join -t $'\t' -v 1 "$work/dead" "$work/allowed" || true)
stale=$(cut -f1 "$work/dead" | join -v 2 - "$work/allowed" || true)
status=0
if [ -n "$new" ]; then
	echo "deadcode: functions no program reaches (./cmd/..., and ./web/wasm/... for js/wasm):"
	echo "$new" | awk -F'\t' '{ printf "  %s: %s\n", $2, $1 }'
	echo "Remove them (with the tests that only test them), or, for deliberate public API,"
	echo "add these lines to $allow, saying why after the '#':"
	echo "$new" | cut -f1 | sed 's/$/  # why: .../'
	status=1
fi
if [ -n "$stale" ]; then
	echo "deadcode: $allow names functions that are no longer dead (now used, or gone); delete these lines:"
	echo "$stale"
	status=1
fi
if [ "$status" = 0 ]; then
	echo "deadcode: every unreached function is on $allow ($(wc -l <"$work/allowed") entries)"
fi
exit "$status"
