// The layout explorer: runs Stride's layout evaluator (layout.wasm, Go's
// tensor/layoutexpr) and shows each step as a table row and a picture of
// storage and view. Plain JavaScript, no build step; every path is
// relative, so the folder works from any static host.
"use strict";

// Presets: the programs a lecture on tensor layout walks through.
const PRESETS = [
  ["Seed MHA layer (B=2, S=4096, H=32, D=128)",
`Q = empty(2, 4096, 4096)   # x @ Wq.T
K = empty(2, 4096, 4096)
V = empty(2, 4096, 4096)
q = Q.view(2, 4096, 32, 128).transpose(1, 2)   # split heads: a view
k = K.view(2, 4096, 32, 128).transpose(1, 2)
v = V.view(2, 4096, 32, 128).transpose(1, 2)
scores = q @ k.transpose(-2, -1) / 128**0.5
attn = scores.softmax(-1)
out = (attn @ v).transpose(1, 2).contiguous().view(2, 4096, 4096)   # the copy`],
  ["Fused QKV head split",
`qkv = empty(1, 4, 3*8)          # [B, S, 3*H*D], H=2, D=4
q, k, v = qkv.split(8, -1)      # three views, offsets 0, 8, 16
q = q.view(1, 4, 2, 4).transpose(1, 2)   # [B, H, S, D]`],
  ["GQA decode: repeat_interleave of K",
`q = empty(1, 4, 1, 4)           # [B, H=4, 1 new token, D]
k = empty(1, 2, 6, 4)           # [B, KV heads=2, past=6, D]
k = k.repeat_interleave(2, 1)   # each KV head serves 2 query heads: a copy
s = q @ k.mT                    # [B, H, 1, past]`],
  ["transpose().view() fails, .reshape() copies",
`x = arange(12).view(3, 4).t()
y = x.reshape(12)   # a copy: 96 bytes of int64
z = x.view(12)      # PyTorch refuses`],
  ["expand vs repeat",
`x = arange(3).view(3, 1)
e = x.expand(3, 4)   # stride 0: no copy, every column reads the same cell
r = x.repeat(1, 4)   # a real copy`],
  ["unfold: sliding windows",
`x = arange(10)
w = x.unfold(0, 4, 2)   # windows of 4, step 2: overlapping reads, no copy`],
  ["Channels-last image",
`img = empty(1, 3, 4, 4).contiguous(memory_format=torch.channels_last)
hwc = empty(1, 4, 4, 3).permute(0, 3, 1, 2)   # the same layout from an HWC buffer`],
];

const $ = (id) => document.getElementById(id);
const SVGNS = "http://www.w3.org/2000/svg";
// Summary limits: a grid shows its first MAXR rows and MAXC columns, at
// most MAXSLICES 2-d slices; the storage strip draws every cell up to
// MAXSTRIP elements, and beyond that only the cells the drawn grid reads.
const MAXR = 8, MAXC = 12, MAXSLICES = 4, MAXSTRIP = 96, MAXTRACE = 1 << 16;

let state = { src: "", rows: [], extra: [], error: null, cur: 0 };

// ---- formatting (the table's text; browser_test.go checks it against
// infer layout --output json) ----
function fmtList(v) { return v === null ? "" : "[" + v.join(", ") + "]"; }
function fmtBool(b) { return b === null ? "" : (b ? "True" : "False"); }
function fmtBytes(n) {
  if (n === null) return "";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let s = n + " B";
  if (n >= 1024) {
    let v = n, u = -1;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    s += " (" + v.toFixed(1) + " " + units[u] + ")";
  }
  return s;
}

function evaluate(src, keepStep) {
  state.src = src;
  const doc = JSON.parse(globalThis.strideLayout(src));
  state.rows = doc.rows ? JSON.parse(doc.rows) : [];
  state.extra = doc.extra || [];
  state.error = doc.error;
  const ok = state.rows.filter((r) => r.error === null).length;
  state.cur = keepStep !== undefined ? Math.min(Math.max(keepStep, 0), Math.max(ok - 1, 0))
                                     : Math.max(ok - 1, 0);
  renderError();
  renderTable();
  select(state.cur);
}

