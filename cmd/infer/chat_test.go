package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var turnStats = regexp.MustCompile(`\[turn (\d+): (\d+) prompt tokens \((\d+) cached\), (\d+) generated, [0-9.]+ tok/s, (\w+)\]`)

// TestChatPiped: two piped lines are two turns; the first reply is the
// text generate continues run.c's rendering of the turn with; the
// second turn reuses the first one's KV blocks (cached > 0) and answers
// exactly as without prefix sharing; EOF ends with status 0.
func TestChatPiped(t *testing.T) {
	models := sharedModels(t)
	base := []string{"-m", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--temperature", "0", "-n", "40"}
	code, out, errs := cliIn(t, "Hello\n\nTell me a story\n", append([]string{"chat"}, base...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	stats := turnStats.FindAllStringSubmatch(errs, -1)
	if len(stats) != 2 {
		t.Fatalf("want two statistics lines on stderr, got %q", errs)
	}
	if cached, _ := strconv.Atoi(stats[1][3]); cached == 0 {
		t.Errorf("turn 2 computed its whole prompt again: %s", stats[1][0])
	}
	replies := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	code, gen, errs := cli(t, append([]string{"generate", "-p", "[INST] Hello [/INST]"}, base...)...)
	if code != 0 || !strings.HasPrefix(gen, "[INST] Hello [/INST]") {
		t.Fatalf("generate: exit %d (%s): %q", code, errs, gen)
	}
	if want := strings.TrimPrefix(strings.TrimSuffix(gen, "\n"), "[INST] Hello [/INST]"); !strings.HasPrefix(out, want+"\n") {
		t.Errorf("first reply %q, want generate's continuation %q", replies[0], want)
	}
	code, noShare, errs := cliIn(t, "Hello\n\nTell me a story\n", append([]string{"chat", "--prefix-sharing=false"}, base...)...)
	if code != 0 || noShare != out {
		t.Errorf("without prefix sharing (exit %d, %s):\n%q\nwith:\n%q", code, errs, noShare, out)
	}
	if m := turnStats.FindAllStringSubmatch(errs, -1); len(m) != 2 || m[1][3] != "0" {
		t.Errorf("prefix sharing off still reports cached tokens: %q", errs)
	}
	// An empty stdin is a session without turns.
	if code, out, errs := cliIn(t, "", append([]string{"chat"}, base...)...); code != 0 || out != "" {
		t.Errorf("empty stdin: exit %d, %q, %q", code, out, errs)
	}
}
