package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// job is a validated, tokenized generation request.
type job struct {
	g       *genRequest
	id      string // chatcmpl-… or cmpl-…
	created int64
	prompts [][]int // one per prompt; a chat has one
	max     []int   // generated-token cap per prompt
	start   time.Time
}

// choiceCount is the number of sequences: n per prompt.
func (j *job) choiceCount() int { return len(j.prompts) * j.g.n }

// generation returns the handler of a chat or completion route: decode,
// check, tokenize, submit, then answer whole or as a stream.
func (s *Server) generation(decode func([]byte) (*genRequest, *apiError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := s.enter(); e != nil {
			writeError(w, e)
			return
		}
		defer s.leave()
		body, e := s.readBody(w, r)
		var j *job
		if e == nil {
			var g *genRequest
			if g, e = decode(body); e == nil {
				j, e = s.prepare(g)
			}
		}
		if e != nil {
			writeError(w, e)
			return
		}
		entry := entryOf(r)
		entry.mu.Lock()
		entry.id = j.id
		entry.mu.Unlock()
		s.run(w, r, j)
	})
}

// prepare checks the model name, tokenizes the prompts and sets each
// prompt's token cap, refusing a prompt that leaves no room.
func (s *Server) prepare(g *genRequest) (*job, *apiError) {
	if e := s.checkModel(&g.model); e != nil {
		return nil, e
	}
	vocab := s.b.VocabSize()
	for _, id := range g.stopTokenIDs {
		if id >= vocab {
			return nil, badParam("stop_token_ids", "stop_token_ids: %d is outside the vocabulary of %d tokens", id, vocab)
		}
	}
	j := &job{g: g, created: time.Now().Unix(), start: time.Now()}
	j.id = newID(map[bool]string{true: "chatcmpl-", false: "cmpl-"}[g.chat])
	if g.chat {
		ids, err := s.b.TokenizeChat(g.messages)
		if err != nil {
			return nil, badParam("messages", "messages: %v", err)
		}
		j.prompts = [][]int{ids}
	}
	for i, p := range g.prompts {
		ids, e := s.promptIDs(i, p, vocab)
		if e != nil {
			return nil, e
		}
		j.prompts = append(j.prompts, ids)
	}
	for _, ids := range j.prompts {
		n, e := s.tokenCap(g, len(ids))
		if e != nil {
			return nil, e
		}
		j.max = append(j.max, n)
	}
	return j, nil
}

// promptIDs tokenizes prompt i, or checks its ids against the vocabulary.
func (s *Server) promptIDs(i int, p promptInput, vocab int) ([]int, *apiError) {
	if p.ids == nil {
		ids, err := s.b.Tokenize(p.text, true)
		if err != nil {
			return nil, badParam("prompt", "prompt %d: %v", i, err)
		}
		return ids, nil
	}
	for _, id := range p.ids {
		if id < 0 || id >= vocab {
			return nil, badParam("prompt", "prompt %d: token id %d is outside the vocabulary of %d tokens", i, id, vocab)
		}
	}
	return p.ids, nil
}

// tokenCap is the generated-token cap of a prompt of n tokens: the
// request's max_tokens, else the server's default, else the rest of the
// context (vLLM's rule). A request's explicit cap that does not fit is
// the 400 context_length_exceeded.
func (s *Server) tokenCap(g *genRequest, n int) (int, *apiError) {
	maxLen := s.b.MaxModelLen()
	room := maxLen - n
	want := g.maxTokens
	if want == 0 {
		want = room
		if s.cfg.MaxTokens > 0 {
			want = min(room, s.cfg.MaxTokens)
		}
		if want < 1 {
			return 0, contextExceeded(n, 1, maxLen)
		}
	}
	if want > room {
		e := contextExceeded(n, want, maxLen)
		if !g.chat {
			e.Param = "prompt"
		}
		return 0, e
	}
	return want, nil
}

// newID returns prefix + 32 random hex digits.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// run submits the job's sequences and answers.
func (s *Server) run(w http.ResponseWriter, r *http.Request, j *job) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()
	streams, err := s.admit(ctx, j)
	if err != nil {
		cancel()
		for _, st := range streams { // those submitted before the refusal
			for range st.Tokens() { // a token may be on its way: take it, or its sender never ends
			}
			st.Wait()
		}
		writeError(w, asAPIError(err))
		return
	}
	events := fanIn(streams)
	c := newCollector(s, j, entryOf(r))
	if j.g.stream {
		s.stream(ctx, cancel, w, c, events)
	} else {
		s.whole(ctx, r, w, c, events)
	}
}

// admit submits the job's sequences if the waiting queue has room for
// all of them, else answers a 503 (or a 400 for a job larger than the
// whole queue, which no retry would fit). The check and the submission
// hold s.admitMu, so concurrent requests cannot together push the engine's
// waiting count past MaxQueue: the engine counts a sequence as waiting
// from Submit on.
func (s *Server) admit(ctx context.Context, j *job) ([]Stream, error) {
	need := j.choiceCount()
	if need > s.cfg.MaxQueue {
		return nil, badParam("n", "the request asks for %d sequences (n × prompts), more than the server's queue of %d (--max-queue)", need, s.cfg.MaxQueue)
	}
	s.admitMu.Lock()
	defer s.admitMu.Unlock()
	if st := s.b.Stats(); st.Waiting+need > s.cfg.MaxQueue {
		return nil, overloaded("the server is at capacity: "+itoa(st.Waiting)+" sequences are waiting (--max-queue "+itoa(s.cfg.MaxQueue)+"); retry later", s.cfg.RetryAfter)
	}
	return s.submit(ctx, j)
}

// submit queues every choice of every prompt. Choice k of a prompt uses
// seed+k, so the n choices differ and each is what the same request with
// n = 1 and that seed would give.
func (s *Server) submit(ctx context.Context, j *job) ([]Stream, error) {
	var out []Stream
	g := j.g
	for p, ids := range j.prompts {
		for k := 0; k < g.n; k++ {
			smp := g.withDefaults(s.cfg.SamplingDefaults)
			smp.Seed += int64(k)
			st, err := s.b.Submit(ctx, Generation{Prompt: ids, MaxTokens: j.max[p], Sampling: smp,
				Stop: g.stop, StopTokenIDs: g.stopTokenIDs, IgnoreEOS: g.ignoreEOS, Logprobs: g.logprobs, Chat: g.chat})
			if err != nil {
				return out, badParam("prompt", "%v", err) // the engine refused the prompt
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// choiceEvent is a token or the end of one choice, tagged with its index.
type choiceEvent struct {
	choice int
	tok    Token
	done   bool
	fin    Finish
}

// fanIn merges the streams into one channel, closed after every stream's
// end; the reader must drain it to the end (it always does, so no
// goroutine outlives the request).
func fanIn(streams []Stream) <-chan choiceEvent {
	out := make(chan choiceEvent, 64)
	left := make(chan struct{}, len(streams))
	for i, st := range streams {
		go func() {
			for tok := range st.Tokens() {
				out <- choiceEvent{choice: i, tok: tok}
			}
			out <- choiceEvent{choice: i, done: true, fin: st.Wait()}
			left <- struct{}{}
		}()
	}
	go func() {
		for range streams {
			<-left
		}
		close(out)
	}()
	return out
}
