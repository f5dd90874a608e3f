package serve

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/tokenizer"
)

// EngineBackend is the Backend of Stride's online engine: requests go to
// engine.Submit, text comes from the engine's own detokenizer (stop
// strings held back there), and chats are rendered by model/chat.
type EngineBackend struct {
	e      *engine.Engine
	codec  tokenizer.Codec
	tmpl   *chat.Template
	stop   []int // the checkpoint's stop ids; nil = run.c's stop at BOS
	maxLen int
	vocab  int
	reqs   requestIDs // HTTP request ids of the running requests (debugkv.go)
}

// EngineConfig is what EngineBackend needs besides the engine.
type EngineConfig struct {
	// Tokenizer must be the engine's Options.Tokenizer.
	Tokenizer tokenizer.Codec
	// Template renders chats (chat.Fallback() for run.c's llama-2 format).
	Template *chat.Template
	// StopTokens are the checkpoint's stop ids (nil: run.c's rule).
	StopTokens []int
	// MaxModelLen is the context served (at most the model's seq_len).
	MaxModelLen int
}

// NewEngineBackend serves e. The engine's loop starts with the first
// request; the caller closes e after the server has drained.
func NewEngineBackend(e *engine.Engine, cfg EngineConfig) *EngineBackend {
	c := e.Model().Config
	maxLen := c.SeqLen
	if cfg.MaxModelLen > 0 {
		maxLen = min(maxLen, cfg.MaxModelLen)
	}
	return &EngineBackend{e: e, codec: cfg.Tokenizer, tmpl: cfg.Template, stop: cfg.StopTokens,
		maxLen: maxLen, vocab: c.VocabSize}
}

// MaxModelLen implements Backend.
func (b *EngineBackend) MaxModelLen() int { return b.maxLen }

// VocabSize implements Backend.
func (b *EngineBackend) VocabSize() int { return b.vocab }

// Tokenize implements Backend: BOS when asked and the tokenizer adds one.
func (b *EngineBackend) Tokenize(text string, addSpecial bool) ([]int, error) {
	return b.codec.Encode(text, addSpecial && b.codec.AddBOS(), false)
}

// TokenizeChat implements Backend: the messages as the conversation
// infer chat would have fed (chat.Resume): a Jinja template through
// chat.Encode (only its markup becomes control tokens), run.c's llama-2
// format turn by turn as run.c feeds it (each user turn with BOS, each
// earlier reply closed by the tokenizer's EOS). BOS comes only when the
// tokenizer adds one, as infer chat puts it: a vocabulary without BOS
// gets none.
func (b *EngineBackend) TokenizeChat(msgs []Message) ([]int, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	c, err := chat.Resume(context.Background(), b.tmpl, b.codec, b.codec.AddBOS() && b.codec.BOS() >= 0, cm)
	if err != nil {
		return nil, err
	}
	return c.IDs(), nil
}

// Detokenize implements Backend: the text of ids, as the engine's
// detokenizer writes it (a piece after BOS drops its leading space). BOS
// itself gives no text (llama2.c's piece for it is "\n<s>\n"), so
// Detokenize inverts Tokenize with add_special_tokens.
func (b *EngineBackend) Detokenize(ids []int) (string, error) {
	var out []byte
	prev, bos := -1, b.codec.BOS()
	for _, id := range ids {
		if id != bos {
			out = append(out, b.codec.Decode(prev, id)...)
		}
		prev = id
	}
	return string(out), nil
}

// TokenBytes implements Backend.
func (b *EngineBackend) TokenBytes(prev, id int) []byte { return []byte(b.codec.Decode(prev, id)) }

// Stats implements Backend. Running and Waiting are the engine's own
// counts: a sequence waits from Submit until the engine admits it.
func (b *EngineBackend) Stats() Stats {
	ls := b.e.Stats()
	return Stats{Running: ls.Running, Waiting: ls.Waiting,
		BlocksTotal: ls.KV.NumBlocks, BlocksFree: ls.KV.FreeBlocks, BlocksShared: ls.KV.SharedBlocks,
		PrefixQueries: ls.KV.PromptTokens, PrefixHits: ls.KV.PrefixHitTokens, Preemptions: int64(ls.Preemptions),
		DraftTokens: int64(ls.DraftTokens), AcceptedTokens: int64(ls.AcceptedTokens),
		CoWCopies: ls.KV.CopyOnWriteBlocks, CoWBytes: ls.KV.CopyOnWriteBytes, AttentionPath: b.e.PathName(),
		Steps: int64(ls.Steps), BytesCopied: ls.Ledger.BytesCopied, CopyOps: ls.Ledger.CopyOps}
}

