#!/usr/bin/python3
"""Record PyTorch's layouts for random `infer layout` programs.

Run with Debian's python3-torch (1.13):

    /usr/bin/python3 scripts/torch-oracle/gen.py | gzip -n -9 > tensor/layoutexpr/testdata/torch-oracle.jsonl.gz

Each output line is one program: {"src": ..., "rows": [...]}, with one row
per tensor-producing step, in the order `infer layout` prints them. A row
holds what PyTorch says: ok or error, dtype, shape, strides, storage offset,
is_contiguous(), is_contiguous(memory_format=torch.channels_last) for 4-d
tensors, whether the storage is shared with an earlier step (and which
step created it), and the bytes a copy costs (numel * itemsize when a
non-constructor step made a new storage). The first line is a header
naming the PyTorch version and the seed.

The programs are random but seeded, so a run is reproducible for a given
PyTorch. Programs whose failure is a missing CPU kernel ("not implemented
for 'Half'") are dropped: kernel availability is not a layout rule.
Never edit the output by hand; regenerate it.
"""

import json
import random
import sys
import warnings

import torch

warnings.filterwarnings("ignore")

SEED = 15
N_CHAINS = 3000
N_PROGRAMS = 1200
N_TARGETED = 1500

DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64",
         "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool"}


# aten::slice has no Tensor method; `infer layout` keeps .slice(dim, start, end, step).
def _slice(self, dim=0, start=None, end=None, step=1):
    return torch.ops.aten.slice(self, dim, start, end, step)


torch.Tensor.slice = _slice

ENV = {"torch": torch, "empty": torch.empty, "zeros": torch.zeros, "ones": torch.ones,
       "arange": torch.arange, "empty_strided": torch.empty_strided}
# `infer layout` also accepts the short dtype names.
for _long, _short in SHORT.items():
    ENV[_short] = getattr(torch, _long)
ENV["bool"] = bool


def sid(t):
    return t.storage()._cdata


class Recorder:
    def __init__(self):
        self.rows = []
        self.keep = []
        self.stor = {}  # storage cdata -> step that created it
        self.src = ""

    def row(self, op, stmt, fn, ctor=False, inputs=()):
        step = len(self.rows) + 1
        try:
            t = fn()
        except Exception as e:  # PyTorch's error ends the program
            msg = str(e).split("\n")[0]
            self.rows.append({"op": op, "stmt": stmt, "ok": False, "error": msg})
            raise Stop(msg)
        self.keep.append(t)
        r = {"op": op, "stmt": stmt, "ok": True, "dtype": str(t.dtype).replace("torch.", ""),
             "shape": list(t.shape), "strides": list(t.stride()), "offset": t.storage_offset(),
             "contiguous": t.is_contiguous()}
        if t.dim() == 4:
            r["channels_last"] = t.is_contiguous(memory_format=torch.channels_last)
        s = sid(t)
        if s in self.stor:
            r["shared"], r["storage_step"], r["copied_bytes"] = True, self.stor[s], 0
        else:
            self.stor[s] = step
            r["shared"], r["storage_step"] = False, step
            r["copied_bytes"] = 0 if ctor else t.numel() * t.element_size()
        self.rows.append(r)
        return t


class Stop(Exception):
    pass


def rand_shape(rng, ndim=None):
    if ndim is None:
        ndim = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4, 4])
    return [rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6]) if rng.random() < 0.15 else rng.choice([1, 2, 2, 3, 4, 5, 6])
            for _ in range(ndim)]


def fmt_args(*a, **kw):
    parts = [str(x) if not isinstance(x, (list, tuple)) else "(" + ", ".join(map(str, x)) + ("," if len(x) == 1 else "") + ")" for x in a]
    parts += ["%s=%s" % (k, v) for k, v in kw.items()]
    return ", ".join(parts)


