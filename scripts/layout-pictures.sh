#!/bin/sh
# Regenerates the layout pictures in README.md and docs/layout.md with
# `infer layout --draw` (gonum/plot's vg: PNG through vgimg).
set -eu
cd "$(dirname "$0")/.."
go build -o /tmp/infer-pictures ./cmd/infer
draw() { out=$1; shift; /tmp/infer-pictures layout --draw "$out" "$@" >/dev/null; }
draw docs/layout-qkv-split.png 'qkv = empty(1, 4, 3*4); q, k, v = qkv.split(4, -1); h = q.view(1, 4, 2, 2).transpose(1, 2)'
draw docs/layout-expand-repeat.png 'b = arange(3); e = b.expand(2, 3); r = b.repeat(2, 1)'
draw docs/layout-unfold.png 'h = arange(6, dtype=torch.int32); w = h.unfold(0, 3, 1)'
draw docs/layout-transpose-copy.png 'x = arange(6).view(2, 3); y = x.t().contiguous()'
draw docs/layout-slice-holes.png 'x = arange(12).view(3, 4); y = x[1:, ::2]'
