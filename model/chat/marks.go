package chat

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/stride-lm/stride/model/tokenizer"
)

// Content is told apart from markup by marking, before rendering, every
// control-token text a message holds: openMark before it, closeMark
// after. The template renders the marked messages; what lies between the
// marks in its output is literal (message text), the rest is markup.
// Messages without control-token text are not changed at all, so the
// template sees exactly what it would see unmarked. The marks are
// Unicode noncharacters, which no interchanged text holds; a message that
// does hold one is refused.
const (
	openMark  = "\uFDD0"
	closeMark = "\uFDD1"
)

// renderMarked renders msgs with their control-token texts (controls)
// marked, and returns the text with the marks removed and its segments
// (literal where a message's control-token text lies).
func (t *Template) renderMarked(ctx context.Context, msgs []Message, o Options, controls []string) (string, []tokenizer.Segment, error) {
	marked := msgs
	if len(controls) > 0 {
		sorted := append([]string(nil), controls...)
		sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
		pairs := make([]string, 0, 2*len(sorted))
		for _, c := range sorted {
			pairs = append(pairs, c, openMark+c+closeMark)
		}
		r := strings.NewReplacer(pairs...)
		marked = make([]Message, len(msgs))
		for i, m := range msgs {
			if strings.Contains(m.Content, openMark) || strings.Contains(m.Content, closeMark) {
				return "", nil, fmt.Errorf("chat: message %d holds the noncharacter U+FDD0 or U+FDD1, which a message may not hold", i+1)
			}
			marked[i] = Message{Role: m.Role, Content: r.Replace(m.Content)}
		}
	}
	out, err := t.Render(ctx, marked, o)
	if err != nil {
		return "", nil, err
	}
	segs := splitMarked(out)
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String(), segs, nil
}

// splitMarked cuts rendered text at its marks: literal between an open
// and the next close mark (to the end if a template cut the close mark
// off), markup elsewhere; the marks themselves are dropped.
func splitMarked(s string) []tokenizer.Segment {
	var segs []tokenizer.Segment
	add := func(text string, literal bool) {
		if text != "" {
			segs = append(segs, tokenizer.Segment{Text: text, Literal: literal})
		}
	}
	for s != "" {
		i := strings.Index(s, openMark)
		if i < 0 {
			add(strings.ReplaceAll(s, closeMark, ""), false)
			break
		}
		add(strings.ReplaceAll(s[:i], closeMark, ""), false)
		s = s[i+len(openMark):]
		j := strings.Index(s, closeMark)
		if j < 0 {
			j = len(s)
		}
		add(strings.ReplaceAll(s[:j], openMark, ""), true)
		s = s[min(len(s), j+len(closeMark)):]
	}
	return segs
}
