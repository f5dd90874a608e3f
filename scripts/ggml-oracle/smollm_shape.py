#!/usr/bin/python3
"""Make a random-weight model of SmolLM2-135M's shape and record llama.cpp on it.

SmolLM2-135M-Instruct (the model the README suggests downloading) is a
llama with dim 576, hidden 1536, 30 layers, 9 heads, 3 KV heads (head_dim
64), a tied classifier (no output.weight), rope.freq_base 100000 and a
49152-token byte-level BPE vocabulary (tokenizer.ggml.model gpt2,
tokenizer.ggml.pre smollm). 576 is not a multiple of 256, so
llama-quantize's Q4_K_M falls back to Q5_0 for Q4_K and to Q8_0 for Q6_K
on every matrix whose rows are 576 long. This script makes a file with
all of those traits without the download:

1. `infer export` (Stride) writes the synthetic model of that shape as an
   F32 GGUF, with the tokenizer of llama.cpp's ggml-vocab-starcoder.gguf
   (49152 tokens, gpt2 model, merges; copied as it is).
2. llama.cpp's own gguf-py rewrites it the way a SmolLM2 GGUF is: without
   output.weight (Stride's synthetic classifier is the embedding, so the
   function is unchanged), with llama.rope.freq_base 100000 and
   tokenizer.ggml.pre smollm. export writes neither trait itself.
3. llama-quantize makes Q8_0 and Q4_K_M from it; the tensor type mix of
   each is printed.
4. llama-perplexity (-c 128 -b 128 -t 2, the sampled text of
   ../shared/models/golden) and llama-cli's greedy continuation of a short
   prompt (--temp 0) are recorded for F32, Q8_0 and Q4_K_M.

With --stride INFER (a built cmd/infer) it also runs `infer perplexity`
and `infer generate --temperature 0` on the same files and prints both
sides. The files stay in --work; none of them is committed.

llama.cpp (commit c392e50) must be the build without AMX (see record.py):
its perplexities are ggml's x86 kernels'. Run it with Debian's numpy
(apt-get install -y python3-numpy python3-sentencepiece):

    go build -o /tmp/infer ./cmd/infer
    /usr/bin/python3 scripts/ggml-oracle/smollm_shape.py \\
        --gguf-py /work/llama.cpp/gguf-py --llama-bin /work/llama.cpp/build-noamx/bin \\
        --shared ../shared --work /tmp/smollm-shape --stride /tmp/infer
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
ap.add_argument("--llama-bin", required=True, help="llama.cpp's build/bin, built without AMX")
ap.add_argument("--shared", default="../shared", help="the shared fixtures directory")
ap.add_argument("--work", required=True, help="directory for the GGUF files")
ap.add_argument("--layers", type=int, default=30, help="block count (SmolLM2-135M: 30)")
ap.add_argument("--seed", type=int, default=1, help="synthetic model seed")
ap.add_argument("--prompt", default="Once upon a time")
ap.add_argument("--stride", help="a built cmd/infer binary: run Stride on the same files too")
args = ap.parse_args()
sys.path.insert(0, args.gguf_py)

import gguf  # noqa: E402

os.makedirs(args.work, exist_ok=True)
vocab = os.path.join(args.shared, "tokenizers", "llama.cpp-vocab", "ggml-vocab-starcoder.gguf")
text = os.path.join(args.shared, "models", "golden", "stories260K.sampled-text.txt")
exported = os.path.join(args.work, "export-f32.gguf")
files = {t: os.path.join(args.work, "smollm-shape-%s.gguf" % t.lower()) for t in ("F32", "Q8_0", "Q4_K_M")}
bin_ = lambda name: os.path.join(args.llama_bin, name)  # noqa: E731


def run(cmd, **kw):
    """Runs cmd, failing loudly; returns its stdout (a random model's text
    can end inside a UTF-8 sequence: such bytes come back as \\xNN)."""
    print("$ " + " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, capture_output=True, encoding="utf-8", errors="backslashreplace",
                          **kw).stdout


# 1. Stride writes the shape (the synthetic model's classifier is shared).
export = ["go", "run", "./cmd/infer", "export", "--synthetic.dim", "576", "--synthetic.hidden_dim", "1536",
          "--synthetic.n_layers", str(args.layers), "--synthetic.n_heads", "9", "--synthetic.n_kv_heads", "3",
          "--synthetic.vocab_size", "49152", "--synthetic.seq_len", "2048", "--synthetic.seed", str(args.seed),
          "--tokenizer", vocab, "--format", "gguf", "--type", "f32", "--out", exported]
run(export)


def field_value(f):
    """A reader field's value as GGUFWriter.add_key_value takes it."""
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [v for i in f.data for v in f.parts[i].tolist()]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[-1]).decode("utf-8")
    return f.parts[-1][0]