// Submit implements Backend.
func (b *EngineBackend) Submit(ctx context.Context, g Generation) (Stream, error) {
	r := engine.Request{Prompt: g.Prompt, Steps: len(g.Prompt) - 1 + g.MaxTokens,
		Sampler: b.sampler(g), StopTokens: b.stop, Stop: g.Stop, IgnoreEOS: g.IgnoreEOS,
		Logprobs: g.Logprobs >= 0, TopLogprobs: max(g.Logprobs, 0)}
	if len(g.StopTokenIDs) > 0 {
		base := b.stop
		if base == nil {
			base = []int{model.BOSID}
		}
		if g.IgnoreEOS {
			// ignore_eos drops the model's EOS ids only: the request's
			// own stop_token_ids still end it, as in vLLM.
			base, r.IgnoreEOS = nil, false
		}
		r.StopTokens = append(append([]int(nil), base...), g.StopTokenIDs...)
	}
	if g.Chat && b.tmpl != nil {
		r.Stop = append(append([]string(nil), g.Stop...), b.tmpl.Stops()...)
	}
	st, err := b.e.Submit(ctx, r)
	if err != nil {
		return nil, err
	}
	b.reqs.track(ctx, st)
	s := &engineStream{tokens: make(chan Token), done: make(chan struct{})}
	go s.forward(st, len(g.Prompt), time.Now())
	return s, nil
}

// sampler is run.c's sampler with vLLM's filters; the prompt seeds the
// repetition penalty's history. A request's seed is run.c's rng seed
// (0, a fixed point of xorshift, becomes 1); without one the seed is
// random.
func (b *EngineBackend) sampler(g Generation) *model.Sampler {
	s := g.Sampling
	seed := uint64(s.Seed)
	if !s.Seeded {
		var buf [8]byte
		rand.Read(buf[:])
		seed = binary.LittleEndian.Uint64(buf[:])
	}
	if seed == 0 {
		seed = 1
	}
	smp := model.NewSampler(b.vocab, float32(s.Temperature), float32(s.TopP), seed)
	smp.SetFilters(model.Filters{TopK: s.TopK, MinP: float32(s.MinP),
		RepeatPenalty: float32(s.RepetitionPenalty), RepeatLastN: -1})
	smp.Accept(g.Prompt...)
	return smp
}

// engineStream turns an engine.Stream into a Stream.
type engineStream struct {
	tokens chan Token
	done   chan struct{}
	fin    Finish
}

func (s *engineStream) Tokens() <-chan Token { return s.tokens }
func (s *engineStream) Wait() Finish         { <-s.done; return s.fin }

// forward relays the generated tokens, times the queueing up to the
// first event (the engine streams the prompt's tokens on admission), and
// converts the result.
func (s *engineStream) forward(st *engine.Stream, promptLen int, submitted time.Time) {
	defer close(s.done)
	var once sync.Once
	admit := func() {
		once.Do(func() { s.fin.Queued = time.Since(submitted) })
	}
	gen := 0
	for ev := range st.Events() {
		admit()
		if ev.Prompt {
			continue
		}
		gen++
		t := Token{ID: ev.Token, Text: ev.Text}
		if lp := ev.Logprob; lp != nil {
			t.Logprob = &TokenLogprob{Logprob: float64(lp.Logprob)}
			for _, alt := range lp.Top {
				t.Logprob.Top = append(t.Logprob.Top, TopLogprob{ID: alt.Token, Logprob: float64(alt.Logprob)})
			}
		}
		s.tokens <- t
	}
	admit()
	close(s.tokens)
	r := st.Result()
	s.fin = Finish{Reason: finishReason(r.FinishReason), FlushText: r.FlushText, PromptTokens: promptLen,
		CachedTokens: r.CachedTokens, GeneratedTokens: gen, Queued: s.fin.Queued}
	if r.FinishReason == engine.FinishError {
		s.fin.Err = r.Err
	}
}

// finishReason maps the engine's reasons to OpenAI's.
func finishReason(r engine.FinishReason) string {
	switch r {
	case engine.FinishLength:
		return "length"
	case engine.FinishEOS, engine.FinishStop:
		return "stop"
	}
	return "cancelled"
}
