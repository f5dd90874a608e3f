package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stride-lm/stride/tensor"
)

// progress is a one-line progress display for long work (bench and
// compare sweeps, export, loading a big checkpoint), redrawn in place on
// stderr at most ten times a second, and only when stderr is a terminal:
// a log file or a pipe gets the commands' ordinary lines instead. It is
// forty lines of our own rather than a progress-bar module because every
// candidate brings terminal and Unicode-width packages for a feature
// that needs \r and a width of 30 characters (and dependencies need a
// strong reason here).
type progress struct {
	w     io.Writer
	label string
	total int64 // 0 = unknown: show the count only
	bytes bool  // counts are bytes (formatted as MiB)
	last  time.Time
	shown bool
}

// newProgress returns a display for label on w, or nil (whose methods do
// nothing) when w is not a terminal.
func newProgress(w io.Writer, label string, total int64) *progress {
	if !isTerminal(w) {
		return nil
	}
	return &progress{w: w, label: label, total: total}
}

// isTerminal reports whether w (through a checkedWriter) is a terminal.
func isTerminal(w io.Writer) bool {
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// set shows done units of the total.
func (p *progress) set(done int64) {
	if p == nil || time.Since(p.last) < 100*time.Millisecond && done < p.total {
		return
	}
	p.last, p.shown = time.Now(), true
	count := fmt.Sprint(done)
	if p.bytes {
		count = tensor.FormatBytes(done)
	}
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r\033[K%s %s", p.label, count)
		return
	}
	const width = 30
	filled := int(min(done, p.total) * width / p.total)
	of := fmt.Sprint(p.total)
	if p.bytes {
		of = tensor.FormatBytes(p.total)
	}
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %s/%s", p.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled), count, of)
}

// done clears the line, so the next output starts on a clean one.
func (p *progress) done() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// progressWriter counts bytes through to w and shows them on p.
type progressWriter struct {
	w io.Writer
	p *progress
	n int64
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	pw.n += int64(n)
	pw.p.set(pw.n)
	return n, err
}

// loadingNotice shows "loading PATH (SIZE)…" on a terminal while a
// checkpoint of at least 256 MiB loads (mapping it is quick; converting
// its weights to another dtype is not); the returned func clears it.
func loadingNotice(w io.Writer, path string) func() {
	st, err := os.Stat(path)
	if w == nil || err != nil || st.Size() < 256<<20 || !isTerminal(w) {
		return func() {}
	}
	fmt.Fprintf(w, "loading %s (%s)…", path, tensor.FormatBytes(st.Size()))
	return func() { fmt.Fprint(w, "\r\033[K") }
}
