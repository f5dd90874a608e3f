package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// whole collects every choice and answers with one JSON object.
func (s *Server) whole(ctx context.Context, r *http.Request, w http.ResponseWriter, c *collector, events <-chan choiceEvent) {
	for ev := range events {
		if ev.done {
			c.finish(ev.choice, ev.fin)
		} else {
			c.token(ev.choice, ev.tok)
		}
	}
	c.logEntry()
	if r.Context().Err() != nil {
		return // the client went away: nobody to answer
	}
	if e := s.cutShort(ctx, c); e != nil {
		writeError(w, e)
		return
	}
	// The whole answer may be megabytes: a client that does not read it
	// within the write timeout is dropped rather than holding the handler.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if c.j.g.chat {
		writeJSON(w, http.StatusOK, c.chatResponse())
	} else {
		writeJSON(w, http.StatusOK, c.textResponse())
	}
}

// cutShort says why a job did not complete: the request timeout, a drain
// that ran out of time, or an engine error (a 500, logged). nil when
// every choice finished.
func (s *Server) cutShort(ctx context.Context, c *collector) *apiError {
	if err := c.failed(); err != nil {
		s.cfg.Logger.Error("generation failed", "id", c.j.id, "err", err)
		return internalError()
	}
	switch {
	case s.stop.Err() != nil:
		return overloaded("the server shut down before the request finished", s.cfg.RetryAfter)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return overloaded("the request did not finish within the server's request timeout", s.cfg.RetryAfter)
	}
	return nil
}

// sseWriter writes server-sent events, each flushed at once under a
// per-write deadline. After the first failed write it writes nothing.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	err     error
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// event writes `data: <json>\n\n`.
func (sw *sseWriter) event(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = errorBody(internalError())
	}
	sw.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// done ends the stream as OpenAI does.
func (sw *sseWriter) done() { sw.write([]byte("data: [DONE]\n\n")) }

func (sw *sseWriter) write(b []byte) {
	if sw.err != nil {
		return
	}
	// A write deadline per event: a client that stops reading cannot
	// hold its sequence forever. (Not every ResponseWriter supports it.)
	if err := sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		sw.err = err
		return
	}
	if _, sw.err = sw.w.Write(b); sw.err == nil {
		sw.err = sw.rc.Flush()
	}
}

// stream answers as server-sent events: a chunk per token (or per
// released text), each choice's last chunk with its finish_reason, the
// usage chunk when asked for, and [DONE]. An error after the start is an
// error event before [DONE].
func (s *Server) stream(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, c *collector, events <-chan choiceEvent) {
	sw := newSSEWriter(w, s.cfg.WriteTimeout)
	ch := chunker{c: c}
	if c.j.g.chat {
		for i := range c.choices { // the role goes first, as OpenAI sends it
			sw.event(ch.chat(i, chatDelta{Role: "assistant"}, nil, nil))
		}
	}
	for ev := range events {
		if sw.err != nil {
			cancel() // the client is gone: free its sequences
		}
		var chunk any
		if ev.done {
			c.finish(ev.choice, ev.fin)
			if ev.fin.Err == nil && ctx.Err() == nil {
				chunk = ch.last(ev.choice, ev.fin.FlushText)
			}
		} else {
			chatLP, textLP := c.token(ev.choice, ev.tok)
			if ev.tok.Text != "" || chatLP != nil || textLP != nil {
				chunk = ch.delta(ev.choice, ev.tok.Text, chatLP, textLP)
			}
		}
		if chunk != nil {
			sw.event(chunk)
		}
	}
	c.logEntry()
	if e := s.cutShort(ctx, c); e != nil {
		sw.event(struct {
			Error *apiError `json:"error"`
		}{e})
	} else if c.j.g.includeUsage {
		sw.event(ch.usage())
	}
	sw.done()
}

// chunker builds a job's chunks: the same id, created and model on each.
type chunker struct{ c *collector }

func (k chunker) chat(i int, d chatDelta, lp *chatLogprobs, finish *string) chatChunk {
	j := k.c.j
	return chatChunk{ID: j.id, Object: "chat.completion.chunk", Created: j.created, Model: k.c.s.cfg.ModelName,
		Choices: []chatChunkChoice{{Index: i, Delta: d, Logprobs: lp, FinishReason: finish}},
		Usage:   usageField(j.g.includeUsage, nil)}
}

func (k chunker) text(i int, text string, lp *textLogprobs, finish *string) textCompletion {
	j := k.c.j
	return textCompletion{ID: j.id, Object: "text_completion", Created: j.created, Model: k.c.s.cfg.ModelName,
		Choices: []textChoice{{Index: i, Text: text, Logprobs: lp, FinishReason: finish}},
		Usage:   usageField(j.g.includeUsage, nil)}
}

func (k chunker) delta(i int, text string, chatLP *chatLogprobs, textLP *textLogprobs) any {
	if k.c.j.g.chat {
		return k.chat(i, chatDelta{Content: text}, chatLP, nil)
	}
	return k.text(i, text, textLP, nil)
}

// last is choice i's final chunk: the text the end released, and why.
func (k chunker) last(i int, flush string) any {
	r := k.c.reason(i)
	if k.c.j.g.chat {
		return k.chat(i, chatDelta{Content: flush}, nil, &r)
	}
	return k.text(i, flush, nil, &r)
}

// usage is the include_usage chunk: no choices, the whole usage.
func (k chunker) usage() any {
	j := k.c.j
	u := k.c.usage()
	if j.g.chat {
		return chatChunk{ID: j.id, Object: "chat.completion.chunk", Created: j.created, Model: k.c.s.cfg.ModelName,
			Choices: []chatChunkChoice{}, Usage: u}
	}
	return textCompletion{ID: j.id, Object: "text_completion", Created: j.created, Model: k.c.s.cfg.ModelName,
		Choices: []textChoice{}, Usage: u}
}
