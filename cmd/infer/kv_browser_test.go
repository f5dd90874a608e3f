package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The KV cache page (/kv of infer serve --debug-endpoints) in headless
// Chromium. A child `infer serve` runs the built-in stories260K on a
// 14-block pool with an API key; a proxy in front of it adds a harness
// page on the same origin, which opens /kv in an iframe and acts as the
// user: it types the key into the form the page shows, waits while the
// test sends prompts sharing a prefix (enough of them to preempt), takes
// /debug/kv snapshots meanwhile, then presses Replay and Step through
// every event, writing what the page draws after each step into
// <pre id="result"> for --dump-dom. The oracle is /debug/kv itself.

const kvKey = "kv-test-key"

const kvHarness = `<!doctype html>
<html><head><meta charset="utf-8"><title>kv harness</title></head>
<body><pre id="result">pending</pre>
<img id="gate" src="/harness/gate" alt="" width="1" height="1">
<script>
const KEY = %q, SHOT = %v;
const auth = { headers: { Authorization: "Bearer " + KEY } };
function read(d, w) {
  const blocks = [...d.querySelectorAll("#pool .block")].map((e) => ({ id: +e.dataset.id, state: e.dataset.state,
    ref: +e.dataset.ref, shared: e.classList.contains("shared"), badge: (e.querySelector(".ref") || {}).textContent || "" }));
  const tables = [...d.querySelectorAll("#tables tbody tr")].map((tr) => ({ seq: +tr.dataset.seq,
    table: [...tr.querySelectorAll(".entry")].map((e) => +e.dataset.block) }));
  const s = w.kvpage.state();
  return { event: s.event, blocks, tables, cached: d.querySelectorAll("#cached .block").length,
    usage: d.getElementById("c-usage").textContent, preemptions: d.getElementById("c-preempt").textContent,
    last: s.last };
}
function note(m) { fetch("/harness/log?" + encodeURIComponent(m)); }
async function main() {
  const f = document.createElement("iframe");
  f.width = 1400; f.height = 1000;
  if (SHOT) { document.body.style.margin = 0; document.getElementById("result").hidden = true; f.style.border = 0; }
  const loaded = new Promise((res) => f.addEventListener("load", res));
  f.src = "/kv";
  document.body.append(f);
  await loaded;
  note("loaded");
  const w = f.contentWindow, d = w.document, out = { snaps: [], steps: [] };
  await w.kvpage.when(() => !d.getElementById("keyform").hidden || d.body.dataset.connected);
  out.asked = !d.getElementById("keyform").hidden;
  note("asked " + out.asked + " " + d.getElementById("status").textContent);
  d.getElementById("key").value = KEY;
  d.getElementById("keyform").requestSubmit();
  await w.kvpage.when(() => d.body.dataset.connected && w.kvpage.state());
  out.keyField = d.getElementById("key").value;
  note("connected");
  out.stored = w.localStorage.length + w.sessionStorage.length;
  await fetch("/harness/ready");
  let finished = false;
  const go = fetch("/harness/go").then((r) => r.json()).then((j) => { finished = true; return j; });
  while (!finished && out.snaps.length < 400 && !SHOT) out.snaps.push(await (await fetch("/debug/kv", auth)).json());
  const final = await go;
  note("load done " + JSON.stringify(final) + " snaps " + out.snaps.length);
  await w.kvpage.when(() => w.kvpage.state().event >= final.event);
  note("caught up");
  out.final = read(d, w);
  out.finalSnap = await (await fetch("/debug/kv", auth)).json();
  d.getElementById("replay").click();
  out.steps.push(read(d, w));
  let busiest = 0, most = -1;
  while (!d.getElementById("step").disabled) {
    d.getElementById("step").click();
    const r = read(d, w);
    const used = r.blocks.filter((b) => b.state === "used").length + (r.blocks.some((b) => b.shared) ? 100 : 0);
    if (used > most) { most = used; busiest = out.steps.length; }
    const sh = d.querySelector("#pool .block.shared");
    if (!out.hover && sh) {
      sh.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
      out.hover = { block: +sh.dataset.id, text: d.getElementById("detail").textContent };
    }
    if (!SHOT) out.steps.push(r); else out.steps.push({ event: r.event });
  }
  if (SHOT) {
    d.getElementById("replay").click();
    for (let i = 0; i < busiest; i++) d.getElementById("step").click();
    const el = d.querySelector("#pool .block.shared") || d.querySelector("#pool .block.used");
    if (el) el.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
  }
  w.kvpage.stop();
  await report(JSON.stringify(out));
}
// report hands the result to the test, which then lets the gate image
// load: the document's load event, which Chromium waits for, comes last.
async function report(text) {
  document.getElementById("result").textContent = text;
  await fetch("/harness/result", { method: "POST", body: text });
}
main().catch((e) => report("HARNESS ERROR " + e + "\n" + e.stack));
</script></body></html>`

