#!/usr/bin/python3
"""Record ggml's own dequantization and Q8_0 quantization as test vectors.

The oracle is gguf-py's quants.py from the llama.cpp snapshot (commit
c392e50), which is written to be bit-exact with ggml-quants.c's reference
code, run with Debian's numpy (apt-get install -y python3-numpy
python3-sentencepiece; the package's __init__ imports sentencepiece).

For each ggml type it reads two whole rows of one real tensor from the
shared GGUF fixtures (llama-quantize's output), and writes their raw block
bytes and gguf-py's dequantized float32 values (as little-endian float32 bytes, so the Go
test compares exactly). It also records gguf.quants.quantize(Q8_0) of a
few activation-like vectors, ties and a zero block included, and the BF16
and F16 rounding of a few hundred values.

Usage, from the repository root (CI does not run this; the Go tests replay
its output, tensor/kernels/testdata/ggml_oracle.json):

    git --git-dir=/work/.mirror/ggerganov+llama.cpp/repo archive HEAD gguf-py | tar x -C /tmp/lcpp
    /usr/bin/python3 scripts/ggml-oracle/record.py --gguf-py /tmp/lcpp/gguf-py \
        --shared ../shared --out tensor/kernels/testdata/ggml_oracle.json
"""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
ap.add_argument("--shared", default="../shared", help="the shared fixtures directory")
ap.add_argument("--out", required=True)
args = ap.parse_args()
sys.path.insert(0, args.gguf_py)

import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

models = os.path.join(args.shared, "models", "gguf")

# (file, ggml type): the first tensor of that type with the widest rows.
wanted = [
    ("synthetic-k256-q8_0.gguf", Q.Q8_0),
    ("synthetic-k256-q4_0.gguf", Q.Q4_0),
    ("synthetic-k256-q4_k_m.gguf", Q.Q4_K),
    ("synthetic-k256-q4_k_m.gguf", Q.Q6_K),
    ("synthetic-k256-q6_k.gguf", Q.Q6_K),
    ("stories260K-q8_0.gguf", Q.F16),
]
ROWS = (1, 3)  # rows [1, 3) of the tensor

records = []
for fname, qt in wanted:
    r = gguf.GGUFReader(os.path.join(models, fname))
    cands = [t for t in r.tensors if t.tensor_type == qt and len(t.shape) == 2]
    t = max(cands, key=lambda t: int(t.shape[0]))  # shape[0] is ne0, the row length
    cols = int(t.shape[0])
    raw = np.asarray(t.data)  # uint8 rows of blocks (F16: float16 elements)
    raw = raw.view(np.uint8).reshape(int(t.shape[1]), -1)
    rows = raw[ROWS[0]:ROWS[1]]
    vals = dequantize(rows, qt).astype(np.float32).reshape(-1)
    assert vals.size == (ROWS[1] - ROWS[0]) * cols
    records.append({
        "file": fname, "tensor": t.name, "type": qt.name,
        "rows": ROWS[1] - ROWS[0], "cols": cols, "first_row": ROWS[0],
        "raw": rows.tobytes().hex(),
        "values": vals.astype("<f4").tobytes().hex(),
    })

# Q8_0 quantization (gguf-py: bit-exact with quantize_row_q8_0_ref).
rng = np.random.default_rng(13)
acts = [
    rng.standard_normal(256).astype(np.float32),
    (rng.standard_normal(64) * 1e-3).astype(np.float32),
    np.zeros(32, dtype=np.float32),
    # amax 127 makes id exactly 1: the halves are ties the reference
    # rounds away from zero and ggml's x86 path rounds to even.
    np.array([127, 0.5, 1.5, -2.5, -0.5, 3.5, 126.5, -127] + [0.25] * 24, dtype=np.float32),
]
quants = []
for a in acts:
    q = quantize(a.reshape(1, -1), Q.Q8_0)
    quants.append({"x": a.astype("<f4").tobytes().hex(), "blocks": q.tobytes().hex()})

# BF16 (gguf-py: "same as ggml_compute_fp32_to_bf16") and F16 (numpy's
# float16 cast, as gguf-py's F16 writer does) rounding of activation-like
# values with ties, subnormals, overflow, NaN and Inf, and the dequantized
# bf16 (the raw bytes read back through a BF16 tensor).
halfx = np.concatenate([
    rng.standard_normal(200).astype(np.float32),
    (rng.standard_normal(40) * 1e-6).astype(np.float32),
    np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-11, 1 + 3 * 2**-11, 65504, 65520, 70000, -1e-8, 6e-8,
              np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=np.float32),
])
bf = quantize(halfx.reshape(1, -1), Q.BF16)
halves = {"x": halfx.astype("<f4").tobytes().hex(),
          "bf16": bf.tobytes().hex(),
          "bf16_values": dequantize(bf, Q.BF16).astype("<f4").tobytes().hex(),
          "f16": halfx.astype(np.float16).astype("<f2").tobytes().hex()}

json.dump({"generator": "scripts/ggml-oracle/record.py (gguf-py quants.py, llama.cpp c392e50, numpy " + np.__version__ + ")",
           "dequant": records, "quantize_q8_0": quants, "halves": halves},
          open(args.out, "w"), indent=0)
print("wrote", args.out, os.path.getsize(args.out), "bytes")