def ctor(rng):
    kind = rng.random()
    dt = rng.choice(DTYPES)
    dts = rng.choice(["dtype=torch.%s" % dt, "dtype=%s" % SHORT[dt]])
    if kind < 0.55:
        shape = rand_shape(rng)
        name = rng.choice(["empty", "zeros", "ones"])
        if rng.random() < 0.3:
            return "%s(%s)" % (name, fmt_args(*shape)), "float32"
        return "%s(%s)" % (name, ", ".join(map(str, shape)) + (", " if shape else "") + dts), dt
    if kind < 0.8:
        n = rng.randint(0, 24)
        r = rng.random()
        if r < 0.5:
            return "arange(%d)" % n, "int64"
        if r < 0.7:
            a, b, c = rng.randint(-3, 5), rng.randint(0, 20), rng.choice([1, 2, 3, -1])
            return "arange(%d, %d, %d)" % (a, b, c), "int64"
        return "arange(%d, %s)" % (n, dts), dt
    shape = rand_shape(rng)
    strides = [rng.choice([0, 1, 2, 3, 4, 6, 12]) for _ in shape]
    return "empty_strided(%s, %s, %s)" % (fmt_args(shape), fmt_args(strides), dts), dt


def factor_shape(rng, n):
    """A random shape with n elements, sometimes with a -1."""
    dims = []
    m = n
    for _ in range(rng.randint(0, 3)):
        divs = [d for d in range(1, m + 1) if m % d == 0] if m > 0 else [0, 1, 2]
        d = rng.choice(divs)
        dims.append(d)
        m = m // d if d else m
    dims.append(m)
    rng.shuffle(dims)
    if dims and rng.random() < 0.3 and n > 0:
        dims[rng.randrange(len(dims))] = -1
    if rng.random() < 0.05:
        dims.append(2)  # usually invalid
    return dims


def rdim(rng, nd, extra=0):
    n = max(nd + extra, 1)
    return rng.randint(-n, n - 1) if rng.random() < 0.95 else rng.choice([n, -n - 1])


def method(rng, shape, dtype):
    """Return the text of a random method call (with its leading '.') or index."""
    nd = len(shape)
    numel = 1
    for s in shape:
        numel *= s
    r = rng.random
    ops = []
    ops.append(lambda: ".view(%s)" % fmt_args(*factor_shape(rng, numel)))
    ops.append(lambda: ".reshape(%s)" % fmt_args(*factor_shape(rng, numel)))
    ops.append(lambda: ".transpose(%d, %d)" % (rdim(rng, nd), rdim(rng, nd)))
    ops.append(lambda: ".t()")
    ops.append(lambda: ".T")
    ops.append(lambda: ".mT")
    ops.append(lambda: ".permute(%s)" % fmt_args(*[d - (nd if r() < 0.3 else 0) for d in rng.sample(range(nd), nd)]))
    ops.append(lambda: ".expand(%s)" % fmt_args(*([rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 2))] +
                                                   [(rng.choice([2, 3, -1]) if s == 1 else (s if r() < 0.9 else -1)) for s in shape])))
    ops.append(lambda: ".unsqueeze(%d)" % rdim(rng, nd, 1))
    ops.append(lambda: ".squeeze()" if r() < 0.4 else ".squeeze(%d)" % rdim(rng, nd))
    ops.append(lambda: ".flatten()" if r() < 0.3 else ".flatten(%d, %d)" % (rdim(rng, nd), rdim(rng, nd)))
    ops.append(lambda: ".contiguous()")
    ops.append(lambda: ".contiguous(memory_format=torch.channels_last)")
    ops.append(lambda: ".clone()")
    ops.append(lambda: ".clone(memory_format=torch.%s)" % rng.choice(["contiguous_format", "channels_last", "preserve_format"]))
    ops.append(lambda: rng.choice([".half()", ".float()", ".double()", ".long()", ".int()", ".bool()", ".bfloat16()"]))
    ops.append(lambda: ".to(torch.%s)" % rng.choice(DTYPES))
    ops.append(lambda: ".to(dtype=%s)" % SHORT[rng.choice(DTYPES)])
    ops.append(lambda: ".view(torch.%s)" % rng.choice(DTYPES))
    if nd > 0:
        d = rdim(rng, nd)
        size = shape[d] if -nd <= d < nd else 3
        ops.append(lambda: ".select(%d, %d)" % (d, rng.randint(-size - 1, size)))
        ops.append(lambda: ".narrow(%d, %d, %d)" % (d, rng.randint(-size, size), rng.randint(0, size)))
        ops.append(lambda: ".slice(%d, %d, %d, %d)" % (d, rng.randint(-size - 2, size + 2), rng.randint(-size - 2, size + 3), rng.choice([1, 1, 2, 3])))
        ops.append(lambda: ".unfold(%d, %d, %d)" % (d, rng.randint(0, size + 1), rng.choice([1, 1, 2, 3])))
        ops.append(lambda: ".split(%d, %d)[%d]" % (rng.randint(1, max(size, 1) + 1), d, rng.randint(-1, 1)))
        ops.append(lambda: ".chunk(%d, %d)[0]" % (rng.randint(1, 4), d))
        ops.append(lambda: ".unbind(%d)[%d]" % (d, rng.randint(-1, 0)))
        ops.append(lambda: ".movedim(%d, %d)" % (d, rdim(rng, nd)))
        ops.append(lambda: ".unflatten(%d, %s)" % (d, fmt_args([x for x in factor_shape(rng, size)])))
        ops.append(lambda: ".repeat_interleave(%d, %d)" % (rng.randint(0, 3), d))
        ops.append(lambda: ".softmax(%d)" % d)
        ops.append(lambda: ".sum(%d)" % d if r() < 0.5 else ".sum(%d, keepdim=True)" % d)
        ops.append(lambda: ".mean(%d)" % d)
        ops.append(lambda: "[%s]" % index_text(rng, shape))
        ops.append(lambda: "[%s]" % index_text(rng, shape))
    ops.append(lambda: ".repeat(%s)" % fmt_args(*[rng.randint(0, 3) for _ in range(nd + rng.randint(0, 1))]))
    ops.append(lambda: ".broadcast_to(%s)" % fmt_args([rng.choice([2, 3]) if s == 1 else s for s in shape]))
    if nd >= 2:
        ops.append(lambda: ".diagonal(%d, %d, %d)" % (rng.randint(-2, 2), rdim(rng, nd), rdim(rng, nd)))
        ops.append(lambda: ".diagonal()")
    ops.append(lambda: ".as_strided(%s, %s)" % (fmt_args(shape), fmt_args([rng.choice([0, 1, 2, 3]) for _ in shape])))
    ops.append(lambda: rng.choice([" + 1", " * 2.5", " / 2", " ** 2", " - 1"]))
    ops.append(lambda: ".sum()")
    return rng.choice(ops)()


