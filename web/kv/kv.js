// The paged KV cache page (docs/serving.md, "Seeing the KV cache"): it
// reads one snapshot event and then one event per engine step from
// /debug/kv/events, replays them onto its state, and draws the pool, the
// block tables and the counters. Every event it received is kept, so the
// page can pause, step and replay. An API key, when the server wants one,
// is asked once and kept in this closure only: it goes in the
// Authorization header (fetch streaming, since EventSource cannot send
// headers), never in a URL or in storage.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const MAX_LOG = 5000; // events kept for replay; older ones fold into the base

  let key = null;
  let abort = null;
  const requests = {}; // engine request number → {id, text}
  let base = null; // the state before log[0]
  const log = []; // events received after base
  let view = null; // the state drawn: base with log[0 … shown-1] applied
  let shown = 0;
  let paused = false;
  let playing = null; // timer of a replay running on its own
  const watchers = []; // when()'s pending conditions

  // ----- state -----

  function fromSnapshot(s) {
    return { step: s.step, event: s.event, pool: s.pool, blocks: s.blocks.slice(),
      seqs: new Map(s.sequences.map((q) => [q.seq, q])), waiting: s.waiting, counters: s.counters, last: null };
  }

  function clone(s) {
    return Object.assign({}, s, { blocks: s.blocks.slice(), seqs: new Map(s.seqs) });
  }

  // apply returns the state after ev (the events' replay rule).
  function apply(s, ev) {
    if (ev.type === "snapshot") {
      const n = fromSnapshot(ev.snapshot);
      n.last = ev;
      return n;
    }
    s.step = ev.step;
    s.event = ev.id;
    for (const b of ev.blocks) s.blocks[b.id] = b;
    for (const id of ev.removed) s.seqs.delete(id);
    for (const q of ev.sequences) s.seqs.set(q.seq, q);
    s.waiting = ev.waiting;
    s.counters = ev.counters;
    s.last = ev;
    return s;
  }

  function receive(ev) {
    // Merge: a request that has ended is still named by what was known.
    for (const [n, r] of Object.entries(ev.requests || {})) requests[n] = Object.assign(requests[n] || {}, r);
    // A sequence keeps the text it had at this event, for replays.
    for (const q of ev.snapshot ? ev.snapshot.sequences : ev.sequences) q.text = (ev.requests[q.request] || {}).text;
    if (base === null) {
      base = apply(null, ev);
      view = clone(base);
      draw();
      notify();
      return;
    }
    log.push(ev);
    if (log.length > MAX_LOG) {
      base = apply(base, log.shift());
      shown = Math.max(0, shown - 1);
    }
    if (!paused) {
      while (shown < log.length) view = apply(view, log[shown++]);
      redraw();
    } else {
      position();
      notify();
    }
  }

  // redraw draws once per animation frame however many events arrived
  // (a big pool is thousands of elements), then tells when() watchers.
  let frameAsked = false;
  function redraw() {
    if (frameAsked) return;
    frameAsked = true;
    requestAnimationFrame(() => {
      frameAsked = false;
      draw();
      notify();
    });
  }

  // notify resolves the promises of when() whose condition now holds.
  function notify() {
    for (let i = watchers.length - 1; i >= 0; i--) {
      if (watchers[i].pred()) watchers.splice(i, 1)[0].resolve();
    }
  }

  // ----- network -----

  function status(text) {
    $("status").textContent = text;
    notify();
  }

  function askKey(why) {
    $("keyform").hidden = false;
    $("keyerr").textContent = why || "";
    $("key").focus();
    status("this server needs an API key");
  }

  async function connect() {
    if (abort) abort.abort();
    abort = new AbortController();
    let res;
    try {
      res = await fetch("/debug/kv/events", { headers: key ? { Authorization: "Bearer " + key } : {},
        signal: abort.signal, cache: "no-store" });
    } catch (e) {
      status("cannot reach the server: " + e.message);
      return;
    }
    if (res.status === 401) {
      askKey(key ? "the server refused that key" : "");
      key = null;
      return;
    }
    if (!res.ok) {
      let msg = res.statusText;
      try { msg = (await res.json()).error.message; } catch (_) { /* not an error object */ }
      status("error " + res.status + ": " + msg);
      return;
    }
    $("keyform").hidden = true;
    document.body.dataset.connected = "1";
    status("live");
    await read(res.body.getReader());
  }

  async function read(reader) {
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (abort) status("stream ended: " + e.message);
        return;
      }
      if (chunk.done) break;
      buf += dec.decode(chunk.value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        frame(buf.slice(0, i));
        buf = buf.slice(i + 2);
      }
    }
    status("the server ended the stream");
  }

  function frame(text) {
    let data = "";
    for (const line of text.split("\n")) {
      if (line.startsWith("data:")) data += (data ? "\n" : "") + line.slice(5).replace(/^ /, "");
    }
    if (data) receive(JSON.parse(data));
  }

  // ----- drawing -----

  function colour(seq) { return "hsl(" + ((seq * 137.508) % 360).toFixed(1) + ", 62%, 72%)"; }

  // holders maps each block to the sequences holding it: [{seq, index}].
  function holders(s) {
    const h = new Map();
    for (const q of s.seqs.values()) {
      q.table.forEach((b, i) => {
        if (!h.has(b)) h.set(b, []);
        h.get(b).push({ seq: q.seq, index: i });
      });
    }
    return h;
  }

  function written(s) {
    const w = new Set();
    const runs = s.last && s.last.writes ? s.last.writes.runs : [];
    const bs = s.pool.block_size;
    for (const r of runs) {
      const n = s.last.writes.summarized ? 1 : r.n;
      for (let i = 0; i < n; i++) w.add(Math.floor((r.slot + i) / bs));
    }
    return w;
  }

  function blockEl(b, hold, wrote) {
    const el = document.createElement("span");
    el.className = "block " + b.state;
    el.dataset.id = b.id;
    el.dataset.state = b.state;
    el.dataset.ref = b.ref;
    el.textContent = b.id;
    const hs = hold.get(b.id) || [];
    el.dataset.seqs = hs.map((x) => x.seq).join(",");
    if (hs.length === 1) el.style.background = colour(hs[0].seq);
    if (hs.length > 1) {
      el.classList.add("shared");
      const stops = hs.map((x, i) => colour(x.seq) + " " + (100 * i / hs.length).toFixed(1) + "% " + (100 * (i + 1) / hs.length).toFixed(1) + "%");
      el.style.background = "linear-gradient(135deg, " + stops.join(", ") + ")";
      const r = document.createElement("span");
      r.className = "ref";
      r.textContent = "×" + b.ref;
      el.append(r);
    }
    if (wrote.has(b.id)) el.classList.add("written");
    return el;
  }

  function draw() {
    if (!view) return;
    const s = view;
    const p = s.pool;
    const hold = holders(s);
    const wrote = written(s);
    $("poolinfo").textContent = p.num_blocks + " blocks × " + p.block_size + " slots · " + p.dtype + " · " +
      bytes(p.bytes_per_block) + " per block";
    $("pool").replaceChildren(...s.blocks.map((b) => blockEl(b, hold, wrote)));
    const cached = s.blocks.filter((b) => b.state === "cached");
    $("cached").replaceChildren(...cached.map((b) => blockEl(b, hold, wrote)));
    $("cachedcount").textContent = "(" + cached.length + ")";
    drawTables(s);
    const c = s.counters;
    $("c-usage").textContent = (100 * c.usage).toFixed(1) + "%";
    $("c-hits").textContent = (100 * c.prefix_hit_rate).toFixed(1) + "%";
    $("c-preempt").textContent = c.preemptions;
    $("c-cow").textContent = c.cow_blocks;
    $("c-evict").textContent = c.evictions;
    $("c-step").textContent = s.step;
    $("c-event").textContent = s.event;
    $("event").textContent = s.last ? summary(s.last) : "";
    position();
  }

  function drawTables(s) {
    const rows = [...s.seqs.values()].sort((a, b) => a.seq - b.seq).map((q) => {
      const tr = document.createElement("tr");
      tr.dataset.seq = q.seq;
      tr.dataset.table = q.table.join(",");
      const req = requests[q.request] || {};
      const cells = [q.seq, req.id ? short(req.id) + " (#" + q.request + ")" : "#" + q.request,
        q.tokens + (q.committed !== q.tokens ? " (" + q.committed + " final)" : "")];
      for (const text of cells) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      tr.firstChild.prepend(swatch(q.seq));
      if (req.id) tr.children[1].title = req.id;
      const td = document.createElement("td");
      q.table.forEach((b, i) => {
        const e = document.createElement("span");
        e.className = "entry" + (s.blocks[b].ref > 1 ? " shared" : "");
        e.dataset.block = b;
        e.dataset.logical = i;
        e.tabIndex = 0;
        e.style.background = colour(q.seq);
        e.title = "logical block " + i + " → physical block " + b;
        const small = document.createElement("small");
        small.textContent = i + "→";
        e.append(small, String(b));
        td.append(e);
      });
      tr.append(td);
      if (q.text) {
        const t = document.createElement("div");
        t.className = "text";
        t.textContent = q.text.length > 80 ? "…" + q.text.slice(-80) : q.text;
        tr.children[1].append(t);
      }
      return tr;
    });
    $("tables").tBodies[0].replaceChildren(...rows);
    $("waiting").replaceChildren(...s.waiting.map((w) => {
      const li = document.createElement("li");
      const req = requests[w.request] || {};
      li.textContent = (req.id ? short(req.id) : "#" + w.request) + " · " + w.tokens + " tokens" +
        (w.preemptions ? " · preempted ×" + w.preemptions : "");
      return li;
    }));
  }

  function short(id) { return id.length > 16 ? id.slice(0, 15) + "…" : id; }

  function swatch(seq) {
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = colour(seq);
    return sw;
  }

  function bytes(n) {
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
    return n + " B";
  }

  function summary(ev) {
    if (ev.type === "snapshot") return "snapshot at step " + ev.step + (ev.resync ? " (resync: events were dropped)" : "");
    const out = ["step " + ev.step + " · event " + ev.id];
    const refs = (l) => l.map((r) => "seq " + r.seq + " (#" + r.request + ")").join(", ");
    for (const k of ["admitted", "preempted", "finished", "cancelled"]) if (ev[k].length) out.push(k + ": " + refs(ev[k]));
    for (const k of ["allocated", "freed", "shared", "evicted"]) if (ev[k].length) out.push(k + " blocks: " + ev[k].join(" "));
    for (const c of ev.copy_on_write) out.push("copy on write: seq " + c.seq + " entry " + c.index + ": block " + c.from + " → " + c.to);
    if (ev.writes) {
      const w = ev.writes;
      out.push("K/V writes: " + w.tokens + " tokens" + (w.summarized ? " (summarised per sequence)" : "") + ": " +
        w.runs.map((r) => "seq " + r.seq + " pos " + r.pos + "…" + (r.pos + r.n - 1) + " → slots " + r.slot + "…" + (r.slot + r.n - 1)).join("; "));
    }
    return out.join("\n");
  }

  // detail explains block b: its slots, the positions each holder keeps
  // there, and its bytes in every layer's K and V tensor, from the
  // cache's strides ([kv_block_stride, kv_token_stride, kv_head_stride, 1]).
  function detail(b) {
    const s = view;
    const p = s.pool;
    const blk = s.blocks[b];
    const [bst, tst] = p.strides;
    const e = p.elem_size;
    const hs = holders(s).get(b) || [];
    const first = b * p.block_size;
    const lines = ["<h3>Block " + b + " <span class=dim>" + blk.state + ", refcount " + blk.ref + "</span></h3>"];
    if (blk.hash) lines.push("<p>prefix hash <code>" + blk.hash + "</code></p>");
    lines.push("<p>slots " + first + "…" + (first + p.block_size - 1) + "</p>");
    for (const h of hs) {
      const q = s.seqs.get(h.seq);
      const lo = h.index * p.block_size;
      const hi = Math.min(q.tokens, lo + p.block_size) - 1;
      lines.push("<p>seq " + h.seq + ": logical block " + h.index + ", positions " +
        (hi >= lo ? lo + "…" + hi : "none yet") + "</p>");
    }
    lines.push("<p>In each layer's K and V tensor (shape [" + p.shape.join(", ") + "], strides [" + p.strides.join(", ") +
      "], " + p.dtype + "): elements " + b * bst + "…" + ((b + 1) * bst - 1) + ", bytes <code>" + b * bst * e + "–" +
      ((b + 1) * bst * e - 1) + "</code>, the same offsets in all " + p.num_layers + " layers' K and V.</p>");
    const rows = [];
    for (let i = 0; i < p.block_size; i++) {
      const slot = first + i;
      const pos = hs.map((h) => {
        const q = s.seqs.get(h.seq);
        const at = h.index * p.block_size + i;
        return at < q.tokens ? "seq " + h.seq + " pos " + at : "";
      }).filter((x) => x).join(", ");
      rows.push("<tr><td>" + slot + "</td><td>" + (pos || "–") + "</td><td><code>" + slot * tst * e + "–" +
        ((slot + 1) * tst * e - 1) + "</code></td></tr>");
    }
    lines.push("<table><thead><tr><th>slot</th><th>holds</th><th>bytes (K and V)</th></tr></thead><tbody>" +
      rows.join("") + "</tbody></table>");
    $("detail").innerHTML = lines.join("");
    $("detail").dataset.block = b;
    for (const el of document.querySelectorAll(".hl")) el.classList.remove("hl");
    for (const el of document.querySelectorAll('[data-id="' + b + '"], .entry[data-block="' + b + '"]')) el.classList.add("hl");
  }

  // Hovering or focusing (Tab through the table entries) explains a block.
  for (const type of ["mouseover", "focusin"]) {
    document.addEventListener(type, (ev) => {
      const el = ev.target.closest && ev.target.closest(".block[data-id], .entry[data-block]");
      if (el && view) detail(Number(el.dataset.id !== undefined ? el.dataset.id : el.dataset.block));
    });
  }

  // ----- controls -----

  function position() {
    $("position").textContent = paused ? "paused at event " + (view ? view.event : 0) + ", " + (log.length - shown) + " ahead" : "live";
    $("step").disabled = !paused || shown >= log.length;
    $("pause").textContent = paused && !playing ? "Play" : "Pause";
  }

  function stepOne() {
    if (shown < log.length) view = apply(view, log[shown++]);
    draw();
  }

  function setPaused(p) {
    paused = p;
    if (playing) clearInterval(playing);
    playing = null;
    if (!paused) {
      // Play: catch up one event at a time, then follow live.
      paused = true;
      playing = setInterval(() => {
        if (shown >= log.length) {
          clearInterval(playing);
          playing = null;
          paused = false;
          position();
          return;
        }
        stepOne();
      }, 120);
    }
    position();
  }

  function replay() {
    setPaused(true);
    view = clone(base);
    view.last = null;
    shown = 0;
    draw();
  }

  $("pause").addEventListener("click", () => setPaused(playing ? true : !paused));
  $("step").addEventListener("click", stepOne);
  $("replay").addEventListener("click", replay);
  $("keyform").addEventListener("submit", (ev) => {
    ev.preventDefault();
    key = $("key").value;
    $("key").value = "";
    status("connecting…");
    connect();
  });

  // For tests and the console: the state drawn, and a promise that
  // resolves once an event id has been applied.
  window.kvpage = {
    state: () => view,
    log: () => log.slice(),
    requests: () => Object.assign({}, requests),
    // when resolves once pred() holds and the page is drawn, checked now
    // and after every drawing or status change (no timers).
    when: (pred) => new Promise((resolve) => {
      const drawn = () => !frameAsked && pred();
      if (drawn()) resolve();
      else watchers.push({ pred: drawn, resolve });
    }),
    stop: () => {
      if (abort) abort.abort();
      abort = null;
      status("stopped");
    },
  };

  connect();
})();
