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

The types without a shared fixture (Q4_1, Q5_0, Q5_1, Q5_K) come from
stock llama-quantize (same commit) run on synthetic-k256-f32.gguf into a
temporary directory: `llama-quantize IN OUT TYPE` for Q4_1, Q5_0, Q5_1
and Q5_K_M, and `llama-quantize --pure IN OUT TYPE` for Q4_1, Q5_0 and
Q5_1 (every matrix of the one type, which Stride's Go quantizers must
reproduce byte for byte). For those files it writes a second JSON
(--quant-out): each file's command, every tensor's type and sha256, and
llama-perplexity's last line on the sampled text (-c 128 -b 128 -t 2, the
command of ../shared/models/README.md's figures), plus gguf-py's
quantize() of a few vectors for the three simple types.

llama.cpp must be built without AMX: on a CPU with AMX-INT8, -DGGML_NATIVE=ON
enables ggml's AMX buffer type, whose Q4_0/Q4_1/Q8_0/K-quant matmuls give
other perplexities (Q4_1's 2% off the same weights dequantized to F32),
and the README's figures are not reproduced. A build with
-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON (AVX-512
on or off) reproduces them.

Usage, from the repository root (CI does not run this; the Go tests replay
its output, tensor/kernels/testdata/ggml_oracle.json):

    git --git-dir=/work/.mirror/ggerganov+llama.cpp/repo archive HEAD gguf-py | tar x -C /tmp/lcpp
    /usr/bin/python3 scripts/ggml-oracle/record.py --gguf-py /tmp/lcpp/gguf-py \
        --llama-bin /tmp/lcpp/build/bin --shared ../shared \
        --out tensor/kernels/testdata/ggml_oracle.json \
        --quant-out model/gguf/testdata/llama_quantize.json
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
ap.add_argument("--shared", default="../shared", help="the shared fixtures directory")
ap.add_argument("--out", required=True)
ap.add_argument("--llama-bin", required=True, help="llama.cpp's build/bin (llama-quantize, llama-perplexity), built without AMX")
ap.add_argument("--quant-out", required=True)
args = ap.parse_args()
sys.path.insert(0, args.gguf_py)

import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

models = os.path.join(args.shared, "models", "gguf")
f32 = os.path.join(models, "synthetic-k256-f32.gguf")
text = os.path.join(args.shared, "models", "golden", "stories260K.sampled-text.txt")
tmp = tempfile.mkdtemp(prefix="ggml-oracle-")

# The quantized files there is no shared fixture of: (name, extra flags, type).
made = [("stock-Q4_1", [], "Q4_1"), ("stock-Q5_0", [], "Q5_0"), ("stock-Q5_1", [], "Q5_1"),
        ("stock-Q5_K_M", [], "Q5_K_M"),
        ("pure-Q4_1", ["--pure"], "Q4_1"), ("pure-Q5_0", ["--pure"], "Q5_0"), ("pure-Q5_1", ["--pure"], "Q5_1")]
quant_files = []
for name, flags, ftype in made:
    out = os.path.join(tmp, name + ".gguf")
    cmd = [os.path.join(args.llama_bin, "llama-quantize")] + flags + [f32, out, ftype, "2"]
    subprocess.run(cmd, check=True, capture_output=True)
    ppl = subprocess.run([os.path.join(args.llama_bin, "llama-perplexity"), "-m", out, "-f", text,
                          "-c", "128", "-b", "128", "-t", "2"], check=True, capture_output=True, text=True)
    final = re.findall(r"Final estimate: PPL = [0-9.]+ \+/- [0-9.]+", ppl.stdout + ppl.stderr)
    assert len(final) == 1, final
    if "AMX model buffer" in ppl.stderr:
        sys.exit("llama-perplexity runs on AMX: build llama.cpp with -DGGML_NATIVE=OFF (see the docstring)")
    r = gguf.GGUFReader(out)
    quant_files.append({
        "name": name, "command": "llama-quantize " + " ".join(flags + ["synthetic-k256-f32.gguf", name + ".gguf", ftype, "2"]),
        "perplexity": final[0],
        "tensors": [{"name": t.name, "type": t.tensor_type.name,
                     "sha256": hashlib.sha256(np.asarray(t.data).tobytes()).hexdigest()} for t in r.tensors],
    })

# (file, ggml type): the first tensor of that type with the widest rows.
wanted = [
    ("synthetic-k256-q8_0.gguf", Q.Q8_0),
    ("synthetic-k256-q4_0.gguf", Q.Q4_0),
    ("synthetic-k256-q4_k_m.gguf", Q.Q4_K),
    ("synthetic-k256-q4_k_m.gguf", Q.Q6_K),
    ("synthetic-k256-q6_k.gguf", Q.Q6_K),
    ("stories260K-q8_0.gguf", Q.F16),
    (os.path.join(tmp, "stock-Q4_1.gguf"), Q.Q4_1),
    (os.path.join(tmp, "stock-Q5_0.gguf"), Q.Q5_0),
    (os.path.join(tmp, "stock-Q5_1.gguf"), Q.Q5_1),
    (os.path.join(tmp, "stock-Q5_K_M.gguf"), Q.Q5_K),
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
        "file": os.path.basename(fname), "tensor": t.name, "type": qt.name,
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

# gguf-py's quantize() (bit-exact with quantize_row_*_ref) of a few
# weight-like vectors, a constant block and a block of one sign included.
wvecs = [
    rng.standard_normal(256).astype(np.float32) * 0.02,
    np.concatenate([np.full(32, 0.25), np.abs(rng.standard_normal(32)), -np.abs(rng.standard_normal(32))]).astype(np.float32),
]
block_quants = []
for qt in (Q.Q4_1, Q.Q5_0, Q.Q5_1):
    for v in wvecs:
        block_quants.append({"type": qt.name, "x": v.astype("<f4").tobytes().hex(),
                             "blocks": quantize(v.reshape(1, -1), qt).tobytes().hex()})
json.dump({"generator": "scripts/ggml-oracle/record.py (llama.cpp c392e50 llama-quantize and llama-perplexity, gguf-py, numpy " + np.__version__ + ")",
           "source": "synthetic-k256-f32.gguf", "files": quant_files, "quantize": block_quants},
          open(args.quant_out, "w"), indent=1)
print("wrote", args.quant_out, os.path.getsize(args.quant_out), "bytes")