function renderError() {
  const box = $("error");
  const e = state.error;
  box.replaceChildren();
  if (!e) { box.hidden = true; return; }
  box.hidden = false;
  const head = document.createElement("p");
  head.className = "msg";
  const where = e.kind === "syntax" ? "syntax error" : "step " + e.step + " failed";
  head.textContent = where + " at line " + e.line + ", column " + e.col + ": ";
  const msg = document.createElement("span");
  msg.id = "errmsg";
  msg.textContent = e.msg;
  head.append(msg);
  const lines = state.src.split("\n");
  const pre = document.createElement("pre");
  pre.id = "errcaret";
  pre.textContent = (lines[e.line - 1] || "") + "\n" + " ".repeat(Math.max(e.col - 1, 0)) + "^";
  box.append(head, pre);
  // Put the text cursor where it failed, so the fix is one keystroke away
  // (without stealing focus from whoever is navigating).
  const ta = $("program");
  let off = 0;
  for (let i = 0; i < e.line - 1; i++) off += lines[i].length + 1;
  off += e.col - 1;
  ta.setSelectionRange(off, off);
}

function renderTable() {
  const tb = document.querySelector("#rows tbody");
  tb.replaceChildren();
  state.rows.forEach((r, i) => {
    const tr = document.createElement("tr");
    tr.tabIndex = 0;
    tr.dataset.step = String(i + 1);
    const cells = [String(i + 1), r.var || "", r.op, r.dtype];
    if (r.error === null) {
      cells.push(fmtList(r.shape), fmtList(r.strides), String(r.offset), fmtBool(r.contiguous),
        r.memory_format || "", r.storage, fmtBytes(r.copied_bytes));
    }
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = c;
      tr.append(td);
    }
    if (r.error !== null) {
      const td = document.createElement("td");
      td.colSpan = 7;
      td.className = "err";
      td.textContent = r.error;
      tr.append(td);
    } else {
      tr.addEventListener("click", () => select(i));
      tr.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(i); }
      });
    }
    tb.append(tr);
  });
}

function okCount() { return state.rows.filter((r) => r.error === null).length; }

function select(i) {
  state.cur = i;
  document.querySelectorAll("#rows tbody tr").forEach((tr, j) => {
    tr.setAttribute("aria-current", j === i ? "true" : "false");
  });
  const n = okCount();
  $("stepinfo").textContent = n ? "step " + (i + 1) + " of " + n + (state.rows.length > n ? " (then the error)" : "") : "";
  $("prev").disabled = i <= 0;
  $("next").disabled = i >= n - 1;
  // The link holds the program and the step shown: ?expr=...&step=N.
  const url = new URL(window.location.href);
  url.searchParams.set("expr", state.src);
  if (n && i !== n - 1) url.searchParams.set("step", String(i + 1)); else url.searchParams.delete("step");
  try { history.replaceState(null, "", url.search); } catch (e) { /* file:// or a sandboxed frame */ }
  draw();
}

// ---- the picture ----

// Storage index that coordinate idx of row r reads.
function at(r, idx) {
  let s = r.offset;
  for (let d = 0; d < idx.length; d++) s += idx[d] * r.strides[d];
  return s;
}
function numel(shape) { return shape.reduce((a, b) => a * b, 1); }

// Every index a view reads, with how often, when the view is small enough
// to walk; null otherwise.
function readCounts(r) {
  const n = numel(r.shape);
  if (n > MAXTRACE) return null;
  const counts = new Map();
  const idx = new Array(r.shape.length).fill(0);
  for (let k = 0; k < n; k++) {
    const s = at(r, idx);
    counts.set(s, (counts.get(s) || 0) + 1);
    for (let d = idx.length - 1; d >= 0; d--) { if (++idx[d] < r.shape[d]) break; idx[d] = 0; }
  }
  return counts;
}

