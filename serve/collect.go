package serve

import (
	"strings"
	"time"
)

// collector accumulates a job's choices as their events arrive: text,
// logprobs, finish, timing. It serves both the whole response and the
// stream.
type collector struct {
	s       *Server
	j       *job
	entry   *accessEntry
	choices []choiceState
	first   time.Time // the job's first token
}

type choiceState struct {
	text    strings.Builder
	prev    int // the token before the next one (for TokenBytes)
	offset  int // bytes of token text so far (text_offset)
	chatLP  []chatTokenLogprob
	textLP  *textLogprobs
	fin     Finish
	done    bool
	first   time.Time
	started bool
}

func newCollector(s *Server, j *job, entry *accessEntry) *collector {
	c := &collector{s: s, j: j, entry: entry, choices: make([]choiceState, j.choiceCount())}
	for i := range c.choices {
		p := j.prompts[i/j.g.n]
		c.choices[i].prev = p[len(p)-1]
		if j.g.logprobs >= 0 && !j.g.chat {
			c.choices[i].textLP = &textLogprobs{Tokens: []string{}, TokenLogprobs: []float64{},
				TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
		}
	}
	return c
}

// token records one token of choice i and returns its logprobs entry for
// a chunk (nil without logprobs).
func (c *collector) token(i int, t Token) (chat *chatLogprobs, text *textLogprobs) {
	st := &c.choices[i]
	now := time.Now()
	if !st.started {
		st.started, st.first = true, now
		if c.first.IsZero() {
			c.first = now
		}
	}
	st.text.WriteString(t.Text)
	piece := c.piece(st.prev, t.ID)
	if t.Logprob != nil {
		if c.j.g.chat {
			e := chatTokenLogprob{Token: string(piece), Logprob: t.Logprob.Logprob, Bytes: byteInts(piece),
				TopLogprobs: []chatTopItem{}}
			for _, alt := range t.Logprob.Top {
				b := c.piece(st.prev, alt.ID)
				e.TopLogprobs = append(e.TopLogprobs, chatTopItem{Token: string(b), Logprob: alt.Logprob, Bytes: byteInts(b)})
			}
			st.chatLP = append(st.chatLP, e)
			chat = &chatLogprobs{Content: []chatTokenLogprob{e}}
		} else {
			text = c.textLogprob(st, piece, t)
		}
	}
	st.prev = t.ID
	st.offset += len(piece)
	return chat, text
}

// piece is how logprobs name token id after prev: its bytes, or
// "token_id:<id>" when the request asked for ids.
func (c *collector) piece(prev, id int) []byte {
	if c.j.g.tokenIDs {
		return []byte("token_id:" + itoa(id))
	}
	return c.s.b.TokenBytes(prev, id)
}

// textLogprob appends a token to the legacy completions form and returns
// the one-token form of a chunk.
func (c *collector) textLogprob(st *choiceState, piece []byte, t Token) *textLogprobs {
	top := map[string]float64{string(piece): t.Logprob.Logprob}
	for _, alt := range t.Logprob.Top {
		top[string(c.piece(st.prev, alt.ID))] = alt.Logprob
	}
	lp := st.textLP
	lp.Tokens = append(lp.Tokens, string(piece))
	lp.TokenLogprobs = append(lp.TokenLogprobs, t.Logprob.Logprob)
	lp.TopLogprobs = append(lp.TopLogprobs, top)
	lp.TextOffset = append(lp.TextOffset, st.offset)
	return &textLogprobs{Tokens: []string{string(piece)}, TokenLogprobs: []float64{t.Logprob.Logprob},
		TopLogprobs: []map[string]float64{top}, TextOffset: []int{st.offset}}
}

// finish records choice i's end and its metrics.
func (c *collector) finish(i int, f Finish) {
	st := &c.choices[i]
	st.fin, st.done = f, true
	st.text.WriteString(f.FlushText)
	c.s.metrics.observe(c.j.start, st.first, f)
}

// reason is choice i's finish_reason.
func (c *collector) reason(i int) string {
	if r := c.choices[i].fin.Reason; r == "length" {
		return r
	}
	return "stop"
}

// usage sums the choices: each prompt's tokens count once.
func (c *collector) usage() *usage {
	u := &usage{}
	for i := range c.choices {
		u.add(c.choices[i].fin, i%c.j.g.n != 0)
	}
	return u
}

// failed returns the first choice error, if any.
func (c *collector) failed() error {
	for i := range c.choices {
		if c.choices[i].fin.Err != nil {
			return c.choices[i].fin.Err
		}
	}
	return nil
}

// logEntry fills the access log's counts.
func (c *collector) logEntry() {
	u := c.usage()
	e := c.entry
	e.mu.Lock()
	defer e.mu.Unlock()
	e.promptTokens, e.cached, e.generated = u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens
	if !c.first.IsZero() {
		e.ttft = c.first.Sub(c.j.start)
	}
	if len(c.choices) > 0 {
		e.finish = c.choices[0].fin.Reason
	}
}

// chatResponse is the whole chat.completion.
func (c *collector) chatResponse() chatCompletion {
	out := chatCompletion{ID: c.j.id, Object: "chat.completion", Created: c.j.created,
		Model: c.s.cfg.ModelName, Usage: c.usage()}
	for i := range c.choices {
		ch := chatChoice{Index: i, Message: chatMsg{Role: "assistant", Content: c.choices[i].text.String()},
			FinishReason: c.reason(i)}
		if c.j.g.logprobs >= 0 {
			ch.Logprobs = &chatLogprobs{Content: append([]chatTokenLogprob{}, c.choices[i].chatLP...)}
		}
		out.Choices = append(out.Choices, ch)
	}
	return out
}

// textResponse is the whole text_completion.
func (c *collector) textResponse() textCompletion {
	out := textCompletion{ID: c.j.id, Object: "text_completion", Created: c.j.created,
		Model: c.s.cfg.ModelName, Usage: c.usage()}
	for i := range c.choices {
		r := c.reason(i)
		out.Choices = append(out.Choices, textChoice{Index: i, Text: c.choices[i].text.String(),
			Logprobs: c.choices[i].textLP, FinishReason: &r})
	}
	return out
}
