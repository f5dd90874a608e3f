package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stride-lm/stride/tensor/layoutexpr"
	"github.com/stride-lm/stride/tensor/testfixture"
	"github.com/stride-lm/stride/web/explore"
)

// The layout explorer in a real browser: headless Chromium loads the
// built page (scripts/build-web.sh) inside a harness page, which drives it
// through its DOM like a user would (choosing presets, typing programs,
// clicking Evaluate, dispatching mouseover on SVG cells) and writes what
// the page shows into <pre id="result">. --dump-dom prints the harness's
// DOM once the page is idle, so no DevTools client (and no dependency) is
// needed. The oracle for the table is infer layout --output json, run
// in-process on the very program text the page holds; for hovering, the
// storage index offset + Σ coordinate·stride computed here from that JSON.

// chromium returns the browser to drive: $CHROMIUM, or the first of
// Debian's and Google's names on PATH. Outside CI a missing browser skips
// the test with the reason; under CI=true (.ci/run installs Debian's
// chromium) it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const reason = "no chromium on PATH (apt-get install chromium, or set CHROMIUM); .ci/run installs it"
	if testfixture.InCI() {
		t.Fatal(reason + "; CI=true requires it")
	}
	t.Skip(reason)
	return ""
}

// browserCase is one program the harness types into the page, with the
// grid cells (coordinates "i,j") and storage cells to hover on one step.
type browserCase struct {
	Program string   `json:"program"`
	Step    int      `json:"step,omitempty"`
	Coords  []string `json:"coords,omitempty"`
	Stores  []int    `json:"stores,omitempty"`
}

var browserCases = []browserCase{
	{Program: "x = arange(12).view(3, 4).t()", Step: 3, Coords: []string{"1,2", "3,0"}, Stores: []int{5}},
	{Program: "x = arange(3).view(3, 1); e = x.expand(3, 4)", Step: 3, Coords: []string{"2,3"}, Stores: []int{1}},
	{Program: "w = arange(10).unfold(0, 4, 2)", Step: 2, Coords: []string{"1,2", "3,3"}, Stores: []int{4, 6}},
	{Program: "x = empty(2, 3, 4).permute(2, 0, 1)[1:3]", Step: 3, Coords: []string{"1,1,2"}, Stores: []int{14}},
	{Program: "x = arange(12).view(3, 4).t(); y = x.view(12)"},
	{Program: "x = empty(3,4)["},
	{Program: "a = empty(4096, 4096)\nb = a.t().contiguous()\nc = b.view(16, -1)[::3]"},
}

const harnessHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>explorer harness</title></head>
<body><pre id="result">pending</pre>
<script>
const CASES = %s;
const EXPR = %s;
function frame(src) {
  return new Promise((res, rej) => {
    const f = document.createElement("iframe");
    f.width = 1200; f.height = 900;
    f.addEventListener("load", () => f.contentWindow.explorer.ready.then(() => res(f.contentWindow), rej));
    f.src = src;
    document.body.append(f);
  });
}
function read(d) {
  const box = d.getElementById("error");
  const cur = d.querySelector('#rows tbody tr[aria-current="true"]');
  return {
    current: cur ? Number(cur.dataset.step) : 0,
    rows: [...d.querySelectorAll("#rows tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent)),
    error: box.hidden ? null : { msg: d.getElementById("errmsg").textContent,
      head: d.querySelector("#error .msg").textContent, caret: d.getElementById("errcaret").textContent },
  };
}
function lit(d) {
  return { stores: [...d.querySelectorAll("#drawing .cell.store.hl")].map((e) => Number(e.dataset.idx)),
           views: [...d.querySelectorAll("#drawing .cell.view.hl")].map((e) => e.dataset.coord) };
}
async function main() {
  const w = await frame("index.html");
  const d = w.document;
  const out = { presets: [], cases: [], expr: null };
  const sel = d.getElementById("preset");
  for (const o of [...sel.options]) {
    if (o.value === "") continue;
    sel.value = o.value;
    sel.dispatchEvent(new Event("change"));
    out.presets.push(Object.assign({ name: o.textContent, program: d.getElementById("program").value }, read(d)));
  }
  for (const c of CASES) {
    d.getElementById("program").value = c.program;
    d.getElementById("program").dispatchEvent(new Event("input"));
    d.getElementById("run").click();
    const r = read(d);
    r.hovers = [];
    if (c.step) {
      d.querySelector('#rows tbody tr[data-step="' + c.step + '"]').click();
      for (const coord of c.coords || []) {
        const g = d.querySelector('#drawing .cell.view[data-coord="' + coord + '"]');
        if (!g) { r.hovers.push({ coord, missing: true }); continue; }
        g.querySelector("rect").dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
        r.hovers.push(Object.assign({ coord }, lit(d)));
      }
      for (const idx of c.stores || []) {
        const g = d.querySelector('#drawing .cell.store[data-idx="' + idx + '"]');
        if (!g) { r.hovers.push({ store: idx, missing: true }); continue; }
        g.querySelector("text").dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
        r.hovers.push(Object.assign({ store: idx }, lit(d)));
      }
    }
    if (c.step) {
      // Keyboard: focus the grid's tab stop, press ArrowRight then
      // ArrowDown; focus moves a cell each time and lights like hover.
      const first = d.querySelector('#drawing .cell.view[tabindex="0"]');
      first.focus();
      first.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
      d.activeElement.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
      r.keys = Object.assign({ first: first.dataset.coord, focused: d.activeElement.dataset ? d.activeElement.dataset.coord || "" : "" }, lit(d));
    }
    r.url = w.location.search;
    out.cases.push(r);
  }
  // A shared link: ?expr= is evaluated on load, &step= picks the step drawn.
  const w2 = await frame("index.html?expr=" + encodeURIComponent(EXPR) + "&step=2");
  out.expr = Object.assign({ program: w2.document.getElementById("program").value }, read(w2.document));
  document.getElementById("result").textContent = JSON.stringify(out);
}
main().catch((e) => { document.getElementById("result").textContent = "HARNESS ERROR " + e + "\n" + e.stack; });
</script></body></html>`

type pageView struct {
	Name    string     `json:"name"`
	Program string     `json:"program"`
	Rows    [][]string `json:"rows"`
	Error   *struct {
		Msg, Head, Caret string
	} `json:"error"`
	Hovers []struct {
		Coord   string   `json:"coord"`
		Store   *int     `json:"store"`
		Missing bool     `json:"missing"`
		Stores  []int    `json:"stores"`
		Views   []string `json:"views"`
	} `json:"hovers"`
	Keys *struct {
		First, Focused string
		Stores         []int
	} `json:"keys"`
	URL     string `json:"url"`
	Current int    `json:"current"` // the step drawn (the row marked aria-current)
}

type harnessResult struct {
	Presets []pageView `json:"presets"`
	Cases   []pageView `json:"cases"`
	Expr    pageView   `json:"expr"`
}

const exprProgram = "x = empty(2, 3).t()\ny = x.contiguous()"

func TestExplorerInBrowser(t *testing.T) {
	if testing.Short() {
		// .ci/run's -race -short pass; the plain go test ./... runs it.
		t.Skip("-short: the browser test builds the wasm and starts Chromium")
	}
	browser := chromium(t)
	root := explore.CheckoutRoot()
	if root == "" {
		t.Fatal("not inside the Stride checkout")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dist := t.TempDir()
	var log bytes.Buffer
	if err := explore.Build(ctx, root, dist, &log); err != nil {
		t.Fatalf("scripts/build-web.sh: %v\n%s", err, log.String())
	}
	t.Log(strings.TrimSpace(log.String()))
	// The build wrote only the page's files and its marker (the marker is
	// what lets explore rebuild the folder: web/explore's TestClaimBuildDir).
	if !explore.Built(dist) {
		t.Error("the build left no complete page")
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	page := map[string]bool{"index.html": true, "app.js": true, "style.css": true, "wasm_exec.js": true, "layout.wasm": true, ".stride-explore": true}
	for _, e := range entries {
		if !page[e.Name()] || !e.Type().IsRegular() {
			t.Errorf("the build left %s beside the page", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(dist, ".stride-explore")); err != nil {
		t.Errorf("the build left no marker: %v", err)
	}

	cases, _ := json.Marshal(browserCases)
	expr, _ := json.Marshal(exprProgram)
	site := explore.Handler(dist)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/harness.html" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, harnessHTML, cases, expr)
			return
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()

	dom := dumpDOM(ctx, t, browser, srv.URL+"/harness.html")
	m := regexp.MustCompile(`(?s)<pre id="result">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no result in the harness page:\n%.2000s", dom)
	}
	text := html.UnescapeString(m[1])
	var res harnessResult
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("harness did not finish: %.2000s", text)
	}

	if len(res.Presets) < 7 {
		t.Errorf("%d presets, want the 7 the issue names", len(res.Presets))
	}
	for _, p := range res.Presets {
		t.Run("preset/"+p.Name, func(t *testing.T) { checkPage(t, p) })
	}
	for i, c := range res.Cases {
		c.Program = browserCases[i].Program
		t.Run(fmt.Sprintf("case%d", i), func(t *testing.T) {
			checkPage(t, c)
			if want := "?expr=" + urlQueryEscape(c.Program); c.URL != want {
				t.Errorf("URL query %q, want %q", c.URL, want)
			}
			checkHovers(t, browserCases[i], c)
			checkKeys(t, browserCases[i], c)
			if n := len(c.Rows); browserCases[i].Step == 0 && c.Error == nil && c.Current != n {
				t.Errorf("after Evaluate step %d is drawn, want the last, %d", c.Current, n)
			}
		})
	}
	t.Run("expr", func(t *testing.T) {
		if res.Expr.Program != exprProgram {
			t.Fatalf("?expr= loaded %q, want %q", res.Expr.Program, exprProgram)
		}
		if res.Expr.Current != 2 {
			t.Errorf("&step=2 drew step %d", res.Expr.Current)
		}
		checkPage(t, res.Expr)
	})
}