// The 2-d slices the grid draws: leading indices, rows, columns.
function slices(r) {
  const nd = r.shape.length;
  const first = (n, m) => Array.from({ length: Math.min(n, m) }, (_, i) => i);
  if (nd === 0) return { list: [{ lead: [], label: "0-d" }], rows: [null], cols: [null], total: 1 };
  if (nd === 1) return { list: [{ lead: [], label: "" }], rows: [null], cols: first(r.shape[0], MAXC * 2), total: 1 };
  const lead = r.shape.slice(0, nd - 2);
  const total = numel(lead);
  const list = [];
  const idx = new Array(lead.length).fill(0);
  for (let k = 0; k < Math.min(total, MAXSLICES); k++) {
    list.push({ lead: idx.slice(), label: lead.length ? "[" + idx.concat([":", ":"]).join(", ") + "]" : "" });
    for (let d = idx.length - 1; d >= 0; d--) { if (++idx[d] < lead[d]) break; idx[d] = 0; }
  }
  return { list, rows: first(r.shape[nd - 2], MAXR), cols: first(r.shape[nd - 1], MAXC), total };
}

// A colour per storage index, so a grid cell and the storage cell it
// reads share a colour. Light pastels keep black text at > 7:1 contrast.
function colour(s) { return "hsl(" + ((s * 47) % 360) + " 70% 84%)"; }

