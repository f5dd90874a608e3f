package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeBackend is a Backend whose "model" is a byte codec: token b < 256
// is byte b, fakeBOS and fakeEOS are control tokens. Generation is a
// deterministic function of the prompt, the seed and the position, so a
// request's output is known whatever else runs. It holds text back
// across token boundaries for stop strings as the engine does.
type fakeBackend struct {
	maxLen   int
	slots    chan struct{} // running capacity
	delay    time.Duration // per token
	running  atomic.Int64
	waiting  atomic.Int64
	blocks   atomic.Int64 // "KV blocks" in use: one per running sequence
	mu       sync.Mutex
	gate     chan struct{} // when not nil, sequences wait for it before generating
	noFaults bool          // "PANIC" and "FAIL" are text (the handler fuzzer's fake)
}

const (
	fakeBOS   = 256
	fakeEOS   = 257
	fakeVocab = 260
	fakeTotal = 64 // blocks in the fake pool
)

func newFake(slots int) *fakeBackend {
	return &fakeBackend{maxLen: 128, slots: make(chan struct{}, slots)}
}

func (f *fakeBackend) MaxModelLen() int { return f.maxLen }
func (f *fakeBackend) VocabSize() int   { return fakeVocab }

func (f *fakeBackend) Tokenize(text string, addSpecial bool) ([]int, error) {
	if strings.Contains(text, "PANIC") && !f.noFaults {
		panic("fake: asked to panic")
	}
	var ids []int
	if addSpecial {
		ids = append(ids, fakeBOS)
	}
	for _, b := range []byte(text) {
		ids = append(ids, int(b))
	}
	return ids, nil
}

func (f *fakeBackend) TokenizeChat(msgs []Message) ([]int, error) {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<%s>%s\n", m.Role, m.Content)
	}
	b.WriteString("<assistant>")
	return f.Tokenize(b.String(), true)
}

func (f *fakeBackend) Detokenize(ids []int) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		b.Write(f.TokenBytes(0, id))
	}
	return b.String(), nil
}

func (f *fakeBackend) TokenBytes(prev, id int) []byte {
	switch {
	case id < 256:
		return []byte{byte(id)}
	case id == fakeBOS:
		return []byte("<s>")
	case id == fakeEOS:
		return []byte("</s>")
	}
	return []byte(fmt.Sprintf("<%d>", id))
}

// TokenBytesAll is the bytes of ids.
func (f *fakeBackend) TokenBytesAll(ids []int) []byte {
	var b []byte
	for _, id := range ids {
		b = append(b, f.TokenBytes(0, id)...)
	}
	return b
}

func (f *fakeBackend) Stats() Stats {
	used := int(f.blocks.Load())
	return Stats{Running: int(f.running.Load()), Waiting: int(f.waiting.Load()),
		BlocksTotal: fakeTotal, BlocksFree: fakeTotal - used, AttentionPath: "fake"}
}

// next is the fake model: a letter picked from the prompt, seed and step;
// greedy ignores the seed. A prompt ending in "!" ends at step 5 (EOS).
func next(prompt []int, s Sampling, step int) int {
	if prompt[len(prompt)-1] == '!' && step == 5 {
		return fakeEOS
	}
	h := uint64(len(prompt))
	for _, id := range prompt {
		h = h*31 + uint64(id)
	}
	if s.Temperature > 0 {
		h += uint64(s.Seed) * 7919
	}
	return 'a' + int((h+uint64(step)*7)%26)
}

func (f *fakeBackend) Submit(ctx context.Context, g Generation) (Stream, error) {
	if len(g.Prompt)+g.MaxTokens > f.maxLen {
		return nil, errors.New("fake: too long")
	}
	st := &fakeStream{tokens: make(chan Token), done: make(chan struct{})}
	f.waiting.Add(1)
	go f.generate(ctx, g, st)
	return st, nil
}

// generate runs one sequence: wait for a slot, then one token per delay.
func (f *fakeBackend) generate(ctx context.Context, g Generation, st *fakeStream) {
	defer close(st.done)
	defer close(st.tokens)
	queued := time.Now()
	st.fin = Finish{PromptTokens: len(g.Prompt), Reason: "cancelled"}
	select {
	case f.slots <- struct{}{}:
		f.waiting.Add(-1)
	case <-ctx.Done():
		f.waiting.Add(-1)
		return
	}
	st.fin.Queued = time.Since(queued)
	f.running.Add(1)
	f.blocks.Add(1)
	defer func() { f.blocks.Add(-1); f.running.Add(-1); <-f.slots }()
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return
		}
	}
	var text strings.Builder // generated text not yet released
	for step := 0; step < g.MaxTokens; step++ {
		if f.delay > 0 {
			time.Sleep(f.delay)
		}
		if ctx.Err() != nil {
			return
		}
		if step == 2 && !f.noFaults && strings.Contains(string(f.TokenBytesAll(g.Prompt)), "FAIL") {
			st.fin.Err = errors.New("fake: the engine failed")
			return
		}
		id := next(g.Prompt, g.Sampling, step)
		if id == fakeEOS && !g.IgnoreEOS {
			st.fin.Reason, st.fin.FlushText = "stop", text.String()
			return
		}
		st.fin.GeneratedTokens++
		text.Write(f.TokenBytes(0, id))
		tok := Token{ID: id}
		if g.Logprobs >= 0 {
			tok.Logprob = &TokenLogprob{Logprob: -0.25 * float64(step%4)}
			for k := 0; k < g.Logprobs; k++ {
				tok.Logprob.Top = append(tok.Logprob.Top, TopLogprob{ID: 'a' + k, Logprob: -float64(k + 1)})
			}
		}
		held, stopped := release(&text, g.Stop)
		tok.Text = held
		select {
		case st.tokens <- tok:
		case <-ctx.Done():
			return
		}
		if stopped {
			st.fin.Reason = "stop"
			return
		}
	}
	st.fin.Reason, st.fin.FlushText = "length", text.String()
}

// release takes from buf the text that can no longer start a stop string,
// or, on a match, the text before it (and reports the stop).
func release(buf *strings.Builder, stops []string) (string, bool) {
	s := buf.String()
	for _, stop := range stops {
		if i := strings.Index(s, stop); i >= 0 {
			buf.Reset()
			return s[:i], true
		}
	}
	keep := 0
	for _, stop := range stops {
		for n := min(len(stop)-1, len(s)); n > keep; n-- {
			if strings.HasSuffix(s, stop[:n]) {
				keep = n
				break
			}
		}
	}
	buf.Reset()
	buf.WriteString(s[len(s)-keep:])
	return s[:len(s)-keep], false
}

type fakeStream struct {
	tokens chan Token
	done   chan struct{}
	fin    Finish
}

func (s *fakeStream) Tokens() <-chan Token { return s.tokens }
func (s *fakeStream) Wait() Finish         { <-s.done; return s.fin }
