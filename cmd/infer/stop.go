package main

import "strings"

// stopMatcher finds stop strings in a sequence's generated text as it
// is decoded, token by token. A stop string may span several tokens, so
// text that could still be the start of one is held back from a stream
// until the next piece decides it; once one matches, the text is cut
// just before it and the sequence ends (finish_reason "stop").
type stopMatcher struct {
	stops   []string
	longest int
	text    []byte // generated text so far (cut at the match once matched)
	sent    int    // bytes of text already streamed
	matched bool
}

func newStopMatcher(stops []string) *stopMatcher {
	m := &stopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
			m.longest = max(m.longest, len(s))
		}
	}
	return m
}

// feed appends one decoded piece and reports whether a stop string now
// matches. Only the new piece can complete a match, so the search starts
// longest-1 bytes before it; the leftmost match wins.
func (m *stopMatcher) feed(piece []byte) bool {
	if m.matched {
		return true
	}
	from := max(0, len(m.text)-m.longest+1)
	m.text = append(m.text, piece...)
	cut := -1
	for _, s := range m.stops {
		if i := strings.Index(string(m.text[from:]), s); i >= 0 && (cut < 0 || from+i < cut) {
			cut = from + i
		}
	}
	if cut >= 0 {
		m.text = m.text[:cut]
		m.matched = true
	}
	return m.matched
}

// ready returns the text that can be streamed now: everything not yet
// sent, except a tail that is a proper prefix of some stop string.
func (m *stopMatcher) ready() []byte {
	end := len(m.text)
	if !m.matched {
		end -= m.heldBack()
	}
	if end <= m.sent {
		return nil
	}
	out := m.text[m.sent:end]
	m.sent = end
	return out
}

// rest returns whatever is unsent, held-back tail included: the stream's
// end when the sequence stopped for another reason.
func (m *stopMatcher) rest() []byte {
	out := m.text[m.sent:]
	m.sent = len(m.text)
	return out
}

// heldBack is the length of the longest suffix of text that is a proper
// prefix of a stop string.
func (m *stopMatcher) heldBack() int {
	best := 0
	for _, s := range m.stops {
		for n := min(len(s)-1, len(m.text)); n > best; n-- {
			if strings.HasSuffix(string(m.text), s[:n]) {
				best = n
				break
			}
		}
	}
	return best
}