function el(name, attrs, parent) {
  const e = document.createElementNS(SVGNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.append(e);
  return e;
}
function label(parent, x, y, text, cls) {
  const t = el("text", { x, y, class: cls || "lbl" }, parent);
  t.textContent = text;
  return t;
}
function cell(parent, x, y, w, h, text, attrs, fill) {
  const g = el("g", Object.assign({ class: "cell", transform: "translate(" + x + " " + y + ")" }, attrs), parent);
  el("rect", { width: w, height: h, fill: fill || "#fff" }, g);
  const t = el("text", { x: w / 2, y: h / 2 + 5, "text-anchor": "middle", "font-size": text.length > 5 ? 10 : 13 }, g);
  t.textContent = text;
  return g;
}

// strip draws a storage as a row of cells: all of it when short, else the
// cells in `wanted` (sorted) with the gaps between them marked.
function strip(svg, y, title, elems, counts, wanted, step) {
  label(svg, 0, y - 6, title);
  const W = 34, H = 28;
  let items = [];
  if (elems <= MAXSTRIP) {
    for (let s = 0; s < elems; s++) items.push(s);
  } else {
    let prev = -1;
    for (const s of wanted) {
      if (items.length >= MAXSTRIP) break;
      if (s !== prev + 1) items.push({ gap: s - prev - 1 });
      items.push(s);
      prev = s;
    }
    if (prev < elems - 1) items.push({ gap: elems - 1 - prev });
  }
  let x = 0, rowY = y;
  const perLine = 24;
  items.forEach((it, k) => {
    if (k > 0 && k % perLine === 0) { x = 0; rowY += H + 18; }
    if (typeof it === "object") {
      cell(svg, x, rowY, W, H, "⋯", { "class": "cell gap", "aria-label": it.gap + " elements not drawn" });
      label(svg, x, rowY + H + 12, "+" + it.gap);
    } else {
      const c = counts ? (counts.get(it) || 0) : (wanted.has(it) ? 1 : 0);
      const hole = counts !== null && c === 0;
      const g = cell(svg, x, rowY, W, H, String(it),
        { "class": hole ? "cell hole store" : "cell store", "data-idx": it, "data-step": step,
          "aria-label": "storage " + it + (hole ? ", a hole: no element of the view reads it" : c > 1 ? ", read " + c + " times" : "") },
        hole ? null : colour(it));
      if (c > 1) label(g, W - 2, -3, "×" + c, "lbl rep").setAttribute("text-anchor", "end");
    }
    x += W + 2;
  });
  return rowY + H + 30;
}

function draw() {
  const box = $("drawing");
  box.replaceChildren();
  const r = state.rows[state.cur];
  if (!r || r.error !== null) { $("pictitle").textContent = "Picture"; return; }
  const x = state.extra[state.cur];
  const step = state.cur + 1;
  $("pictitle").textContent = "Step " + step + ": " + (r.var ? r.var + " = " : "") + r.op;
  const svg = el("svg", { role: "img", "aria-label": "storage and view of step " + step });
  const sl = slices(r);
  const counts = readCounts(r);
  // The storage indices the drawn grid reads.
  const wanted = new Set();
  for (const s of sl.list) for (const i of sl.rows) for (const j of sl.cols) {
    const idx = s.lead.concat(i === null ? [] : [i], j === null ? [] : [j]);
    wanted.add(at(r, idx));
  }
  const sortedWanted = new Set([...wanted].sort((a, b) => a - b));
  let y = 18;
  const notes = [];
  // A copy: the source storage (the previous step of the same chain) above the new one.
  const prev = state.rows[state.cur - 1];
  if (r.storage === "new" && r.copied_bytes > 0 && r.op.startsWith(".") && prev && prev.stmt === r.stmt) {
    const px = state.extra[state.cur - 1];
    const pc = readCounts(prev);
    y = strip(svg, y, "source: storage of step " + (state.cur) + " (" + px.storage_elems + " × " + prev.dtype + "), read by the copy",
      px.storage_elems, pc, new Set([...(pc ? pc.keys() : [])].sort((a, b) => a - b)), state.cur);
  }
  if (r.storage === "new" && r.copied_bytes > 0)
    notes.push("a copy: " + fmtBytes(r.copied_bytes) + " written into a new storage; no earlier view shares it");
  const storName = r.storage === "new" ? "new storage" : "storage " + r.storage.replace(/^shared\((.*)\)$/, "of $1");
  y = strip(svg, y, storName + ": " + x.storage_elems + " × " + r.dtype + (x.storage_elems > MAXSTRIP ? " (only the cells the grid reads are drawn)" : ""),
    x.storage_elems, x.storage_elems <= MAXSTRIP ? counts : null, sortedWanted, step);
  const zero = r.strides.map((s, d) => (s === 0 && r.shape[d] > 1 ? d : -1)).filter((d) => d >= 0);
  if (zero.length) notes.push("stride 0 in dim " + zero.join(", ") + ": those coordinates all read the same storage cells (broadcast, no copy)");
  if (counts && x.storage_elems <= MAXSTRIP) {
    let holes = 0;
    for (let s = 0; s < x.storage_elems; s++) if (!counts.has(s)) holes++;
    if (holes) notes.push(holes + " storage cells are holes (dashed): the view never reads them");
  }
  if (sl.total > sl.list.length || (sl.rows.length && r.shape.length >= 2 && (r.shape[r.shape.length - 2] > MAXR || r.shape[r.shape.length - 1] > MAXC)) ||
      (r.shape.length === 1 && r.shape[0] > sl.cols.length))
    notes.push("summarised: the first " + sl.rows.length + " rows and " + sl.cols.length + " columns of the first " + sl.list.length + " of " + sl.total + " slices are drawn");
  label(svg, 0, y, "view: shape " + fmtList(r.shape) + ", strides " + fmtList(r.strides) + ", offset " + r.offset);
  y += 12;
  const W = 46, H = 28;
  let first = true;
  for (const s of sl.list) {
    if (s.label) { label(svg, 0, y + 14, s.label); y += 18; }
    // column headers
    sl.cols.forEach((j, cj) => { if (j !== null) label(svg, 40 + cj * (W + 2) + W / 2 - 4, y + 12, String(j)); });
    y += 16;
    sl.rows.forEach((i, ri) => {
      if (i !== null) label(svg, 0, y + ri * (H + 2) + 19, String(i));
      sl.cols.forEach((j, cj) => {
        const idx = s.lead.concat(i === null ? [] : [i], j === null ? [] : [j]);
        const si = at(r, idx);
        const g = cell(svg, 40 + cj * (W + 2), y + ri * (H + 2), W, H, String(si),
          { "class": "cell view", "data-idx": si, "data-step": step, "data-coord": idx.join(","),
            tabindex: first ? "0" : "-1", "aria-label": "x[" + idx.join(", ") + "] reads storage " + si }, colour(si));
        first = false;
        g.dataset.row = ri; g.dataset.col = cj;
      });
    });
    y += sl.rows.length * (H + 2) + 8;
  }
  for (const n of notes) { y += 16; label(svg, 0, y, n); }
  const width = Math.max(40 + sl.cols.length * (W + 2), 24 * 36, 700);
  svg.setAttribute("viewBox", "0 0 " + width + " " + (y + 10));
  svg.setAttribute("width", width);
  svg.setAttribute("height", y + 10);
  box.append(svg);
  const ul = document.createElement("ul");
  ul.className = "sr-only";
  for (const n of notes) { const li = document.createElement("li"); li.textContent = n; ul.append(li); }
  box.append(ul);
}

// Highlight every grid and storage cell that names storage index idx.
function highlight(idx) {
  document.querySelectorAll("#drawing .cell.hl").forEach((c) => c.classList.remove("hl"));
  if (idx === null) return;
  document.querySelectorAll('#drawing .cell[data-idx="' + idx + '"]').forEach((c) => c.classList.add("hl"));
}
function cellOf(ev) { return ev.target.closest ? ev.target.closest(".cell[data-idx]") : null; }

function setup() {
  const sel = $("preset");
  PRESETS.forEach(([name], i) => {
    const o = document.createElement("option");
    o.value = String(i); o.textContent = name;
    sel.append(o);
  });
  const custom = document.createElement("option");
  custom.value = ""; custom.textContent = "(your program)";
  sel.append(custom);
  sel.addEventListener("change", () => {
    if (sel.value === "") return;
    $("program").value = PRESETS[Number(sel.value)][1];
    evaluate($("program").value);
  });
  $("program").addEventListener("input", () => { sel.value = ""; });
  $("program").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); evaluate($("program").value); }
  });
  $("run").addEventListener("click", () => evaluate($("program").value));
  $("prev").addEventListener("click", () => { if (state.cur > 0) select(state.cur - 1); });
  $("next").addEventListener("click", () => { if (state.cur < okCount() - 1) select(state.cur + 1); });
  $("share").addEventListener("click", () => {
    const link = window.location.href;
    if (navigator.clipboard) navigator.clipboard.writeText(link).then(() => { $("status").textContent = "link copied"; }, () => {});
  });
  const d = $("drawing");
  d.addEventListener("mouseover", (ev) => { const c = cellOf(ev); highlight(c ? c.dataset.idx : null); });
  d.addEventListener("mouseleave", () => highlight(null));
  d.addEventListener("focusin", (ev) => { const c = cellOf(ev); if (c) highlight(c.dataset.idx); });
  d.addEventListener("keydown", (ev) => {
    const c = cellOf(ev);
    if (!c || !c.classList.contains("view")) return;
    const dirs = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
    const dv = dirs[ev.key];
    if (!dv) return;
    ev.preventDefault();
    const views = [...d.querySelectorAll(".cell.view")];
    const k = views.indexOf(c);
    let t = null;
    if (dv[0] === 0) t = views[k + dv[1]];
    else {
      const same = (v) => v.dataset.col === c.dataset.col;
      t = dv[0] > 0 ? views.slice(k + 1).find(same) : views.slice(0, k).reverse().find(same);
    }
    if (t) { c.setAttribute("tabindex", "-1"); t.setAttribute("tabindex", "0"); t.focus(); }
  });
  document.addEventListener("keydown", (ev) => {
    const tag = ev.target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || cellOf(ev)) return;
    if (ev.key === "ArrowLeft" || ev.key === "[") $("prev").click();
    if (ev.key === "ArrowRight" || ev.key === "]") $("next").click();
  });
  const q = new URLSearchParams(window.location.search).get("expr");
  if (q !== null) { $("program").value = q; sel.value = ""; } else { $("program").value = PRESETS[0][1]; sel.value = "0"; }
}

// Load the evaluator. instantiateStreaming needs the server to say
// application/wasm; a host that does not gets the slower fallback.
async function load() {
  setup();
  const go = new Go();
  let inst;
  try {
    inst = await WebAssembly.instantiateStreaming(fetch("layout.wasm"), go.importObject);
  } catch (e) {
    const buf = await (await fetch("layout.wasm")).arrayBuffer();
    inst = await WebAssembly.instantiate(buf, go.importObject);
  }
  const ready = new Promise((res) => { globalThis.strideLayoutReady = res; });
  go.run(inst.instance);
  await ready;
  $("status").textContent = "";
  document.body.dataset.ready = "true";
  // Time from navigation to a usable evaluator (docs/explorer.md quotes it).
  document.body.dataset.loadMs = String(Math.round(performance.now()));
  const step = Number(new URLSearchParams(window.location.search).get("step"));
  evaluate($("program").value, step >= 1 ? step - 1 : undefined);
  document.dispatchEvent(new Event("explorer-ready"));
}

window.explorer = { evaluate, select, state, ready: load().catch((e) => { $("status").textContent = "could not load the evaluator: " + e; throw e; }) };