// urlQueryEscape is URLSearchParams' encoding (form encoding: spaces as
// +, * kept, ~ escaped), which the page uses to write ?expr=.
func urlQueryEscape(s string) string {
	return strings.NewReplacer("%2A", "*", "~", "%7E").Replace(url.QueryEscape(s))
}

// dumpDOM runs headless Chromium on url and returns the DOM once the page
// has been idle for its virtual-time budget. As root, Chromium needs
// --no-sandbox.
func dumpDOM(ctx context.Context, t *testing.T, browser, url string) string {
	t.Helper()
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--no-first-run", "--user-data-dir="+profile,
		"--virtual-time-budget=60000", "--dump-dom", url)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, errb.String())
	}
	return out.String()
}

// checkPage compares the page's table with infer layout --output json for
// the same program, and its error box with the command's error.
func checkPage(t *testing.T, p pageView) {
	t.Helper()
	code, stdout, stderr := cli(t, "layout", "--output", "json", p.Program)
	var rows []layoutexpr.JSONRow
	if stdout != "" {
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
			t.Fatalf("infer layout --output json: %v\n%s", err, stdout)
		}
	}
	var want [][]string
	for i, r := range rows {
		cells := []string{strconv.Itoa(i + 1), deref(r.Var), r.Op, r.DType}
		if r.Error != nil {
			cells = append(cells, *r.Error)
		} else {
			cells = append(cells, list(r.Shape), list(r.Strides), strconv.Itoa(*r.Offset), pyBool(*r.Contiguous),
				deref(r.MemoryFormat), *r.Storage, bytesText(*r.CopiedBytes))
		}
		want = append(want, cells)
	}
	if fmt.Sprint(p.Rows) != fmt.Sprint(want) {
		t.Errorf("%q: the page's table\n%q\ninfer layout's rows\n%q", p.Program, p.Rows, want)
	}
	switch {
	case code == 0:
		if p.Error != nil {
			t.Errorf("%q: the page shows an error %+v; infer layout succeeds", p.Program, *p.Error)
		}
	case p.Error == nil:
		t.Errorf("%q: infer layout fails (%s) and the page shows no error", p.Program, strings.TrimSpace(stderr))
	case len(rows) > 0 && rows[len(rows)-1].Error != nil:
		// A failing step: PyTorch's message, the same as the JSON's.
		if last := *rows[len(rows)-1].Error; p.Error.Msg != last || !strings.Contains(stderr, last) {
			t.Errorf("%q: the page's error %q, infer layout's %q", p.Program, p.Error.Msg, last)
		}
	default:
		// A syntax error: the message and column infer layout prints.
		m := regexp.MustCompile(`column (\d+): (.*)`).FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("unexpected infer layout error %q", stderr)
		}
		if p.Error.Msg != m[2] || !strings.Contains(p.Error.Head, "column "+m[1]+":") {
			t.Errorf("%q: the page says %q %q; infer layout says column %s: %s", p.Program, p.Error.Head, p.Error.Msg, m[1], m[2])
		}
		col, _ := strconv.Atoi(m[1])
		if lines := strings.Split(p.Error.Caret, "\n"); len(lines) != 2 || lines[1] != strings.Repeat(" ", col-1)+"^" {
			t.Errorf("%q: caret %q is not under column %d", p.Program, p.Error.Caret, col)
		}
	}
}