// pageBlock and pageView are what the harness reads off the page.
type pageBlock struct {
	ID     int    `json:"id"`
	State  string `json:"state"`
	Ref    int    `json:"ref"`
	Shared bool   `json:"shared"`
	Badge  string `json:"badge"`
}

type pageTable struct {
	Seq   int     `json:"seq"`
	Table []int32 `json:"table"`
}

type kvPageView struct {
	Event  uint64      `json:"event"`
	Blocks []pageBlock `json:"blocks"`
	Tables []pageTable `json:"tables"`
	Last   *struct {
		Type      string `json:"type"`
		Preempted []struct{ Seq int }
		Freed     []int32 `json:"freed"`
	} `json:"last"`
}

// kvSnapshotJSON is the part of /debug/kv the test compares.
type kvSnapshotJSON struct {
	Event  uint64 `json:"event"`
	Check  string `json:"check"`
	Blocks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Ref   int    `json:"ref"`
	} `json:"blocks"`
	Sequences []struct {
		Seq   int     `json:"seq"`
		Table []int32 `json:"table"`
	} `json:"sequences"`
	Counters struct {
		Preemptions int `json:"preemptions"`
	} `json:"counters"`
	Pool struct {
		BlockSize int   `json:"block_size"`
		ElemSize  int   `json:"elem_size"`
		Strides   []int `json:"strides"`
	} `json:"pool"`
}

type kvHarnessResult struct {
	Asked     bool             `json:"asked"`
	KeyField  string           `json:"keyField"`
	Stored    int              `json:"stored"`
	Snaps     []kvSnapshotJSON `json:"snaps"`
	Final     kvPageView       `json:"final"`
	FinalSnap kvSnapshotJSON   `json:"finalSnap"`
	Steps     []kvPageView     `json:"steps"`
	Hover     *struct {
		Block int    `json:"block"`
		Text  string `json:"text"`
	} `json:"hover"`
}