# 2. gguf-py gives it SmolLM2's tied classifier, rope base and pre-tokenizer.
reader = gguf.GGUFReader(exported)
writer = gguf.GGUFWriter(files["F32"], "llama")
new = {"general.name": "SmolLM2-135M-shape", "llama.rope.freq_base": 100000.0, "tokenizer.ggml.pre": "smollm"}
for f in reader.fields.values():
    if f.name.startswith("GGUF.") or f.name == "general.architecture" or f.name in new:
        continue
    writer.add_key_value(f.name, field_value(f), f.types[0])
writer.add_string("general.name", new["general.name"])
writer.add_float32("llama.rope.freq_base", new["llama.rope.freq_base"])
writer.add_string("tokenizer.ggml.pre", new["tokenizer.ggml.pre"])
kept = [t for t in reader.tensors if t.name != "output.weight"]
for t in kept:
    writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_ti_data_to_file()
for t in kept:
    writer.write_tensor_data(t.data)
writer.close()
os.remove(exported)

# 3. llama-quantize, and the type mix it chose.
record = {"export": " ".join(export), "layers": args.layers, "files": {}}
for typ in ("Q8_0", "Q4_K_M"):
    cmd = [bin_("llama-quantize"), files["F32"], files[typ], typ, "2"]
    run(cmd)
    record["files"][typ] = {"quantize": " ".join(cmd)}
for typ, path in files.items():
    mix = collections.Counter()
    by_name = collections.defaultdict(set)
    for t in gguf.GGUFReader(path).tensors:
        mix[t.tensor_type.name] += 1
        by_name[re.sub(r"^blk\.\d+\.", "blk.N.", t.name)].add(t.tensor_type.name)
    entry = record["files"].setdefault(typ, {})
    entry["types"] = dict(sorted(mix.items()))
    entry["by_name"] = {k: sorted(v) for k, v in sorted(by_name.items())}
    entry["bytes"] = os.path.getsize(path)


def last_ppl(out):
    """The estimate line of llama-perplexity's (or infer perplexity's) output."""
    m = re.findall(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
    return m[-1] if m else None


# 4. llama-perplexity and llama-cli greedy, then Stride on the same files.
for typ, path in files.items():
    e = record["files"][typ]
    cmd = [bin_("llama-perplexity"), "-m", path, "-f", text, "-c", "128", "-b", "128", "-t", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    e["llama_perplexity"] = {"cmd": " ".join(cmd), "ppl": last_ppl(p.stdout + p.stderr),
                             "chunks": re.findall(r"perplexity over (\d+) chunks", p.stderr)}
    cmd = [bin_("llama-cli"), "-m", path, "-no-cnv", "-p", args.prompt, "--temp", "0", "-n", "32",
           "-c", "512", "-t", "2", "--seed", "1"]
    e["llama_cli"] = {"cmd": " ".join(cmd), "text": run(cmd, stdin=subprocess.DEVNULL)}
    if not args.stride:
        continue
    cmd = [args.stride, "perplexity", "-m", path, "-f", text, "--ctx", "128", "-t", "2"]
    e["infer_perplexity"] = {"cmd": " ".join(cmd), "out": run(cmd).strip().splitlines()[-1]}
    cmd = [args.stride, "generate", "-m", path, "--temperature", "0", "-n", "32", "-t", "2", args.prompt]
    e["infer_generate"] = {"cmd": " ".join(cmd), "text": run(cmd)}

json.dump(record, sys.stdout, indent=1, ensure_ascii=False)
print()