// checkHovers checks that hovering grid cell c highlights exactly the
// storage cell offset + Σ c·stride, plus every grid cell reading that same
// cell, and that hovering a storage cell highlights exactly its readers.
func checkHovers(t *testing.T, bc browserCase, p pageView) {
	t.Helper()
	if bc.Step == 0 {
		return
	}
	_, stdout, _ := cli(t, "layout", "--output", "json", bc.Program)
	var rows []struct {
		Shape, Strides []int
		Offset         int
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatal(err)
	}
	r := rows[bc.Step-1]
	readers := func(idx int) []string { // every coordinate of the (small) view that reads idx
		var out []string
		n := 1
		for _, s := range r.Shape {
			n *= s
		}
		c := make([]int, len(r.Shape))
		for k := 0; k < n; k++ {
			s := r.Offset
			for d := range c {
				s += c[d] * r.Strides[d]
			}
			if s == idx {
				out = append(out, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c)), ","), "[]"))
			}
			for d := len(c) - 1; d >= 0; d-- {
				if c[d]++; c[d] < r.Shape[d] {
					break
				}
				c[d] = 0
			}
		}
		return out
	}
	if len(p.Hovers) != len(bc.Coords)+len(bc.Stores) {
		t.Fatalf("%d hovers recorded, want %d", len(p.Hovers), len(bc.Coords)+len(bc.Stores))
	}
	for i, h := range p.Hovers {
		if h.Missing {
			t.Errorf("hover %d: the cell is not drawn", i)
			continue
		}
		var idx int
		if i < len(bc.Coords) {
			idx = r.Offset
			for d, f := range strings.Split(bc.Coords[i], ",") {
				v, _ := strconv.Atoi(f)
				idx += v * r.Strides[d]
			}
		} else {
			idx = bc.Stores[i-len(bc.Coords)]
		}
		if fmt.Sprint(h.Stores) != fmt.Sprint([]int{idx}) {
			t.Errorf("hover %d (grid %q): storage cells %v lit, want [%d]", i, h.Coord, h.Stores, idx)
		}
		if want := readers(idx); fmt.Sprint(h.Views) != fmt.Sprint(want) {
			t.Errorf("hover %d (storage %d): grid cells %v lit, want %v", i, idx, h.Views, want)
		}
	}
}

// checkKeys checks the keyboard path: from the grid's first cell,
// ArrowRight then ArrowDown focuses the cell one right and one down (for
// a 2-d or deeper view), and the storage cell it reads lights up.
func checkKeys(t *testing.T, bc browserCase, p pageView) {
	t.Helper()
	if bc.Step == 0 {
		return
	}
	if p.Keys == nil {
		t.Fatal("no keyboard result")
	}
	_, stdout, _ := cli(t, "layout", "--output", "json", bc.Program)
	var rows []struct {
		Shape, Strides []int
		Offset         int
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatal(err)
	}
	r := rows[bc.Step-1]
	nd := len(r.Shape)
	coord := make([]int, nd)
	coord[nd-1], coord[nd-2] = 1, 1
	want := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(coord)), ","), "[]")
	idx := r.Offset + r.Strides[nd-1] + r.Strides[nd-2]
	if p.Keys.First != strings.Trim(strings.Join(strings.Fields(fmt.Sprint(make([]int, nd))), ","), "[]") ||
		p.Keys.Focused != want || fmt.Sprint(p.Keys.Stores) != fmt.Sprint([]int{idx}) {
		t.Errorf("keyboard: from %q, Right+Down focused %q lighting storage %v; want %q lighting [%d]",
			p.Keys.First, p.Keys.Focused, p.Keys.Stores, want, idx)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func list(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// bytesText is the page's copied column: exact bytes, and from 1 KiB on
// the size in the largest binary unit with one decimal.
func bytesText(n int64) string {
	s := strconv.FormatInt(n, 10) + " B"
	if n < 1024 {
		return s
	}
	v, u := float64(n), -1
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return s + fmt.Sprintf(" (%.1f %s)", v, units[u])
}
