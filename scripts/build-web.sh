#!/usr/bin/env bash
# Builds the layout explorer (docs/explorer.md) into web/dist/ or the
# folder given as $1: index.html, app.js, style.css, layout.wasm and the
# Go distribution's wasm_exec.js. Needs only the Go toolchain. The result
# is a static site with relative paths: open it with `infer explore`, or
# copy the folder to any static host (which must serve .wasm as
# application/wasm).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/web/dist}"
mkdir -p "$out"

# The evaluator: tensor + tensor/layoutexpr for js/wasm. tensor/kernels'
# assembly sits behind amd64/arm64 build tags, so this links the pure-Go
# kernels; layoutexpr's picture code (gonum/plot and its fonts) is left
# out by its build tag, since the page draws in the browser. -s drops the
# symbol table, -trimpath the build machine's paths.
(cd "$root" && GOOS=js GOARCH=wasm go build -trimpath -ldflags=-s -o "$out/layout.wasm.tmp" ./web/wasm)
mv "$out/layout.wasm.tmp" "$out/layout.wasm"

# wasm_exec.js must match the Go that built layout.wasm: copy it from
# that Go's GOROOT (lib/wasm since Go 1.24, misc/wasm before).
goroot="$(go env GOROOT)"
for f in "$goroot/lib/wasm/wasm_exec.js" "$goroot/misc/wasm/wasm_exec.js"; do
	if [ -f "$f" ]; then cp "$f" "$out/wasm_exec.js"; break; fi
done
[ -f "$out/wasm_exec.js" ] || { echo "build-web: no wasm_exec.js under $goroot" >&2; exit 1; }

cp "$root/web/index.html" "$root/web/app.js" "$root/web/style.css" "$out/"
# The marker tells infer explore that it may rebuild this folder: it never
# writes into one holding files it did not write (web/explore/guard.go).
echo "built by infer explore (scripts/build-web.sh); explore rebuilds only folders holding this file" >"$out/.stride-explore"
total=$(cat "$out"/index.html "$out"/app.js "$out"/style.css "$out"/wasm_exec.js "$out"/layout.wasm | wc -c)
gz=$(cat "$out"/index.html "$out"/app.js "$out"/style.css "$out"/wasm_exec.js "$out"/layout.wasm | gzip -9 | wc -c)
echo "built $out: $((total / 1024)) KiB ($((gz / 1024)) KiB gzipped), layout.wasm $(($(wc -c <"$out/layout.wasm") / 1024)) KiB"