def index_text(rng, shape):
    parts = []
    nd = len(shape)
    i = 0
    used_ellipsis = False
    while i < nd and len(parts) < 4:
        k = rng.random()
        s = shape[i]
        if k < 0.25:
            parts.append(str(rng.randint(-s, s - 1) if s else 0))
            i += 1
        elif k < 0.7:
            a = rng.choice(["", str(rng.randint(-s - 1, s + 1))])
            b = rng.choice(["", str(rng.randint(-s - 1, s + 1))])
            c = rng.choice(["", "", ":2", ":3"])
            parts.append(a + ":" + b + c)
            i += 1
        elif k < 0.8:
            parts.append("None")
        elif k < 0.88 and not used_ellipsis:
            parts.append("...")
            used_ellipsis = True
            i = nd
        elif k < 0.93 and i == 0 and s > 0:
            parts.append("[%s]" % ", ".join(str(rng.randint(-s, s - 1)) for _ in range(rng.randint(1, 3))))
            i += 1
        else:
            parts.append(":")
            i += 1
    if not parts:
        parts = ["..."]
    return ", ".join(parts)


def eval_step(x, text):
    return eval("x" + text, ENV, {"x": x})


def chain(rng, rec, stmt):
    """One chain statement; rec.src follows the text of the steps tried."""
    text, dt = ctor(rng)
    rec.src = text
    t = rec.row(text, stmt, lambda: eval(text, ENV), ctor=True)
    for _ in range(rng.randint(1, 6)):
        m = method(rng, list(t.shape), dt)
        op = m.strip()
        cur = t
        if op[0] in "+-*/":
            # x + 1: the row's op text is the whole expression so far, and
            # what follows applies to it in parentheses.
            row_op = "%s %s" % (rec.src, op)
            rec.src = row_op
            t = rec.row(row_op, stmt, lambda: eval_step(cur, " " + op))
            rec.src = "(%s)" % row_op
            continue
        rec.src += m
        t = rec.row(m, stmt, lambda: eval_step(cur, m))
    return rec.src, t


