#!/bin/bash
# Measures what a newcomer's first `go build ./cmd/infer` costs (the
# README's install section): fresh GOPATH, module cache and build cache in
# a temporary folder, so the module proxy serves everything the build
# needs. Prints seconds, modules, bytes and each module's zip size.
# Usage: scripts/first-build-cost.sh (from the repository root).
set -eu
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
export GOPATH=$T/gopath GOMODCACHE=$T/modcache GOCACHE=$T/gocache GOFLAGS=-modcacherw
s=$(date +%s.%N)
go build -o "$T/infer" ./cmd/infer
e=$(date +%s.%N)
echo "first build: $(echo "$e - $s" | bc) s"
echo "modules: $(find "$GOMODCACHE/cache/download" -name '*.zip' | wc -l)"
echo "module zips: $(find "$GOMODCACHE/cache/download" -name '*.zip' -printf '%s\n' | awk '{s+=$1} END {print s}') bytes"
echo "module cache: $(du -sb "$GOMODCACHE" | cut -f1) bytes; build cache: $(du -sb "$GOCACHE" | cut -f1) bytes"
echo "packages: $(go list -deps ./cmd/infer | wc -l)"
find "$GOMODCACHE/cache/download" -name '*.zip' -printf '%s %p\n' | sort -n | sed "s|$GOMODCACHE/cache/download/||"
