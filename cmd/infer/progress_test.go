package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressOnlyOnTerminals: a pipe or buffer gets no progress
// display (nil, whose methods do nothing); a terminal gets a bar redrawn
// in place and cleared at the end.
func TestProgressOnlyOnTerminals(t *testing.T) {
	var buf bytes.Buffer
	if p := newProgress(&checkedWriter{w: &buf}, "x", 4); p != nil {
		t.Fatal("progress on a buffer")
	}
	var nilBar *progress
	nilBar.set(3) // must not panic
	nilBar.done()
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	p := newProgress(&checkedWriter{w: slave}, "bench", 4)
	if p == nil {
		t.Fatal("no progress on a terminal")
	}
	p.set(2)
	p.set(4) // the end is always drawn
	p.done()
	wants := []string{"bench [" + strings.Repeat("#", 15) + strings.Repeat(".", 15) + "] 2/4", "bench [" + strings.Repeat("#", 30) + "] 4/4", "\r\033[K"}
	// One Read may return part of what was written (a loaded machine
	// hands the terminal's buffer over in pieces): read until every
	// expected piece is there, or the deadline passes.
	_ = master.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 4096)
	var got string
	for !containsAll(got, wants) {
		n, err := master.Read(b)
		got += string(b[:n])
		if err != nil {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("terminal shows %q, lacks %q", got, want)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