def gen_chain(rng):
    rec = Recorder()
    try:
        chain(rng, rec, 1)
    except Stop:
        pass
    return rec, rec.src


def gen_program(rng):
    """Several statements: chains bound to variables, tuple assignment,
    and arithmetic, @, softmax and reductions on the variables."""
    rec = Recorder()
    lines = []
    env = {}
    stmt = 0
    try:
        for name in ["a", "b"][: rng.randint(1, 2)]:
            stmt += 1
            text, dt = ctor(rng)
            if rng.random() < 0.5:
                shape = rand_shape(rng, rng.choice([2, 3, 4]))
                dt = rng.choice(["float32", "float64", "bfloat16", "int64"])
                text = "empty(%s, dtype=torch.%s)" % (", ".join(map(str, shape)), dt)
            lines.append("%s = %s" % (name, text))
            t = rec.row(text, stmt, lambda: eval(text, ENV), ctor=True)
            rec.rows[-1]["var"] = name
            env[name] = t
        for _ in range(rng.randint(1, 5)):
            stmt += 1
            names = list(env)
            x = rng.choice(names)
            y = rng.choice(names)
            k = rng.random()
            new = "v%d" % stmt
            if k < 0.3:
                m = method(rng, list(env[x].shape), None)
                lines.append("%s = %s" % (new, x + m))
                if m.strip()[0] in "+-*/":
                    expr = x + m
                    t = rec.row(expr.strip(), stmt, lambda: eval(expr, ENV, dict(env)))
                else:
                    expr = x + m
                    t = rec.row(m.strip() if not m.startswith("[") else m, stmt, lambda: eval(expr, ENV, dict(env)))
                rec.rows[-1]["var"] = new
                env[new] = t
            elif k < 0.55:
                op = rng.choice(["+", "-", "*", "/", "@"])
                ty = y
                pre = []
                if op == "@" and rng.random() < 0.6:
                    ty = y + ".mT"
                    lines.append("%s = %s %s %s" % (new, x, op, ty))
                    yt = rec.row(".mT", stmt, lambda: env[y].mT)
                    lines.pop()
                    pre = [yt]
                expr = "%s %s %s" % (x, op, ty)
                lines.append("%s = %s" % (new, expr))
                lhs, rhs = env[x], (pre[0] if pre else env[y])
                t = rec.row(expr, stmt, lambda: eval("lhs %s rhs" % op, ENV, {"lhs": lhs, "rhs": rhs}))
                rec.rows[-1]["var"] = new
                env[new] = t
            elif k < 0.75 and env[x].dim() > 0:
                d = rdim(rng, env[x].dim())
                n = rng.randint(1, 3)
                how = rng.choice(["split", "chunk"])
                size = env[x].shape[d] if -env[x].dim() <= d < env[x].dim() else 1
                arg = max(1, (size + n - 1) // n) if how == "split" else n
                call = ".%s(%d, %d)" % (how, arg, d)
                try:
                    count = len(eval("x" + call, ENV, {"x": env[x]}))
                except Exception:
                    count = 2
                targets = ["%s%d" % (new, i) for i in range(count)]
                lines.append("%s = %s%s" % (", ".join(targets) + ("," if count == 1 else ""), x, call))
                pieces = rec_tuple(rec, stmt, env[x], call)
                for tn, (row_i, p) in zip(targets, pieces):
                    rec.rows[row_i]["var"] = tn
                    env[tn] = p
            else:
                d = rdim(rng, env[x].dim())
                m = rng.choice([".softmax(%d)" % d, ".sum(%d, keepdim=True)" % d, ".mean(%d)" % d, ".sum()", " / 2", " * 0.5", ".contiguous()", ".t()"])
                expr = x + m
                op = expr if m[0] == " " else m
                lines.append("%s = %s" % (new, expr))
                t = rec.row(op, stmt, lambda: eval(expr, ENV, dict(env)))
                rec.rows[-1]["var"] = new
                env[new] = t
    except Stop:
        pass
    return rec, "\n".join(lines) if rng.random() < 0.5 else "; ".join(lines)


def rec_tuple(rec, stmt, x, call):
    try:
        parts = eval("x" + call, ENV, {"x": x})
    except Exception as e:
        rec.rows.append({"op": call, "stmt": stmt, "ok": False, "error": str(e).split("\n")[0]})
        raise Stop()
    out = []
    for i, p in enumerate(parts):
        rec.row("%s[%d]" % (call, i), stmt, lambda: p)
        out.append((len(rec.rows) - 1, p))
    return out


# ---- targeted programs: TensorIterator layouts, matmul, indexing, kwargs ----

LAYOUT_DTYPES = ["float32", "float64", "bfloat16", "int64", "int32", "bool", "uint8", "float16"]


def layout_base(rng, shape, dt):
    """A tensor of shape `shape` in a random memory layout, and its text."""
    nd = len(shape)
    k = rng.random()
    if nd >= 2 and k < 0.3:
        perm = rng.sample(range(nd), nd)
        inv = [perm.index(i) for i in range(nd)]
        src = [shape[i] for i in perm]
        return "empty(%s, dtype=torch.%s).permute(%s)" % (", ".join(map(str, src)), dt, ", ".join(map(str, inv))), 2
    if nd >= 1 and k < 0.45:
        big = list(shape)
        big[-1] = big[-1] * 2
        return "empty(%s, dtype=torch.%s)[..., ::2]" % (", ".join(map(str, big)), dt), 2
    if nd == 4 and k < 0.6:
        return "empty(%s, dtype=torch.%s).contiguous(memory_format=torch.channels_last)" % (", ".join(map(str, shape)), dt), 2
    if nd >= 1 and k < 0.7 and 1 in shape:
        small = [1 if s == 1 else s for s in shape]
        return "empty(%s, dtype=torch.%s).expand(%s)" % (", ".join(map(str, small)), dt, ", ".join(map(str, shape))), 2
    if nd >= 2 and k < 0.8:
        t = list(shape)
        t[-1], t[-2] = t[-2], t[-1]
        return "empty(%s, dtype=torch.%s).transpose(-1, -2)" % (", ".join(map(str, t)), dt), 2
    return "empty(%s, dtype=torch.%s)" % (", ".join(map(str, shape)), dt), 1


def split_methods(text):
    """Split ".a(...).b[...]" at the top level into its steps."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            tuple_pick = text[start:i].split("(")[0] in (".split", ".chunk", ".unbind")
            if depth == 0 and c == "[" and i > start and not tuple_pick:
                out.append(text[start:i])
                start = i
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "." and depth == 0 and i > start:
            out.append(text[start:i])
            start = i
    out.append(text[start:])
    return [o for o in out if o]


def rows_of(text):
    """The op texts of a chain's rows: the constructor, then each method."""
    depth = 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return [text[: i + 1]] + split_methods(text[i + 1:])
    return [text]


def gen_targeted(rng):
    rec = Recorder()
    lines = []
    env = {}
    stmt = [0]

    def run(name, expr, ops):
        stmt[0] += 1
        lines.append("%s = %s" % (name, expr))
        ctor = expr.split("(")[0] in ("empty", "zeros", "ones", "arange", "empty_strided")
        # The first row evaluates the statement up to the end of its op.
        first = expr[: len(expr) - sum(len(o) for o in ops[1:])]
        t = rec.row(ops[0], stmt[0], lambda: eval(first, ENV, dict(env)), ctor=ctor)
        for op in ops[1:]:
            cur = t
            t = rec.row(op, stmt[0], lambda: eval_step(cur, op))
        rec.rows[-1]["var"] = name
        env[name] = t
        return t

    try:
        nd = rng.choice([1, 2, 2, 3, 3, 4, 4])
        shape = [rng.choice([1, 2, 3, 4]) if rng.random() < 0.9 else rng.choice([0, 5]) for _ in range(nd)]
        dt = rng.choice(LAYOUT_DTYPES)
        xt, _ = layout_base(rng, shape, dt)
        run("x", xt, rows_of(xt))
        ys = [s if rng.random() < 0.6 else 1 for s in shape][rng.randint(0, min(1, nd)):]
        dt2 = rng.choice(LAYOUT_DTYPES) if rng.random() < 0.4 else dt
        yt, _ = layout_base(rng, ys, dt2) if ys else ("empty((), dtype=torch.%s)" % dt2, 1)
        run("y", yt, rows_of(yt))
        for _ in range(rng.randint(1, 3)):
            k = rng.random()
            name = "z%d" % stmt[0]
            a, b = rng.choice([("x", "y"), ("y", "x"), ("x", "x")])
            if k < 0.35:
                op = rng.choice(["+", "-", "*", "/"])
                run(name, "%s %s %s" % (a, op, b), ["%s %s %s" % (a, op, b)])
            elif k < 0.5:
                e = rng.choice(["x * 2", "2 * x", "x + 0.5", "-x", "x ** 2", "1 - x", "x / 3", "y * 2.5"])
                run(name, e, [e])
            elif k < 0.6 and env["x"].dim() >= 1:
                n = env["x"].shape[-1]
                m = rng.choice([1, 2, 3])
                w = "empty(%d, %d, dtype=torch.%s)" % (n, m, dt if rng.random() < 0.8 else "float32")
                run("w", w, [w])
                run(name, "x @ w", ["x @ w"])
            elif k < 0.7 and env["x"].dim() >= 1 and env["x"].shape[0] > 0:
                n = env["x"].shape[0]
                idx = ", ".join(str(rng.randint(-n, n - 1)) for _ in range(rng.randint(1, 3)))
                e = "x[[%s]]" % idx
                run(name, e, ["[[%s]]" % idx])
            else:
                d = rng.randint(-max(nd, 1), max(nd, 1) - 1)
                m = rng.choice([
                    ".sum((0, -1))" if nd >= 2 else ".sum(0)",
                    ".sum(%d, dtype=torch.float64)" % d,
                    ".softmax(%d, dtype=torch.float32)" % d,
                    ".to(memory_format=torch.channels_last)" if nd == 4 else ".to(dtype=torch.float64)",
                    ".clone(memory_format=torch.contiguous_format)",
                    ".repeat_interleave(2)",
                    ".movedim((0, -1), (-1, 0))" if nd >= 2 else ".movedim(0, 0)",
                    ".unflatten(-1, (-1, 1))" if nd >= 1 else ".flatten()",
                    ".split([1, %d], -1)[1]" % max(shape[-1] - 1, 0) if nd >= 1 else ".flatten()",
                    ".contiguous(memory_format=torch.channels_last).view(torch.int8)" if nd == 4 else ".view(torch.int8)",
                    ".expand_as(x)", ".view_as(x)", ".reshape_as(x)",
                ])
                src = rng.choice(["x", "y"])
                if m.startswith(".expand_as") or m.startswith(".view_as") or m.startswith(".reshape_as"):
                    src = "y"
                run(name, src + m, split_methods(m))
            if rng.random() < 0.15:
                e = "torch.transpose(x, 0, -1)"
                run("t%d" % stmt[0], e, [e])
    except Stop:
        pass
    return rec, "; ".join(lines) if rng.random() < 0.5 else "\n".join(lines)


def kernel_missing(rec):
    last = rec.rows[-1] if rec.rows else None
    return last is not None and not last["ok"] and "not implemented for" in last["error"]


def main():
    rng = random.Random(SEED)
    out = sys.stdout
    out.write(json.dumps({"torch": torch.__version__, "seed": SEED, "generator": "scripts/torch-oracle/gen.py"}) + "\n")
    n = 0
    while n < N_CHAINS:
        rec, src = gen_chain(rng)
        if kernel_missing(rec):
            continue
        out.write(json.dumps({"src": src, "rows": rec.rows}, separators=(",", ":")) + "\n")
        n += 1
    n = 0
    while n < N_PROGRAMS:
        rec, src = gen_program(rng)
        if kernel_missing(rec) or not rec.rows:
            continue
        out.write(json.dumps({"src": src, "rows": rec.rows}, separators=(",", ":")) + "\n")
        n += 1
    n = 0
    while n < N_TARGETED:
        rec, src = gen_targeted(rng)
        if kernel_missing(rec) or not rec.rows:
            continue
        out.write(json.dumps({"src": src, "rows": rec.rows}, separators=(",", ":")) + "\n")
        n += 1


if __name__ == "__main__":
    main()