// kvHarnessServer proxies to infer serve at base and adds the harness;
// load runs between the harness's ready and go requests, and its result
// (the final event id) answers go. It records every URL requested.
func kvHarnessServer(t *testing.T, base string, shot bool, load func() uint64) (*httptest.Server, *[]string, <-chan string) {
	target, _ := url.Parse(base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // SSE: every write at once
	ready, gate, result := make(chan struct{}), make(chan struct{}), make(chan string, 1)
	var once, reported sync.Once
	var mu sync.Mutex
	var urls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		urls = append(urls, r.URL.String())
		mu.Unlock()
		switch r.URL.Path {
		case "/harness.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, kvHarness, kvKey, shot)
		case "/harness/ready":
			once.Do(func() { close(ready) })
		case "/harness/go":
			<-ready
			fmt.Fprintf(w, `{"event":%d}`, load())
		case "/harness/log":
			t.Logf("harness: %s", r.URL.RawQuery)
		case "/harness/result":
			b, _ := io.ReadAll(r.Body)
			reported.Do(func() { result <- string(b); close(gate) })
		case "/harness/gate":
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &urls, result
}

// kvLoad sends prompts sharing a prefix, long enough together to need
// more than the pool, and returns /debug/kv's event id once all are done.
func kvLoad(t *testing.T, base string) uint64 {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"stories260K","prompt":"Once upon a time, there was a little girl named Lily. She loved to play outside %d","max_tokens":110,"temperature":0,"ignore_eos":true}`, i)
			req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+kvKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Errorf("completion %d: %d %s", i, res.StatusCode, b)
			}
		})
	}
	wg.Wait()
	snap := kvSnapshotOf(t, base)
	return snap.Event
}

// kvSnapshotOf reads /debug/kv; it runs in the proxy's handler, so a
// failure is an Error (the harness then sees event 0 and the test fails
// on what it draws).
func kvSnapshotOf(t *testing.T, base string) kvSnapshotJSON {
	var s kvSnapshotJSON
	req, _ := http.NewRequest("GET", base+"/debug/kv", nil)
	req.Header.Set("Authorization", "Bearer "+kvKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return s
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil || s.Check != "ok" {
		t.Errorf("/debug/kv: %v %+v", err, s)
	}
	return s
}

func TestKVPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test starts infer serve and Chromium")
	}
	browser := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, base := startServe(t, "--debug-endpoints", "--debug-show-text", "--api-key", kvKey, "--num-blocks", "14")
	srv, urls, result := kvHarnessServer(t, base, false, func() uint64 { return kvLoad(t, base) })
	dom := dumpDOM(ctx, t, browser, srv.URL+"/harness.html")
	var text string
	select {
	case text = <-result:
	default:
		m := regexp.MustCompile(`(?s)<pre id="result">(.*?)</pre>`).FindStringSubmatch(dom)
		t.Fatalf("the harness reported nothing; its page:\n%.3000s", html.UnescapeString(fmt.Sprint(m)))
	}
	var res kvHarnessResult
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("harness: %.3000s", text)
	}
	if !res.Asked || res.KeyField != "" || res.Stored != 0 {
		t.Errorf("the page should ask for the key, clear its field and store nothing: %+v", res)
	}
	for _, u := range *urls {
		if strings.Contains(u, kvKey) {
			t.Errorf("the key appears in a URL: %s", u)
		}
	}
	checkKVDrawing(t, "final", res.Final, res.FinalSnap)
	if len(res.Steps) < 10 || res.FinalSnap.Counters.Preemptions == 0 {
		t.Fatalf("%d replay steps, %d preemptions: the load should run many steps and preempt", len(res.Steps), res.FinalSnap.Counters.Preemptions)
	}
	compared := 0
	for _, s := range res.Snaps {
		for _, st := range res.Steps {
			if st.Event == s.Event {
				checkKVDrawing(t, fmt.Sprintf("event %d", s.Event), st, s)
				compared++
				break
			}
		}
	}
	if compared == 0 {
		t.Errorf("none of %d snapshots taken during the load matched a replayed event", len(res.Snaps))
	}
	checkKVSharingAndPreemption(t, res.Steps)
	checkKVHover(t, res)
	t.Logf("%d snapshots compared with the replayed page, %d steps", compared, len(res.Steps))

	// The picture for docs/serving.md: a busy step of a second replay.
	shot := filepath.Join(t.TempDir(), "kv-page.png")
	srv2, _, _ := kvHarnessServer(t, base, true, func() uint64 { return kvLoad(t, base) })
	screenshot(ctx, t, browser, srv2.URL+"/harness.html", shot)
	t.Logf("screenshot: %s", shot)
	if dst := os.Getenv("STRIDE_KV_SCREENSHOT"); dst != "" {
		b, err := os.ReadFile(shot)
		if err == nil {
			err = os.WriteFile(dst, b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
}

// checkKVDrawing compares what the page draws with a /debug/kv snapshot
// of the same event: every block's state and refcount, shared blocks
// badged ×refcount, and each sequence's table.
func checkKVDrawing(t *testing.T, what string, v kvPageView, s kvSnapshotJSON) {
	t.Helper()
	if v.Event != s.Event || len(v.Blocks) != len(s.Blocks) {
		t.Fatalf("%s: the page draws event %d with %d blocks, the snapshot is event %d with %d", what, v.Event, len(v.Blocks), s.Event, len(s.Blocks))
	}
	for i, b := range s.Blocks {
		p := v.Blocks[i]
		if p.ID != b.ID || p.State != b.State || p.Ref != b.Ref || p.Shared != (b.Ref > 1) || (b.Ref > 1) != (p.Badge == fmt.Sprintf("×%d", b.Ref)) {
			t.Errorf("%s: block %d drawn %+v, snapshot %+v", what, b.ID, p, b)
		}
	}
	var drawn, want []string
	for _, r := range v.Tables {
		drawn = append(drawn, fmt.Sprint(r.Seq, r.Table))
	}
	for _, q := range s.Sequences {
		want = append(want, fmt.Sprint(q.Seq, q.Table))
	}
	if !slices.Equal(drawn, want) {
		t.Errorf("%s: the page's tables %v, /debug/kv's %v", what, drawn, want)
	}
}

// checkKVSharingAndPreemption: some step draws a block shared with
// refcount > 1, and at a step that preempts, the victim's row goes and
// the blocks it held alone are freed.
func checkKVSharingAndPreemption(t *testing.T, steps []kvPageView) {
	t.Helper()
	shared, preempted := false, false
	for i := 1; i < len(steps); i++ {
		for _, b := range steps[i].Blocks {
			shared = shared || b.Ref > 1 && b.Shared
		}
		last := steps[i].Last
		if last == nil || len(last.Preempted) == 0 {
			continue
		}
		for _, p := range last.Preempted {
			preempted = true
			for _, r := range steps[i].Tables {
				if r.Seq == p.Seq {
					t.Errorf("event %d: preempted sequence %d is still drawn", steps[i].Event, p.Seq)
				}
			}
			for _, r := range steps[i-1].Tables {
				if r.Seq != p.Seq {
					continue
				}
				for _, b := range r.Table {
					if steps[i-1].Blocks[b].Ref == 1 && !slices.Contains(last.Freed, b) {
						t.Errorf("event %d: block %d of preempted sequence %d is not freed", steps[i].Event, b, p.Seq)
					}
				}
			}
		}
	}
	if !shared || !preempted {
		t.Errorf("the replay drew shared blocks %v and a preemption %v; want both", shared, preempted)
	}
}

// screenshot has Chromium render url into png once the page is idle.
func screenshot(ctx context.Context, t *testing.T, browser, url, png string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--no-first-run", "--user-data-dir="+t.TempDir(), "--hide-scrollbars",
		"--window-size=1400,1000", "--virtual-time-budget=60000", "--screenshot="+png, url)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s --screenshot: %v\n%s", browser, err, errb.String())
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
}

// checkKVHover: hovering a shared block shows its slots, refcount, the
// cache tensors' strides as infer trace prints them for reshape_and_cache
// (the storage it writes, k_cache), and the byte ranges those strides
// give the block and its first slot.
func checkKVHover(t *testing.T, res kvHarnessResult) {
	t.Helper()
	if res.Hover == nil {
		t.Fatal("the harness hovered no shared block")
	}
	p := res.FinalSnap.Pool
	_, stdout, _ := cli(t, "trace", "--output", "json", "--path", "fused")
	var traced []struct {
		Steps []struct {
			Strides []int  `json:"strides"`
			Storage string `json:"storage"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(stdout), &traced); err != nil || len(traced) != 1 {
		t.Fatalf("infer trace --output json: %v\n%.500s", err, stdout)
	}
	found := false
	for _, r := range traced[0].Steps {
		if r.Storage == "shared(k_cache)" {
			found = true
			if !slices.Equal(r.Strides, p.Strides) {
				t.Errorf("infer trace's cache strides %v, /debug/kv's %v", r.Strides, p.Strides)
			}
		}
	}
	if !found {
		t.Errorf("infer trace printed no reshape_and_cache row:\n%.1000s", stdout)
	}
	b, bs, e := res.Hover.Block, p.BlockSize, p.ElemSize
	bst, tst := p.Strides[0], p.Strides[1]
	for _, want := range []string{
		fmt.Sprintf("Block %d used, refcount", b),
		fmt.Sprintf("slots %d…%d", b*bs, b*bs+bs-1),
		fmt.Sprintf("strides [%s]", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(p.Strides)), ", "), "[]")),
		fmt.Sprintf("bytes %d–%d", b*bst*e, (b+1)*bst*e-1),
		fmt.Sprintf("%d%d–%d", b*bs, b*bs*tst*e, (b*bs+1)*tst*e-1),
	} {
		if !strings.Contains(res.Hover.Text, want) {
			t.Errorf("hovering block %d: %q lacks %q", b, res.Hover.Text, want)
		}
	}
}
